"""Serving an MCP server (the SDK's) over streamable HTTP on a free port of 127.0.0.1, every
request held to one header's value as a real server holds it to its token: what the
benchmark's server and the tool tests' server both run (each as a script of its own, so this
module imports nothing of the project's)."""
from __future__ import annotations

import json
import socket


def serve_http(server, header: str, value: str) -> None:
    """Serve `server` (an MCPServer) until killed; the first line printed is the port."""
    import uvicorn

    app = server.streamable_http_app()
    wanted_header, wanted = header.lower().encode(), value.encode()

    async def checked(scope, receive, send):
        if scope["type"] == "http" and dict(scope["headers"]).get(wanted_header) != wanted:
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": json.dumps({"error": "unauthorized"}).encode()})
            return
        await app(scope, receive, send)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # before the port is said: a client that connects at once waits to be accepted, not refused
    print(sock.getsockname()[1], flush=True)
    uvicorn.Server(uvicorn.Config(checked, log_level="warning")).run(sockets=[sock])
