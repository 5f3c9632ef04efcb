"""The catalogue over a real MCP server: calls checked and capped as builtin ones are, the
`tools` and `call_tool` commands, and `GET /api/tools` for authors."""
import io
import json

import pytest
from django.core.management import CommandError, call_command

from tools import catalogue
from tools.errors import TOOL_ARGUMENTS_INVALID, TOOL_RESULT_TOO_LARGE


@pytest.fixture
def servers(settings, http_server):
    """The HTTP test server as `t` (its big tool capped at 300 bytes), and `down`, which is not there."""
    settings.TOOL_SERVERS = {"t": {**http_server, "max_result_bytes": 300, "allow": [*http_server["allow"], "absent"]},
                             "down": {**http_server, "url": "http://127.0.0.1:1/mcp", "allow": ["echo"]}}
    catalogue.clear_listings()
    yield settings.TOOL_SERVERS
    catalogue.clear_listings()


def tool(name: str) -> catalogue.Tool:
    found, missing = catalogue.resolve([name])
    assert not missing
    return found[0]


def test_a_call_is_checked_against_the_servers_schema_and_capped(servers):
    assert tool("t.add").input_schema["required"] == ["a"]  # the server's own schema
    refused = catalogue.call(tool("t.add"), {"a": "two"})
    assert refused.status == TOOL_ARGUMENTS_INVALID and "arguments.a" in refused.error
    assert catalogue.call(tool("t.add"), {"a": 2}).result == {"sum": 2}
    assert catalogue.call(tool("t.big"), {"n": 200}).ok
    too_large = catalogue.call(tool("t.big"), {"n": 400})
    assert too_large.status == TOOL_RESULT_TOO_LARGE and "over its cap of 300" in too_large.error


def test_the_tools_command_lists_every_tool_saying_which_cannot_be_reached(servers):
    out = io.StringIO()
    call_command("tools", stdout=out)
    entries = {entry["name"]: entry for entry in json.loads(out.getvalue())}
    assert entries["t.echo"]["reachable"] and entries["t.echo"]["description"] == "Answer the text given."
    assert entries["t.add"]["input_schema"]["properties"]["b"]["type"] == "integer"
    assert "builtin.read_file" in entries
    assert not entries["t.absent"]["reachable"] and entries["t.absent"]["problem"] == "t does not offer a tool named 'absent'"
    down = entries["down.echo"]
    assert not down["reachable"] and "cannot reach http://127.0.0.1:1/mcp" in down["problem"]


def test_the_call_tool_command_calls_once_and_fails_with_the_code(servers):
    out = io.StringIO()
    call_command("call_tool", "t", "add", "--arguments", '{"a": 2, "b": 3}', stdout=out)
    printed = json.loads(out.getvalue())
    assert printed["status"] == "success" and printed["result"] == {"sum": 5} and printed["duration_ms"] > 0
    with pytest.raises(CommandError, match=r"^t.fail failed after \d+ ms: TOOL_ERROR: t.fail answered an error: "):
        call_command("call_tool", "t", "fail", stdout=io.StringIO())
    with pytest.raises(CommandError, match="TOOL_ARGUMENTS_INVALID: the arguments of t.add break its input schema"):
        call_command("call_tool", "t", "add", "--arguments", "{}", stdout=io.StringIO())
    with pytest.raises(CommandError, match="no tool named t.nope in the catalogue"):
        call_command("call_tool", "t", "nope", stdout=io.StringIO())
    with pytest.raises(CommandError, match="--arguments: "):
        call_command("call_tool", "t", "add", "--arguments", "{a: 1}", stdout=io.StringIO())


def test_authors_see_the_catalogue_and_viewers_do_not(api, servers):
    assert api.viewer.get("/api/tools").status_code == 403
    assert api.approver.get("/api/tools").json()["code"] == "FORBIDDEN"
    assert api.admin.get("/api/tools").status_code == 200
    response = api.author.get("/api/tools", fresh="true")
    assert response.status_code == 200
    entries = {entry["name"]: entry for entry in response.json()}
    assert entries["t.add"]["reachable"] and entries["t.add"]["server"] == "t" and entries["t.add"]["tool"] == "add"
    assert not entries["down.echo"]["reachable"] and entries["down.echo"]["problem"]
