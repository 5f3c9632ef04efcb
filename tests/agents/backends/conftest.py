"""The loopback chat-completions server as a fixture for these tests (others import it the same way)."""
from tests.agents.backends.chat_server import chat_server  # noqa: F401
