"""The MCP server `manage.py benchmark_tools` calls: one tool, `echo`, written with the SDK's
server API, so that what is measured is the client's path, not the tool.

    python mcp_server.py stdio    # over its stdin and stdout
    python mcp_server.py http     # streamable HTTP on a free port of 127.0.0.1, which it prints
                                  # first; each request must carry Authorization: Bearer $BENCHMARK_MCP_TOKEN
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the project's root
from benchmarks.mcp_http import serve_http  # noqa: E402

TOKEN_VARIABLE = "BENCHMARK_MCP_TOKEN"
server = MCPServer("benchmark", log_level="WARNING")


@server.tool(description="Answer the text given.")
def echo(text: str) -> str:
    return text


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        serve_http(server, "Authorization", f"Bearer {os.environ[TOKEN_VARIABLE]}")
    else:
        server.run("stdio")
