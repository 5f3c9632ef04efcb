"""The tool catalogue: every tool an agent may name in `capabilities.tools`, and the one way
a tool is called.

A tool is named `server.tool`. Two kinds of server hold tools:

- `builtin`: the tools shipped with the product, registered by the app that owns what they
  read (`register`): `builtin.read_file` here (tools/workspace_tools.py), `knowledge_search`
  and `db_query` by the knowledge app;
- the MCP servers operators configure in SWITCHYARD_BACKENDS_FILE (`[tools.NAME]`,
  tools/config.py), each exposing only the tool names its `allow` list gives. Their
  descriptions and argument schemas come from the server (tools/mcp.py), listed when first
  needed and kept for LISTING_SECONDS.

An agent may also name `server.*`: every tool of that server. Which names exist is known
without contacting any server (the allowlists say), so saving an agent never waits on one.

`call` validates the arguments against the tool's input schema, calls it within its
server's time limit, caps the result's size and answers an `Outcome`: a failed call is a
typed outcome (errors.py), never an exception, so that it can be returned to the model.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from pydantic import BaseModel

from core.jsonutil import iso
from engine.json_schema import document_schema, field_problems, schema_refusal
from tools import errors
from tools.call_groups import CallGroup
from tools.errors import ToolError

BUILTIN = "builtin"
LISTING_SECONDS = 60.0  # how long a server's listing is kept before it is asked again
DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_RESULT_BYTES = 100_000


@dataclass(frozen=True)
class Tool:
    server: str
    tool: str  # its name on its server
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    function: Callable[[dict[str, Any]], Any] | None = field(default=None, compare=False, repr=False)
    reachable: bool = True  # False: its server could not be listed; calling it is TOOL_UNAVAILABLE
    problem: str = ""  # why it is not reachable

    @property
    def name(self) -> str:
        return f"{self.server}.{self.tool}"

    def as_dict(self) -> dict[str, Any]:
        entry = {"name": self.name, "server": self.server, "tool": self.tool, "description": self.description,
                 "input_schema": self.input_schema, "reachable": self.reachable}
        if self.problem:
            entry["problem"] = self.problem
        return entry


@dataclass
class Outcome:
    """One call's end: `status` is "success" or the error's code."""

    status: str
    result: Any = None
    error: str = ""
    duration_ms: float = 0.0
    started_at: str = ""  # when the call began (ISO 8601, UTC); "" for a call never made

    @property
    def ok(self) -> bool:
        return self.status == "success"


_builtin: dict[str, Tool] = {}


def register(tool: str, *, description: str, input_schema: dict[str, Any],
             function: Callable[[dict[str, Any]], Any]) -> None:
    """Add a builtin tool (at an app's start). Its schema must be a JSON Schema of an object."""
    problem = schema_refusal(input_schema, field=f"{BUILTIN}.{tool}")
    if problem or input_schema.get("type") != "object":
        raise ValueError(f"the input schema of {BUILTIN}.{tool} {problem or 'must describe an object'}")
    _builtin[tool] = Tool(BUILTIN, tool, description, input_schema, function)


def tool_schema(shape: type[BaseModel]) -> dict[str, Any]:
    """A builtin tool's input schema, generated from the pydantic shape of its arguments (as
    every schema of the product's own shapes is: engine/json_schema.py)."""
    return {key: value for key, value in document_schema(shape).items() if key != "$schema"}


def servers() -> dict[str, dict[str, Any]]:
    """The MCP servers operators configured: name → options (tools/config.py)."""
    return getattr(settings, "TOOL_SERVERS", {}) or {}


def names() -> list[str]:
    """Every tool name the catalogue holds, from the registrations and the allowlists alone."""
    found = [f"{BUILTIN}.{tool}" for tool in sorted(_builtin)]
    for server, options in sorted(servers().items()):
        found += [f"{server}.{tool}" for tool in options["allow"]]
    return found


def unknown(wanted: Iterable[str]) -> list[str]:
    """The names in `wanted` that name no tool of the catalogue (`server.*` names a known server)."""
    known = set(names())
    known_servers = {BUILTIN, *servers()}
    missing = []
    for name in wanted:
        server, _, tool = str(name).partition(".")
        if name in known or (tool == "*" and server in known_servers):
            continue
        missing.append(name)
    return missing


# -- listing -----------------------------------------------------------------------------

_listings: dict[str, tuple[float, str, list[Tool]]] = {}  # server → (when, its options as JSON, its tools)
_listing_lock = threading.Lock()


def server_tools(server: str, *, fresh: bool = False) -> list[Tool]:
    """The tools of one server, in its allowlist's order: builtin ones as registered, an MCP
    server's as it lists them (kept for LISTING_SECONDS unless `fresh`). A server that cannot
    be listed gives its allowlisted names unreachable, naming why."""
    if server == BUILTIN:
        return [_builtin[tool] for tool in sorted(_builtin)]
    options = servers().get(server)
    if options is None:
        return []
    key = json.dumps(options, sort_keys=True, default=str)
    with _listing_lock:
        kept = _listings.get(server)
        if kept and not fresh and kept[1] == key and time.monotonic() - kept[0] < LISTING_SECONDS:
            return kept[2]
    from tools import mcp  # the SDK is imported only where a server is used

    allowed = list(options["allow"])
    try:
        listed = {entry["name"]: entry for entry in mcp.list_tools(server, options)}
    except ToolError as error:
        return [Tool(server, tool, reachable=False, problem=str(error)) for tool in allowed]
    found = []
    for tool in allowed:
        entry = listed.get(tool)
        if entry is None:
            found.append(Tool(server, tool, reachable=False, problem=f"{server} does not offer a tool named {tool!r}"))
        else:
            found.append(Tool(server, tool, entry.get("description") or "", entry.get("input_schema") or {"type": "object"}))
    with _listing_lock:
        _listings[server] = (time.monotonic(), key, found)
    return found


def entries(*, fresh: bool = False) -> list[Tool]:
    """The whole catalogue: builtin tools, then each server's, by server name."""
    found = server_tools(BUILTIN)
    for server in sorted(servers()):
        found += server_tools(server, fresh=fresh)
    return found


def resolve(wanted: Iterable[str]) -> tuple[list[Tool], list[str]]:
    """(the tools `wanted` names, with `server.*` expanded, each once; the names that name
    no tool of the catalogue): what an agent can call, and what it is missing."""
    tools: dict[str, Tool] = {}
    missing = []
    for name in wanted:
        server, _, tool = str(name).partition(".")
        if unknown([name]):
            missing.append(name)
            continue
        for entry in server_tools(server):
            if tool in ("*", entry.tool):
                tools.setdefault(entry.name, entry)
    return list(tools.values()), missing


def clear_listings() -> None:
    with _listing_lock:
        _listings.clear()


# -- calling -----------------------------------------------------------------------------


def timeout_of(tool: Tool) -> float:
    return float(servers().get(tool.server, {}).get("timeout_seconds") or DEFAULT_TIMEOUT_SECONDS)


def result_cap(tool: Tool) -> int:
    if tool.server == BUILTIN:
        return int(getattr(settings, "TOOL_RESULT_MAX_BYTES", DEFAULT_MAX_RESULT_BYTES))
    return int(servers().get(tool.server, {}).get("max_result_bytes") or DEFAULT_MAX_RESULT_BYTES)


def arguments_problem(tool: Tool, arguments: Any) -> str | None:
    """Why `arguments` cannot be sent to `tool`, naming the field; None when they can."""
    if not isinstance(arguments, dict):
        return f"the arguments of {tool.name} are a JSON object, not {type(arguments).__name__}"
    problems = field_problems(tool.input_schema, arguments, where="arguments")
    if problems:
        return f"the arguments of {tool.name} break its input schema: " + "; ".join(
            f"{where}: {what}" for where, what in problems[:5])
    return None


def call(tool: Tool, arguments: Any, *, group: CallGroup | None = None) -> Outcome:
    """Call `tool` once with `arguments`: the arguments checked first, the call held to its
    server's time limit, the result to its size cap (as JSON, in UTF-8 bytes). A call to an
    MCP server made for a `group` is stopped with it."""
    started, began = time.perf_counter(), iso(datetime.now(UTC)) or ""

    def ended(status: str, result: Any = None, error: str = "") -> Outcome:
        return Outcome(status, result, error, round((time.perf_counter() - started) * 1000, 3), began)

    if not tool.reachable:
        return ended(errors.TOOL_UNAVAILABLE, error=f"{tool.name} is unavailable: {tool.problem}")
    problem = arguments_problem(tool, arguments)
    if problem:
        return ended(errors.TOOL_ARGUMENTS_INVALID, error=problem)
    try:
        if tool.function is not None:
            result = tool.function(arguments)
        else:
            from tools import mcp

            options = servers().get(tool.server)
            if options is None:
                raise ToolError(f"no tool server named {tool.server!r} is configured", code=errors.TOOL_UNAVAILABLE)
            result = mcp.call_tool(tool.server, options, tool.tool, arguments, timeout=timeout_of(tool), group=group)
    except ToolError as error:
        return ended(error.code, error=str(error))
    size = len(json.dumps(result, ensure_ascii=False, default=str).encode())
    cap = result_cap(tool)
    if size > cap:
        return ended(errors.TOOL_RESULT_TOO_LARGE,
                     error=f"the result of {tool.name} is {size:,} bytes, over its cap of {cap:,}")
    return ended("success", result)
