"""The typed failures of a tool call. A failed call is returned to the model as an error
result and recorded with its code; a node fails only when its loop cannot finish."""
from __future__ import annotations

from engine.errors import EngineError

TOOL_UNAVAILABLE = "TOOL_UNAVAILABLE"  # the server is down, or the tool is not in the catalogue
TOOL_ARGUMENTS_INVALID = "TOOL_ARGUMENTS_INVALID"  # the arguments break the tool's input schema
TOOL_TIMEOUT = "TOOL_TIMEOUT"  # no answer within the server's per-call time limit
TOOL_ERROR = "TOOL_ERROR"  # the tool answered with an error of its own
TOOL_RESULT_TOO_LARGE = "TOOL_RESULT_TOO_LARGE"  # the result is over the server's size cap
TOOL_LOOP_LIMIT = "TOOL_LOOP_LIMIT"  # the model still asked for calls after max_tool_calls
TOOL_CALL_REJECTED = "TOOL_CALL_REJECTED"  # a person rejected a call that needed approval
CODES = (TOOL_UNAVAILABLE, TOOL_ARGUMENTS_INVALID, TOOL_TIMEOUT, TOOL_ERROR, TOOL_RESULT_TOO_LARGE)


class ToolError(EngineError):
    """A tool call that failed; `code` is one of CODES. Its message never holds a secret
    (a header's value, an environment variable's value): it is recorded and shown."""

    code = TOOL_ERROR
