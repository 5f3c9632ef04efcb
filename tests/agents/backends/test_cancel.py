"""A backend call in flight, stopped when the node run it is made for is cancelled
(core/cancellation.py): an open stream or a call waiting for its answer is shut, a command's
process group is killed; the
call raises Cancelled, is not tried again, and no call starts after the cancel."""
import sys
import threading
import time

import pytest

from agents.backends.command import CommandBackend
from core.cancellation import Cancellation, Cancelled, cancellable
from tests.agents.backends.chat_server import backend_request as request
from tests.processes import processes


def in_thread(call, cancellation: Cancellation) -> dict:
    """Run `call()` under `cancellation` in a thread of its own; what it returned or raised
    goes in the dict answered, once `done` is set."""
    outcome: dict = {"done": threading.Event()}

    def work():
        with cancellable(cancellation):
            try:
                outcome["value"] = call()
            except BaseException as error:  # noqa: BLE001 - handed to the test
                outcome["error"] = error
            finally:
                outcome["done"].set()

    threading.Thread(target=work, daemon=True).start()
    return outcome


def wait_until(predicate, what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_a_cancel_shuts_an_open_stream_and_the_call_is_not_made_again(chat_server, make):
    chat_server.reply("never finished").break_stream(after=2, stall=30)  # two events, then silence
    cancellation = Cancellation()
    outcome = in_thread(lambda: make(stream=True, timeout_seconds=30).complete(request()), cancellation)
    wait_until(lambda: chat_server.requests and len(chat_server.requests[0].events) == 2, "the stream to begin")
    assert not outcome["done"].is_set()

    cancellation.cancel("cancelled by ada")
    assert outcome["done"].wait(10), "the stream's read was not stopped"
    assert isinstance(outcome["error"], Cancelled) and str(outcome["error"]) == "cancelled by ada"
    assert len(chat_server.requests) == 1, "a cancelled call is not tried again"


def test_a_cancel_stops_a_call_waiting_for_its_answer(chat_server, make):
    chat_server.reply("too late").delay(30)  # the answer held back
    cancellation = Cancellation()
    outcome = in_thread(lambda: make(timeout_seconds=60).complete(request()), cancellation)
    wait_until(lambda: chat_server.requests, "the request to arrive")
    assert not outcome["done"].is_set()

    cancellation.cancel("cancelled by ada")
    assert outcome["done"].wait(10), "the wait for the answer was not stopped"
    assert isinstance(outcome["error"], Cancelled)
    assert len(chat_server.requests) == 1, "a cancelled call is not tried again"


def test_no_call_starts_once_its_node_run_is_cancelled(chat_server, make):
    chat_server.reply("fine")
    cancellation = Cancellation()
    cancellation.cancel("cancelled by ada")
    with cancellable(cancellation), pytest.raises(Cancelled):
        make().complete(request())
    assert chat_server.requests == []


def test_a_cancel_kills_a_running_command_and_what_it_started(tmp_path):
    pids = tmp_path / "pids"
    backend = CommandBackend("command", argv=[
        sys.executable, "-c",
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "sys.stdin.read(); time.sleep(600)\n"], timeout_seconds=600)
    cancellation = Cancellation()
    outcome = in_thread(lambda: backend.complete(request()), cancellation)
    wait_until(lambda: pids.exists() and len(pids.read_text().split()) == 2, "the command and its child")
    command, child = map(int, pids.read_text().split())

    cancellation.cancel("cancelled by ada")
    assert outcome["done"].wait(10), "the command was not stopped"
    assert isinstance(outcome["error"], Cancelled)
    gone = {process.pid for process in processes() if process.state not in "ZX"}.isdisjoint
    wait_until(lambda: gone({command, child}), "the command and its child to end")
