"""A cancel stops a node running on a real worker: its command backend's process and the
process that one started are ended, the node run says who cancelled it, the run is cancelled
and nothing of the node is stored after."""
import json
import sys
import time
from pathlib import Path
from unittest import mock

import pytest

from core.documents import import_documents
from core.models import AuditEntry
from executions.cancel_notices import announce
from executions.models import Execution
from tests.executions.conftest import wait_for
from tests.processes import processes

pytestmark = [pytest.mark.integration]


def long_argv(pids: Path) -> list[str]:
    """A command backend that would run for ten minutes: it starts a child that sleeps as
    long, writes both pids to `pids`, and sleeps."""
    return [sys.executable, "-c",
            "import os, subprocess, sys, time\n"
            "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
            f"with open({str(pids)!r}, 'w') as out:\n"
            "    out.write(f'{os.getpid()} {child.pid}')\n"
            "sys.stdin.read()\n"
            "time.sleep(600)\n"]


DOCUMENTS = [
    {"agent_id": "Patient", "name": "Patient", "version": "1.0.0", "type": "business", "status": "active",
     "prompt_config": {"system_prompt": "Take all the time you need."}, "capabilities": {"skills": ["wait"]},
     "runtime": {"backend": "command"}},
    {"workflow_id": "long_step", "name": "Long step", "topology": "seq",
     "nodes": [{"id": "only", "agent_ref": "Patient"}], "error_handling": {"retry_count": 0}},
]


def alive(pid: int) -> bool:
    return any(process.pid == pid and process.state not in "ZX" for process in processes())


def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.mark.parametrize("told_by", ["notice", "heartbeat"])
def test_a_cancel_through_the_api_kills_the_running_command_and_its_child(workers, settings, tmp_path, api, told_by):
    """Told by the cancel's notice over Redis, the worker stops the node at once, its
    heartbeat a minute away; with no notice sent, at its next heartbeat (every 0.5 s here)."""
    pids = tmp_path / "pids"
    argv = long_argv(pids)
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "command": {"kind": "command", "argv": argv}}
    import_documents(DOCUMENTS, actor="test")
    heartbeat = "60" if told_by == "notice" else "0.5"
    workers.start(1, COMMAND_BACKEND_ARGV=json.dumps(argv), NODE_HEARTBEAT_SECONDS=heartbeat)
    started = api.author.post("/api/executions", {"workflow_id": "long_step"})
    assert started.status_code == 201, started.content
    execution_id = started.json()["execution_id"]
    wait_until(lambda: pids.exists() and len(pids.read_text().split()) == 2, 60, "the command and its child to start")
    command, child = map(int, pids.read_text().split())
    assert alive(command) and alive(child)

    with mock.patch("executions.cancel_notices.announce", wraps=None if told_by == "heartbeat" else announce):
        cancelled = api.author.post(f"/api/executions/{execution_id}/cancel")
    assert cancelled.status_code == 200, cancelled.content

    # The worker's heartbeat, woken or on time, finds the node run cancelled and kills the group.
    wait_until(lambda: not alive(command) and not alive(child), 20, "the command and its child to be killed")
    execution = Execution.objects.get(execution_id=execution_id)
    execution = wait_for(execution, statuses=("cancelled",), workers=workers)
    assert execution.ended_reason == "cancelled by author-user"
    (node_run,) = api.viewer.record(execution_id)["node_runs"]
    assert (node_run["status"], node_run["error_code"], node_run["error"]) == (
        "cancelled", "CANCELLED", "cancelled by author-user")
    assert node_run["error_details"] == {"cancelled_by": "author-user"}
    assert execution.node_runs.get().completed_at is not None
    entry = AuditEntry.objects.get(action="execution.cancel", object_id=execution_id)
    assert (entry.actor_name, entry.via, entry.before, entry.after) == (
        "author-user", "api_token", {"status": "running"}, {"status": "cancelled"})
