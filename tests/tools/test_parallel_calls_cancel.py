"""A node whose run is cancelled while it waits on parallel MCP calls (tool_loop.run_calls)
abandons them all: each call's stdio server is stopped, and the node raises Cancelled. Some 5 s:
two real stdio servers start, and the SDK stops each with SIGTERM 2 s after closing its stdin."""
import time

from core.cancellation import Cancelled
from executions.node_kinds.tool_loop import Toolbox, run_calls
from tests.tools.conftest import alive, in_cancellable_thread, stdio_options
from tools import catalogue


def test_a_cancel_abandons_every_parallel_call_and_stops_their_servers(settings, tmp_path):
    settings.TOOL_SERVERS = {"t": stdio_options()}
    toolbox = Toolbox(tools={"t.slow": catalogue.Tool("t", "slow")}, missing=[], max_calls=5, parallel=True,
                      needs_approval=set())
    pid_files = [tmp_path / f"pid{n}" for n in range(2)]
    asked = [{"id": f"call_{n}", "name": "t.slow", "arguments": {"seconds": 60, "pid_file": str(path)}}
             for n, path in enumerate(pid_files)]
    cancellation, outcome, done = in_cancellable_thread(lambda: run_calls(toolbox, asked, 1, {}, {}))
    deadline = time.monotonic() + 20
    while not all(path.exists() and path.read_text() for path in pid_files):  # both servers are in their call
        assert time.monotonic() < deadline, "the calls did not begin"
        time.sleep(0.05)
    pids = [int(path.read_text()) for path in pid_files]
    cancellation.cancel("cancelled by ada")
    assert done.wait(10), "the node still waits on its calls"
    assert isinstance(outcome.get("error"), Cancelled), outcome
    deadline = time.monotonic() + 8  # each server's stdin closed, then SIGTERM 2 s later: it ignores the first
    while any(map(alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(alive, pids))
