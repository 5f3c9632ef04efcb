"""The loopback chat-completions server as a fixture for these tests (others import it the same way),
and an OpenAI-compatible backend pointed at it that sleeps no backoff, only records it."""
import pytest

from agents.backends.openai import OpenAICompatibleBackend
from tests.agents.backends.chat_server import chat_server  # noqa: F401


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def make(chat_server, sleeps):  # noqa: F811 - the fixture above
    def make(**options) -> OpenAICompatibleBackend:
        values = dict(base_url=chat_server.base_url, api_key_env="SWITCHYARD_TEST_KEY", model="test-model",
                      timeout_seconds=5, max_retries=3, sleep=sleeps.append)
        values.update(options)
        return OpenAICompatibleBackend("openai", **values)
    return make
