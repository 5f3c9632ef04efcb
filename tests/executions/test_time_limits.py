"""Node time limits on a real prefork worker: the soft limit fails the node with
NODE_TIME_LIMIT and kills the command backend's process; past the hard limit the pool
process is killed and the sweep fails the node with the same code; the worker lives on."""
import json
import os
import sys
import threading
import time
import uuid

import pytest
from django.db import connection, transaction
from django.utils import timezone

from core.documents import import_documents
from executions.models import Execution
from executions.services import execution_start, node_runs_sweep
from tests.executions.conftest import wait_for
from workflows.models import Workflow

pytestmark = pytest.mark.integration

# The command backend's program: a node whose id starts with "slow", and any summary, sleep
# for 30 s (writing their pid first); "long" replies with many lines; any other replies at once.
SCRIPT = """
import json, os, sys, time
sys.stdin.read()
node, task = os.environ.get("SWITCHYARD_NODE_ID", ""), os.environ.get("SWITCHYARD_TASK", "")
if node.startswith("slow") or task == "summarize":
    with open(sys.argv[1], "a") as pids:
        pids.write(f"{os.getpid()}\\n")
    time.sleep(30)
if node == "long":
    print(json.dumps({"lines": "\\n".join(f"{sys.argv[2]} line {i}" for i in range(80))}))
else:
    print(json.dumps({"done": node}))
"""


@pytest.fixture
def limited(workers, settings, tmp_path):
    """Nodes stopped after 2 s (soft) and 6 s (hard), a sleeping command agent, and one
    prefork worker with a single pool process."""
    pids = tmp_path / "pids"
    argv = [sys.executable, "-c", SCRIPT, str(pids), uuid.uuid4().hex]  # fresh lines: no cached compression
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "command": {"kind": "command", "argv": argv}}
    limits = {"NODE_SOFT_TIME_LIMIT_SECONDS": "2", "NODE_HARD_TIME_LIMIT_SECONDS": "6"}
    settings.NODE_SOFT_TIME_LIMIT_SECONDS, settings.NODE_HARD_TIME_LIMIT_SECONDS = 2.0, 6.0
    settings.NODE_STALE_SECONDS = 3
    workers.env.update(COMMAND_BACKEND_ARGV=json.dumps(argv), **limits)
    import_documents({"agent_id": "Sleeper", "name": "Sleeper", "version": "1.0.0", "type": "business",
                      "status": "active", "prompt_config": {"system_prompt": "Take your time."},
                      "capabilities": {"skills": ["wait"]}, "runtime": {"backend": "command"}}, actor="test")
    (worker,) = workers.start(1, pool="prefork")
    return worker, pids


def pids_in(path):
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def assert_gone(pid):
    deadline = time.monotonic() + 5
    while os.path.exists(f"/proc/{pid}") and "zombie" not in open(f"/proc/{pid}/status").read().lower():
        assert time.monotonic() < deadline, f"the command's process {pid} is still running"
        time.sleep(0.1)


def test_it_fails_a_node_past_its_soft_time_limit_and_the_worker_runs_the_next(workers, limited):
    worker, pids = limited
    import_documents({
        "workflow_id": "sleepy", "name": "Sleepy", "topology": "state_machine",
        "nodes": [{"id": "slow", "agent_ref": "Sleeper"}, {"id": "after", "agent_ref": "Sleeper"}],
        "transitions": [{"from": "slow", "to": "after", "on_failure": "after"}],
        "error_handling": {"retry_count": 2},
    }, actor="test")
    started = time.monotonic()
    execution = wait_for(execution_start(workflow=Workflow.objects.get(workflow_id="sleepy")), timeout=60,
                         workers=workers)
    assert time.monotonic() - started < 25, "stopped at the soft limit, not after the command's 30 s"
    slow = execution.node_runs.get(node_id="slow")
    assert (slow.status, slow.error_code) == ("failed", "NODE_TIME_LIMIT")
    assert "node time limit of 2 s" in slow.error
    # Not retried (retry_count 2 notwithstanding): the workflow's on_failure took over.
    assert execution.node_runs.filter(node_id="slow").count() == 1
    assert execution.status == "success", execution.ended_reason
    assert execution.node_runs.get(node_id="after").output == {"done": "after"}
    (pid,) = pids_in(pids)
    assert_gone(pid)
    assert worker.poll() is None, "the worker is still up"


def hold_the_run(execution, seconds: float) -> threading.Thread:
    """Keep the run's row locked (a write in an open transaction) for `seconds`, from a
    thread with a connection of its own: storing a node's failure waits for it."""
    def hold():
        try:
            with transaction.atomic():
                Execution.objects.filter(pk=execution.pk).update(updated_at=timezone.now())
                time.sleep(seconds)
        finally:
            connection.close()

    thread = threading.Thread(target=hold)
    thread.start()
    return thread


def test_it_fails_a_node_killed_at_its_hard_time_limit_once_the_sweep_sees_it(workers, limited):
    """The soft limit lands in a compression call (which records its backend's failures, but
    lets a time limit through) and the node fails; storing that failure waits for the run's
    row, which is held past the hard limit, so the pool process is killed first."""
    worker, pids = limited
    import_documents({
        "workflow_id": "squeezed", "name": "Squeezed", "topology": "dag",
        "nodes": [{"id": "long", "agent_ref": "Sleeper"},
                  {"id": "slow_squeeze", "agent_ref": "Sleeper", "compress": True, "compress_ratio": 0.3,
                   "input_mapping": {"data_references": [{"ref_type": "task_output", "task_id": "long"}]}}],
        "transitions": [{"from": "long", "to": "slow_squeeze"}],
        "error_handling": {"retry_count": 2},
    }, actor="test")
    execution = execution_start(workflow=Workflow.objects.get(workflow_id="squeezed"))
    deadline = time.monotonic() + 30
    while not execution.node_runs.filter(node_id="slow_squeeze", status="running").exists():
        assert time.monotonic() < deadline, f"slow_squeeze never started\n{workers.logs()}"
        time.sleep(0.05)
    hold_the_run(execution, seconds=8).join()  # past the hard limit of 6 s
    deadline = time.monotonic() + 60
    while execution.status == Execution.Status.RUNNING:
        assert time.monotonic() < deadline, f"run still {execution.status}\n{workers.logs()}"
        node_runs_sweep()  # what the periodic sweep does
        time.sleep(0.5)
        execution.refresh_from_db()
    squeeze = execution.node_runs.get(node_id="slow_squeeze")
    assert (squeeze.status, squeeze.error_code) == ("failed", "NODE_TIME_LIMIT"), squeeze.error
    assert "hard time limit of 6 s" in squeeze.error
    assert squeeze.dispatches == 1, "not sent again to be killed again"
    assert execution.status == "failed" and "NODE_TIME_LIMIT" in execution.ended_reason
    log = "\n".join(path.read_text(errors="replace") for _, path, _ in workers.processes)
    # Celery acknowledges a task killed at its hard limit: it is not delivered again.
    assert log.count("Hard time limit (6.0s) exceeded for executions.run_node") == 1
    received = [line.split("run_node[")[1] for line in log.splitlines() if "run_node[" in line and "received" in line]
    assert len(received) == len(set(received)), "no task was received twice"
    (summary,) = pids_in(pids)  # the node stopped in its compression: its main call never ran
    assert_gone(summary)  # the soft limit killed the summary's command
    assert worker.poll() is None, "the worker is still up"
    # ... and its new pool process runs the next node.
    import_documents({"workflow_id": "quick", "name": "Quick", "topology": "seq",
                      "nodes": [{"id": "quick", "agent_ref": "Sleeper"}]}, actor="test")
    quick = wait_for(execution_start(workflow=Workflow.objects.get(workflow_id="quick")), timeout=30, workers=workers)
    assert quick.status == "success", quick.ended_reason
