"""The dispatch a call is made for: its number, its calls' keys, and the local processes its
backends start, ended only on their own machine and only while they are the process recorded."""
import signal
import subprocess
import time

from agents.backends.dispatch import (
    dispatch_number,
    dispatched,
    end_process,
    idempotency_key,
    machine,
    process_started,
    start_time,
)
from tests.processes import in_group


def test_it_keys_each_call_the_same_in_every_dispatch_of_a_node_run_and_apart_from_any_other():
    assert dispatch_number() is None and idempotency_key(b"draft") is None, "no dispatch, no key"
    with dispatched(7, 1) as first:
        assert dispatch_number() == 1
        keys = [idempotency_key(body) for body in (b"draft", b"review", b"draft")]
    with dispatched(7, 2):
        assert dispatch_number() == 2
        again = [idempotency_key(body) for body in (b"draft", b"review", b"draft")]
    with dispatched(8, 1):
        other = idempotency_key(b"draft")
    assert again == keys, "sent again, the same calls carry the same keys"
    assert len(set(keys)) == 3, "the same request made twice in a dispatch is two calls"
    assert other not in keys and all(key.startswith("switchyard-7-") for key in keys)
    assert first.number == 1 and dispatch_number() is None


def test_it_ends_a_recorded_process_group_only_on_its_machine_and_while_it_is_the_process_recorded():
    recorded = []
    group = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30"], start_new_session=True)
    try:
        with dispatched(7, 1, on_process=recorded.append):
            process_started(group.pid)
        [record] = recorded
        assert record == {"pid": group.pid, "machine": machine(), "started": start_time(group.pid)}
        assert record["machine"] and record["started"]

        assert not end_process({**record, "machine": "another-boot/4026531836"}), "a pid of another machine"
        assert not end_process({**record, "started": record["started"] - 1}), "a pid given since to another process"
        assert not end_process(None)
        assert group.poll() is None, "left alone"

        assert in_group(group.pid), "the shell and the sleep it started"
        assert end_process(record)
        assert group.wait(timeout=5) == -signal.SIGKILL
        deadline = time.monotonic() + 5
        while in_group(group.pid):
            assert time.monotonic() < deadline, "what the process started was ended with it"
            time.sleep(0.05)
        assert not end_process(record), "gone: nothing to end"
    finally:
        if group.poll() is None:
            group.kill()
            group.wait()


