"""The MCP servers the tool tests call: tests/tools/mcp_server.py, started over stdio for each
call, or once per module over streamable HTTP on a free port of 127.0.0.1."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

SERVER_SCRIPT = str(Path(__file__).with_name("mcp_server.py"))
TOOLS = ["echo", "add", "slow", "fail", "refuse", "big", "env_has", "pid", "parts"]
HEADER, TOKEN_VARIABLE, TOKEN = "Authorization", "TEST_MCP_TOKEN", "Bearer tok-SECRET-4711"


def stdio_options(**overrides) -> dict:
    """The TOOL_SERVERS entry of the test server over stdio."""
    return {"transport": "stdio", "argv": [sys.executable, SERVER_SCRIPT, "stdio"], "env": [], "cwd": None,
            "allow": list(TOOLS), "timeout_seconds": 30.0, "max_result_bytes": 100_000, **overrides}


def start_http_server() -> tuple[subprocess.Popen, int]:
    """The test server over streamable HTTP, wanting `HEADER: TOKEN`; (its process, its port)."""
    process = subprocess.Popen([sys.executable, SERVER_SCRIPT, "http", HEADER, TOKEN], stdout=subprocess.PIPE,
                               text=True)
    line = process.stdout.readline()  # its port, once it listens; nothing if it failed to start
    if not line.strip().isdigit():
        process.kill()
        raise RuntimeError(f"the test MCP server did not start (exit {process.wait()})")
    return process, int(line)


@pytest.fixture(scope="module")
def http_server():
    """The HTTP server's TOOL_SERVERS entry, one server a module; the token in the environment."""
    process, port = start_http_server()
    os.environ[TOKEN_VARIABLE] = TOKEN
    try:
        yield {"transport": "http", "url": f"http://127.0.0.1:{port}/mcp", "headers": {HEADER: TOKEN_VARIABLE},
               "allow": list(TOOLS), "timeout_seconds": 30.0, "max_result_bytes": 100_000}
    finally:
        os.environ.pop(TOKEN_VARIABLE, None)
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def alive(pid: int) -> bool:
    """Whether the process `pid` runs (a zombie or a dead one does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def in_cancellable_thread(work) -> tuple:
    """`work()` started in a thread of its own under a cancellation, as a worker runs a node:
    the cancellation, what it ended with (`outcome["value"]` or `outcome["error"]`) and an
    event set when it ended."""
    from core.cancellation import Cancellation, cancellable

    cancellation, outcome, done = Cancellation(), {}, threading.Event()

    def run():
        with cancellable(cancellation):
            try:
                outcome["value"] = work()
            except BaseException as error:  # noqa: BLE001 - handed to the test
                outcome["error"] = error
            finally:
                done.set()

    threading.Thread(target=run, daemon=True).start()
    return cancellation, outcome, done
