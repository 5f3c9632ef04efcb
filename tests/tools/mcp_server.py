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

import json
import os
import socket
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

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


def serve_http(header: str, value: str) -> None:
    import uvicorn

    app = server.streamable_http_app()

    async def checked(scope, receive, send):  # the header check a real server makes of its token
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(header.lower().encode())
            if given != value.encode():
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": json.dumps({"error": "unauthorized"}).encode()})
                return
        await app(scope, receive, send)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    uvicorn.Server(uvicorn.Config(checked, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        serve_http(sys.argv[2], sys.argv[3])
