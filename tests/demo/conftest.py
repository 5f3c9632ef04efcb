"""The demo's own commands start real Celery workers on the test database."""
from tests.executions.conftest import workers  # noqa: F401 - the fixture, for pytest to find here
