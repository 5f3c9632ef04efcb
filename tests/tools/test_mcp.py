"""tools/mcp.py against a real MCP server (tests/tools/mcp_server.py): listing and calling over
stdio and streamable HTTP, each failure's code, the time limit, and what a server may see."""
import sys
import time

import pytest
from mcp_types import ImageContent, TextContent

from tests.tools.conftest import HEADER, TOKEN, TOKEN_VARIABLE, alive, in_cancellable_thread, stdio_options
from tools import mcp
from tools.errors import TOOL_ERROR, TOOL_TIMEOUT, TOOL_UNAVAILABLE, ToolError


def failure(call) -> ToolError:
    with pytest.raises(ToolError) as caught:
        call()
    return caught.value


def test_it_lists_and_calls_over_stdio_passing_only_the_allowed_variables(monkeypatch):
    monkeypatch.setenv("ALLOWED_SETTING", "visible")
    monkeypatch.setenv("OTHER_SECRET", "hidden")
    options = stdio_options(env=["ALLOWED_SETTING", "UNSET_SETTING"])
    listed = {tool["name"]: tool for tool in mcp.list_tools("t", options)}
    assert {"echo", "add", "slow", "fail", "big", "env_has"} <= set(listed)
    assert listed["add"]["description"] == "Add two integers."
    assert listed["add"]["input_schema"]["required"] == ["a"]
    seen = mcp.call_tool("t", options, "env_has", {"names": ["ALLOWED_SETTING", "OTHER_SECRET", "UNSET_SETTING",
                                                            "PATH", "LANG"]}, timeout=30)
    assert seen == {"ALLOWED_SETTING": True, "OTHER_SECRET": False, "UNSET_SETTING": False, "PATH": True, "LANG": True}


def test_it_lists_and_calls_over_http(http_server):
    names = [tool["name"] for tool in mcp.list_tools("t", http_server)]
    assert names[:3] == ["echo", "add", "slow"]
    assert mcp.call_tool("t", http_server, "add", {"a": 2, "b": 40}, timeout=10) == {"sum": 42}  # structured
    assert mcp.call_tool("t", http_server, "echo", {"text": "héllo"}, timeout=10) == {"result": "héllo"}
    assert mcp.call_tool("t", http_server, "parts", {}, timeout=10) == [
        "one", "two", {"type": "image", "mime_type": "image/png", "bytes": 3, "note": "an image, not passed on"}]


def test_a_result_of_one_text_part_is_its_string():
    assert mcp.as_json([TextContent(type="text", text="only")]) == "only"
    assert mcp.as_json([]) == []
    assert mcp.as_json([ImageContent(type="image", data="AAAAAAAA", mime_type="image/gif")])[0]["bytes"] == 6


def test_an_error_result_or_a_protocol_error_is_a_tool_error_with_the_servers_text(http_server):
    error = failure(lambda: mcp.call_tool("t", http_server, "fail", {"reason": "disk full"}, timeout=10))
    assert error.code == TOOL_ERROR and str(error) == "t.fail answered an error: Error executing tool fail: disk full"
    error = failure(lambda: mcp.call_tool("t", http_server, "refuse", {}, timeout=10))
    assert error.code == TOOL_ERROR
    assert str(error) == "t.refuse: the server answered a protocol error -32602: refused by the test server"


def test_an_allowed_tool_the_server_does_not_offer_is_unavailable(http_server):
    options = {**http_server, "allow": ["echo", "absent"]}
    error = failure(lambda: mcp.call_tool("t", options, "absent", {}, timeout=10))
    assert error.code == TOOL_UNAVAILABLE and str(error) == "t.absent is unavailable: t does not offer a tool named 'absent'"


def test_a_tool_outside_the_allow_list_is_unavailable_without_a_call(http_server):
    options = {**http_server, "url": "http://127.0.0.1:1/mcp", "allow": ["echo"]}  # nothing listens there
    error = failure(lambda: mcp.call_tool("t", options, "pid", {}, timeout=10))
    assert error.code == TOOL_UNAVAILABLE and "t.pid is not in the allow list" in str(error)


@pytest.mark.parametrize("argv, cwd, problem", [
    (["/nonexistent/mcp-server"], None, "t.echo is unavailable: cannot start /nonexistent/mcp-server: No such file"),
    ([sys.executable, "-c", "pass"], None, "t.echo is unavailable: the MCP handshake failed: Connection closed"),
    ([sys.executable, "-c", "pass"], "/nonexistent/dir", "t.echo is unavailable: its directory /nonexistent/dir does"),
])
def test_a_server_that_cannot_start_is_unavailable(argv, cwd, problem):
    error = failure(lambda: mcp.call_tool("t", stdio_options(argv=argv, cwd=cwd), "echo", {"text": "x"}, timeout=10))
    assert error.code == TOOL_UNAVAILABLE and problem in str(error)


def test_an_http_server_that_refuses_or_is_not_there_is_unavailable_and_no_secret_is_named(http_server, monkeypatch):
    monkeypatch.setenv(TOKEN_VARIABLE, "Bearer wrong-SECRET-99")
    error = failure(lambda: mcp.call_tool("t", http_server, "echo", {"text": "x"}, timeout=10))
    assert error.code == TOOL_UNAVAILABLE and str(error) == f"t.echo: {http_server['url']} answered HTTP 401"
    monkeypatch.delenv(TOKEN_VARIABLE)
    error = failure(lambda: mcp.list_tools("t", http_server))
    assert error.code == TOOL_UNAVAILABLE and str(error) == (
        f"t (listing its tools): the environment variable {TOKEN_VARIABLE}, which the header {HEADER} is read "
        "from, is not set")
    error = failure(lambda: mcp.call_tool("t", {**http_server, "headers": {}, "url": "http://127.0.0.1:1/mcp"},
                                          "echo", {"text": "x"}, timeout=10))
    assert error.code == TOOL_UNAVAILABLE and "cannot reach http://127.0.0.1:1/mcp (ConnectError)" in str(error)
    for secret in ("SECRET", TOKEN):
        assert secret not in str(error)


def test_an_http_call_past_its_time_limit_times_out_in_time(http_server):
    started = time.monotonic()
    error = failure(lambda: mcp.call_tool("t", http_server, "slow", {"seconds": 5}, timeout=0.5))
    assert error.code == TOOL_TIMEOUT and str(error) == "t.slow did not answer within 0.5 s"
    assert time.monotonic() - started < 1.5


def test_a_hung_stdio_server_is_answered_in_time_and_killed(tmp_path):
    pid_file = tmp_path / "pid"
    started = time.monotonic()
    error = failure(lambda: mcp.call_tool("t", stdio_options(), "slow", {"seconds": 60, "pid_file": str(pid_file)},
                                          timeout=4))
    assert error.code == TOOL_TIMEOUT and time.monotonic() - started < 4 + 0.5
    pid = int(pid_file.read_text())  # the server started and was in the call when the time ran out
    deadline = time.monotonic() + 8  # its stdin closed, then SIGTERM 2 s later: it ignores the first
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid)


def test_a_cancelled_node_abandons_its_call_and_the_stdio_server_is_stopped(tmp_path):
    from core.cancellation import Cancelled

    pid_file = tmp_path / "pid"
    cancellation, outcome, done = in_cancellable_thread(
        lambda: mcp.call_tool("t", stdio_options(), "slow", {"seconds": 60, "pid_file": str(pid_file)}, timeout=60))
    deadline = time.monotonic() + 20
    while not (pid_file.exists() and pid_file.read_text()):  # the server is in the call
        assert time.monotonic() < deadline, "the call did not begin"
        time.sleep(0.05)
    pid = int(pid_file.read_text())
    cancellation.cancel("cancelled by ada")
    assert done.wait(10), "the call was not abandoned"
    assert isinstance(outcome["error"], Cancelled) and str(outcome["error"]) == "cancelled by ada"
    deadline = time.monotonic() + 8  # its stdin closed, then SIGTERM 2 s later: it ignores the first
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid)
