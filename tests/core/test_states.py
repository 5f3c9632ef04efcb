import json
import subprocess
import sys
from pathlib import Path

import pytest

from agents.models import Agent, DeriveRequest
from core.errors import IllegalTransition
from core.states import change_status
from executions.models import Execution, NodeRun
from workflows.models import Workflow

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "machine,current,new,allowed",
    [
        (Execution.STATES, "pending", "running", True),
        (Execution.STATES, "running", "escalated", True),
        (Execution.STATES, "escalated", "running", True),
        (Execution.STATES, "success", "running", False),
        (Execution.STATES, "pending", "success", False),
        (NodeRun.STATES, "running", "pending", True),
        (NodeRun.STATES, "success", "failed", False),
        (NodeRun.STATES, "pending", "success", False),
        (DeriveRequest.STATES, "pending", "approved", True),
        (DeriveRequest.STATES, "approved", "approved", False),
        (DeriveRequest.STATES, "rejected", "approved", False),
        (Agent.STATES, "deprecated", "inactive", False),
    ],
)
def test_it_allows_exactly_the_transitions_of_each_machine(machine, current, new, allowed):
    if allowed:
        machine.check(current, new)
    else:
        with pytest.raises(IllegalTransition, match=f"cannot go from '{current}' to '{new}'"):
            machine.check(current, new)


def test_it_refuses_unknown_statuses():
    with pytest.raises(IllegalTransition, match="unknown status 'done'"):
        Execution.STATES.check("running", "done")


@pytest.mark.django_db
def test_it_claims_the_row_so_only_one_of_two_movers_wins():
    from core.documents import import_documents

    import_documents([{"agent_id": "a", "name": "A"}, {"workflow_id": "w", "name": "W", "topology": "seq", "nodes": [{"id": "n", "agent_ref": "a"}]}])
    execution = Execution.objects.create(execution_id="e1", workflow=Workflow.objects.get(workflow_id="w"))
    first, second = Execution.objects.get(pk=execution.pk), Execution.objects.get(pk=execution.pk)
    change_status(first, Execution.STATES, "running")
    with pytest.raises(IllegalTransition) as caught:
        change_status(second, Execution.STATES, "running")
    assert caught.value.code == "CONFLICT"
    assert Execution.objects.get(pk=execution.pk).status == "running"


def test_it_exits_non_zero_with_the_problem_when_an_import_fails(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "SWITCHYARD_DATA_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    bad = json.dumps({"agent_id": "a", "name": "A", "type": "robot"})
    result = subprocess.run(
        [sys.executable, "manage.py", "import_document", "-"], cwd=ROOT, env=env, input=bad, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert "document (agent 'a').type: 'robot' is not one of ['meta', 'business']; nothing was imported" in result.stderr
