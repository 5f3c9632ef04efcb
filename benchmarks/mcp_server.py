"""The MCP server `manage.py benchmark_tools` calls: one tool, `echo`, written with the SDK's
server API, so that what is measured is the client's path, not the tool.

    python mcp_server.py stdio    # over its stdin and stdout
    python mcp_server.py http     # streamable HTTP on a free port of 127.0.0.1, which it prints
                                  # first; each request must carry Authorization: Bearer $BENCHMARK_MCP_TOKEN
"""
from __future__ import annotations

import os
import socket
import sys

from mcp.server.mcpserver import MCPServer

TOKEN_VARIABLE = "BENCHMARK_MCP_TOKEN"
server = MCPServer("benchmark", log_level="WARNING")


@server.tool(description="Answer the text given.")
def echo(text: str) -> str:
    return text


def serve_http() -> None:
    import uvicorn

    app = server.streamable_http_app()
    expected = f"Bearer {os.environ[TOKEN_VARIABLE]}".encode()

    async def checked(scope, receive, send):
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    uvicorn.Server(uvicorn.Config(checked, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        serve_http()
    else:
        server.run("stdio")
