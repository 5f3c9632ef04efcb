"""The client side of the MCP servers operators configure (`[tools.NAME]`, tools/config.py):
list a server's tools, call one, with the official MCP SDK.

Workers and commands are synchronous code and the SDK is asynchronous, so each function runs
one short event loop of its own, in a thread of its own, and connects for that one request:
a stdio server is started, initialised, asked, and stopped; an HTTP server gets a session of
one request. Simple, and a server that died since the last call is simply started again.

The time limit covers everything (starting the server, the handshake, the call). The caller
is answered when it runs out, whatever the server does: the thread, not the caller, waits
for the SDK to stop a stdio server (its stdin closed, then SIGTERM and SIGKILL to its whole
process group, each a couple of seconds apart), so a hung server is killed but never holds
the caller past its limit.

Every failure is a `ToolError` whose code says what went wrong (tools/errors.py) and whose
message names the server and the tool, never a header's or a variable's value: the server
cannot be started, reached or initialised, or does not offer the tool, TOOL_UNAVAILABLE (a
failed call lists the server's tools to tell which: no listing is made for a call that
works); over its time limit, TOOL_TIMEOUT; an error result or a protocol error, TOOL_ERROR.
"""
from __future__ import annotations

import os
import sys
import threading
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, EmbeddedResource, ImageContent, ResourceLink, TextContent

from core.backend_urls import shown_url
from core.cancellation import stoppable
from tools.call_groups import CallGroup
from tools.errors import TOOL_ERROR, TOOL_TIMEOUT, TOOL_UNAVAILABLE, ToolError

T = TypeVar("T")
# How long the caller waits past the time limit for the thread's own timeout to arrive (by
# then a server that exits as soon as its stdin closes has usually gone).
GRACE_SECONDS = 0.25
MAX_MESSAGE = 2000  # characters of a server's error text kept in a message
# The errors the SDK makes up for an HTTP error status without a JSON-RPC error in its body.
SDK_STAND_INS = frozenset({"Server returned an error response", "Not Found", "Session terminated"})


def list_tools(server: str, options: dict[str, Any]) -> list[dict[str, Any]]:
    """Every tool the server offers: {"name", "description", "input_schema"} each (not only
    the allowed ones; the catalogue keeps those)."""

    async def listing(client: Client) -> list[dict[str, Any]]:
        return [{"name": tool.name, "description": tool.description or "", "input_schema": tool.input_schema}
                for tool in await _all_tools(client)]

    timeout = float(options.get("timeout_seconds") or 30)
    return _run(options, f"{server} (listing its tools)", listing, timeout)


def call_tool(server: str, options: dict[str, Any], tool: str, arguments: dict[str, Any], *,
              timeout: float, group: CallGroup | None = None) -> Any:
    """Call `tool` once; its result as JSON: the structured content when the server gives
    one, else the text (one text part: that string; several parts: a list, a part that is
    not text described, not inlined)."""
    where = f"{server}.{tool}"
    if tool not in options.get("allow", ()):
        raise ToolError(f"{where} is not in the allow list of the tool server {server!r}", code=TOOL_UNAVAILABLE)

    async def calling(client: Client) -> CallToolResult:
        """The call's result; a failure for a tool the server does not offer (now) is that."""
        try:
            result = await client.call_tool(tool, arguments)
        except MCPError:
            if not await _offers(client, tool):
                raise ToolError(f"{where} is unavailable: {server} does not offer a tool named {tool!r}",
                                code=TOOL_UNAVAILABLE) from None
            raise
        if result.is_error and not await _offers(client, tool):
            raise ToolError(f"{where} is unavailable: {server} does not offer a tool named {tool!r}",
                            code=TOOL_UNAVAILABLE)
        return result

    result = _run(options, where, calling, timeout, group)
    if result.is_error:
        text = as_json(result.content)
        raise ToolError(f"{where} answered an error: {_clipped(text if isinstance(text, str) else str(text))}",
                        code=TOOL_ERROR)
    if result.structured_content is not None:
        return result.structured_content
    return as_json(result.content)


async def _all_tools(client: Client) -> list[Any]:
    tools: list[Any] = []
    cursor = None
    for _ in range(100):  # pages; a server whose pages never end cannot hold us
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


async def _offers(client: Client, tool: str) -> bool:
    """Whether the server lists `tool`: asked only once a call failed, to tell a tool that is
    not there from one that failed. A server that cannot list is taken to offer it."""
    try:
        return any(entry.name == tool for entry in await _all_tools(client))
    except Exception:  # noqa: BLE001 - the call's own failure is the one to report
        return True


def as_json(content: list[Any]) -> Any:
    """A result's parts as JSON: one text part is its string; otherwise a list of strings and
    descriptions of what is not text (an image's type and size, a resource's address)."""
    parts = [_part(part) for part in content]
    if len(parts) == 1 and isinstance(parts[0], str):
        return parts[0]
    return parts


def _part(part: Any) -> Any:
    if isinstance(part, TextContent):
        return part.text
    if isinstance(part, ImageContent):
        return {"type": "image", "mime_type": part.mime_type, "bytes": len(part.data) * 3 // 4,
                "note": "an image, not passed on"}
    if isinstance(part, ResourceLink):
        return {"type": "resource_link", "uri": str(part.uri), "name": part.name}
    if isinstance(part, EmbeddedResource):
        return {"type": "resource", "uri": str(part.resource.uri), "note": "an embedded resource, not passed on"}
    return {"type": getattr(part, "type", type(part).__name__), "note": "content that is not text, not passed on"}


# -- one request, in a thread of its own ------------------------------------------------------


def _run(options: dict[str, Any], where: str, request: Callable[[Client], Awaitable[T]],
         timeout: float, group: CallGroup | None = None) -> T:
    """Connect to the server, make `request`, disconnect, all within `timeout` seconds. A
    caller stopped while it waits (a node's time limit, raised in it; its node run cancelled,
    which raises Cancelled), or the `group` it is made for, stops the request too: the server is disconnected, and a stdio server stopped,
    then rather than at `timeout`."""
    state: dict[str, Any] = {"stage": "connecting", "http_status": None}
    group = group or CallGroup()

    async def connected() -> T:
        with anyio.CancelScope() as scope, anyio.fail_after(timeout):
            token = anyio.lowlevel.current_token()
            group.on_stop(lambda: anyio.from_thread.run_sync(scope.cancel, token=token))
            async with AsyncExitStack() as stack:
                client = await _connect(stack, where, options, state)
                state["stage"] = "calling"
                return await request(client)
        raise ToolError(f"{where}: the call was stopped", code=TOOL_ERROR)  # cancelled from the caller

    answer: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            answer["value"] = anyio.run(connected)
        except BaseException as error:  # noqa: BLE001 - handed to the caller, which types it
            answer["error"] = error
        finally:
            done.set()

    threading.Thread(target=work, name=f"mcp {where}", daemon=True).start()
    try:
        with stoppable(group.stop):  # a cancel of the node run stops the request (core/cancellation.py)
            answered = done.wait(timeout + GRACE_SECONDS)
    except BaseException:  # the caller is stopped here (a time limit, a cancel): so is the request
        group.stop()
        raise
    if not answered:
        raise ToolError(f"{where} did not answer within {timeout:g} s", code=TOOL_TIMEOUT)
    if "error" in answer:
        raise _typed(answer["error"], where, state, timeout, options) from None
    return answer["value"]


async def _connect(stack: AsyncExitStack, where: str, options: dict[str, Any], state: dict[str, Any]) -> Client:
    """A client connected to the server and initialised; `stack` closes it. An HTTP error
    status is kept in `state`: the SDK answers it as a generic protocol error."""
    if options["transport"] == "stdio":
        if options.get("cwd") and not os.path.isdir(options["cwd"]):
            raise ToolError(f"{where} is unavailable: its directory {options['cwd']} does not exist",
                            code=TOOL_UNAVAILABLE)
        # The server's stderr goes to this process's: a Celery worker's sys.stderr is a logging
        # proxy with no file descriptor for a child process to write to, so its own stream.
        errlog = sys.stderr if _has_fileno(sys.stderr) or sys.__stderr__ is None else sys.__stderr__
        return await stack.enter_async_context(Client(stdio_client(stdio_parameters(options), errlog=errlog),
                                                      cache=None))
    headers = {}
    for header, variable in (options.get("headers") or {}).items():
        value = os.environ.get(variable)
        if value is None:
            raise ToolError(f"{where}: the environment variable {variable}, which the header {header} is read from, "
                            "is not set", code=TOOL_UNAVAILABLE)
        headers[header] = value

    async def keep_status(response: httpx2.Response) -> None:
        if response.status_code >= 400:
            state["http_status"] = response.status_code

    http = await stack.enter_async_context(httpx2.AsyncClient(
        headers=headers, timeout=httpx2.Timeout(float(options.get("timeout_seconds") or 30)),
        event_hooks={"response": [keep_status]}))
    return await stack.enter_async_context(Client(streamable_http_client(options["url"], http_client=http), cache=None))


def _has_fileno(stream: Any) -> bool:
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True


def stdio_parameters(options: dict[str, Any]) -> StdioServerParameters:
    """How a stdio server is started: its argv as given (no shell), in its directory, with
    only the variables its `env` allows, LANG, and the SDK's minimal set (PATH, HOME, …)."""
    argv = options["argv"]
    env = {"LANG": os.environ.get("LANG", "C.UTF-8")}
    env.update({name: os.environ[name] for name in options.get("env") or () if name in os.environ})
    return StdioServerParameters(command=argv[0], args=list(argv[1:]), env=env, cwd=options.get("cwd") or None)


def _typed(error: BaseException, where: str, state: dict[str, Any], timeout: float,
           options: dict[str, Any]) -> ToolError:
    """The ToolError a failure of the SDK, the transport or the server is, in words that hold
    no secret: what kind of failure, and the server's own message for protocol errors."""
    error, stage = _leaf(error), state["stage"]
    if isinstance(error, ToolError):
        return error
    if isinstance(error, TimeoutError):
        return ToolError(f"{where} did not answer within {timeout:g} s", code=TOOL_TIMEOUT)
    if state["http_status"] and not (isinstance(error, MCPError) and error.message not in SDK_STAND_INS):
        # 401: the header's value is wrong; 404: the URL's path. A JSON-RPC error the server
        # sent with the status says more, and is kept.
        code = TOOL_UNAVAILABLE if stage == "connecting" else TOOL_ERROR
        return ToolError(f"{where}: {shown_url(options.get('url'))} answered HTTP {state['http_status']}", code=code)
    if isinstance(error, MCPError) and stage == "connecting":
        return ToolError(f"{where} is unavailable: the MCP handshake failed: {_clipped(error.message)}",
                         code=TOOL_UNAVAILABLE)
    if isinstance(error, MCPError):
        return ToolError(f"{where}: the server answered a protocol error {error.code}: {_clipped(error.message)}",
                         code=TOOL_ERROR)
    if stage == "calling" and not isinstance(error, (OSError, httpx2.HTTPError)):
        return ToolError(f"{where}: the call failed: {type(error).__name__}", code=TOOL_ERROR)
    return ToolError(f"{where} is unavailable: {_connection_problem(error, options)}", code=TOOL_UNAVAILABLE)


def _connection_problem(error: BaseException, options: dict[str, Any]) -> str:
    if options["transport"] == "stdio":
        program = options["argv"][0]
        if isinstance(error, OSError):
            return f"cannot start {program}: {error.strerror or type(error).__name__}"
        return f"{program} did not complete the MCP handshake ({type(error).__name__}); did it start?"
    url = shown_url(options.get("url"))
    if isinstance(error, httpx2.HTTPStatusError):
        return f"{url} answered HTTP {error.response.status_code}"
    if isinstance(error, httpx2.HTTPError):
        return f"cannot reach {url} ({type(error).__name__})"
    return f"{url} did not complete the MCP handshake ({type(error).__name__})"


def _leaf(error: BaseException) -> BaseException:
    """The first failure inside task groups' exception groups: the one that says what happened."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _clipped(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + "…"
