"""What people do to runs is on the audit trail, once each: a gate's decision (and its
time-out), an escalated run resumed, retried or aborted, a re-run; node runs run in this
process."""
from datetime import timedelta

import pytest

from core.models import AuditEntry
from executions.services import execution_start, node_runs_sweep
from tests.executions.conftest import drain
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def demo(in_process):
    return in_process


def waiting_release():
    execution = drain(execution_start(workflow=Workflow.objects.get(workflow_id="release_review"),
                                      input={"topic": "Switchyard 2.1"}))
    assert execution.status == "waiting"
    return execution, execution.node_runs.get(node_id="approve", status="waiting")


def time_out(execution):
    """Nobody decides the waiting gate: on_timeout escalates the run."""
    gate = execution.node_runs.get(node_id="approve", status="waiting")
    node_runs_sweep(now=gate.decide_by + timedelta(seconds=1))
    execution.refresh_from_db()
    assert execution.status == "escalated"
    return gate


def entries(execution, action: str) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(object_type="execution", object_id=execution.execution_id, action=action))


def test_a_gates_decision_is_recorded_with_who_decided_it_and_why(api):
    execution, gate = waiting_release()

    answer = api.approver.post(f"/api/executions/{execution.execution_id}/node-runs/{gate.pk}/decision",
                               {"decision": "reject", "comment": "not before the freeze"})

    assert answer.status_code == 200, answer.json()
    (entry,) = entries(execution, "gate.decide")
    assert (entry.actor_name, entry.via) == ("approver-user", "api_token")
    assert entry.before == {"node_id": "approve", "node_run": gate.pk, "status": "waiting"}
    assert entry.after == {"node_id": "approve", "node_run": gate.pk, "decision": "reject",
                           "decided_by": "approver-user", "comment": "not before the freeze"}


def test_a_time_out_a_retry_an_abort_and_a_resume_are_recorded_once_each(api):
    execution, _ = waiting_release()
    gate = time_out(execution)
    (timed_out,) = entries(execution, "gate.time_out")
    assert (timed_out.actor_id, timed_out.via, timed_out.after["decision"]) == (None, "system", "escalate")
    assert timed_out.after["node_run"] == gate.pk

    assert api.author.post(f"/api/executions/{execution.execution_id}/retry").status_code == 200
    (retried,) = entries(execution, "execution.retry")
    assert (retried.actor_name, retried.before) == ("author-user", {"status": "escalated", "escalated_at": "approve"})
    assert retried.after["status"] == "waiting" and retried.after["node_id"] == "approve"

    time_out(execution)
    assert api.author.post(f"/api/executions/{execution.execution_id}/abort").status_code == 200
    (aborted,) = entries(execution, "execution.abort")
    assert (aborted.actor_name, aborted.after) == ("author-user", {"status": "failed", "node_id": "approve"})

    other, _ = waiting_release()
    time_out(other)
    output = {"draft": "Release notes, given by an approver after the time-out."}
    assert api.admin.post(f"/api/executions/{other.execution_id}/resume", {"output": output}).status_code == 200
    (resumed,) = entries(other, "execution.resume")
    assert (resumed.actor_name, resumed.via, resumed.after["output"]) == ("admin-user", "api_token", output)


def test_a_rerun_is_recorded_on_the_run_it_comes_from_naming_the_new_run(api):
    source = drain(execution_start(workflow=Workflow.objects.get(workflow_id="thesis_reading"), input={}))
    edited = {"validation_results": [{"atom_id": "x"}]}

    response = api.author.post(f"/api/executions/{source.execution_id}/rerun",
                               {"from_node": "task_vault_001", "outputs": {"task_validator_001": edited}})

    assert response.status_code == 201, response.json()
    (entry,) = entries(source, "execution.rerun")
    assert (entry.actor_name, entry.via, entry.before) == ("author-user", "api_token", {"status": source.status})
    assert entry.after == {"rerun": response.json()["execution_id"], "from_node": "task_vault_001", "step": None,
                           "edited": {"task_validator_001": edited}, "pinned": {}}
