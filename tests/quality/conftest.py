"""The quality app scores runs: its tests run them with the executions tests' fixtures."""
from tests.executions.conftest import chat_server, demo, in_process, workers  # noqa: F401 - fixtures
