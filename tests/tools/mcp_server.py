"""A small MCP server for the tool tests, written with the SDK's server API.

    python mcp_server.py stdio                 # over its stdin and stdout
    python mcp_server.py http HEADER VALUE     # streamable HTTP on 127.0.0.1, a free port:
                                               # its first line of output is the port; every
                                               # request must carry the header HEADER: VALUE

Its tools: echo, add (integers, structured output), slow (sleeps, deaf meanwhile), fail (an error result),
refuse (a protocol error),
big (n characters), env_has (which variables are set), pid (its process id).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script: the project's root
from benchmarks.mcp_http import serve_http  # noqa: E402

server = MCPServer("test-tools", log_level="WARNING")


@server.tool(description="Answer the text given.")
def echo(text: str) -> str:
    return text


@server.tool(description="Add two integers.")
def add(a: int, b: int = 0) -> dict[str, int]:
    return {"sum": a + b}


@server.tool(description="Sleep for some seconds, then answer; first write the process id to pid_file.")
def slow(seconds: float, pid_file: str = "") -> str:
    if pid_file:
        with open(pid_file, "w") as file:
            file.write(str(os.getpid()))
    time.sleep(seconds)  # in a worker thread: the server itself stays deaf to its stdin closing
    return "done"


@server.tool(description="Always fail.")
def fail(reason: str = "it failed") -> str:
    raise ToolError(reason)


@server.tool(description="Answer a JSON-RPC error rather than a result.")
def refuse() -> str:
    raise MCPError(-32602, "refused by the test server")


@server.tool(description="Answer n characters.")
def big(n: int) -> str:
    return "x" * n


@server.tool(description="Which of the environment variables named are set.")
def env_has(names: list[str]) -> dict[str, bool]:
    return {name: name in os.environ for name in names}


@server.tool(description="The server's process id.")
def pid() -> int:
    return os.getpid()


@server.tool(description="Two text parts and an image.", structured_output=False)
def parts() -> list:
    from mcp_types import ImageContent, TextContent

    return [TextContent(type="text", text="one"), TextContent(type="text", text="two"),
            ImageContent(type="image", data="AAAA", mime_type="image/png")]


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        serve_http(server, sys.argv[2], sys.argv[3])
