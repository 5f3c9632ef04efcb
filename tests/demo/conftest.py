"""The demo's own commands start real Celery workers on the test database; its workflows
also run in this process."""
from tests.executions.conftest import in_process, workers  # noqa: F401 - the fixtures, for pytest to find here
