"""Gates on a real Celery worker against the real Redis: the release review's gate approved
through the API, rejected through the command (the loop asks again), timed out by the
deployed sweep; two gates of parallel branches decided independently."""
import json

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command

from core.documents import import_documents
from executions.services import execution_start
from tests.executions.conftest import wait_for
from tests.executions.test_gates import PARALLEL
from tests.workflow_edits import edit_workflow
from workflows.models import Workflow

pytestmark = pytest.mark.integration


def start(workflow_id, **input):
    return execution_start(workflow=Workflow.objects.get(workflow_id=workflow_id), input=input)


def trail(execution):
    return [(r.node_id, r.status) for r in execution.node_runs.order_by("sequence", "id")]


def test_the_release_review_gate_approved_through_the_api_goes_on_to_publish(demo, api):
    demo.start(1)
    execution = wait_for(start("release_review", topic="v2.1"), workers=demo)
    assert execution.status == "waiting", execution.ended_reason
    assert trail(execution)[-1] == ("approve", "waiting")
    gate = execution.node_runs.get(node_id="approve")
    assert gate.worker == "" and gate.dispatches == 0  # a person's step: no worker took it

    (pending,) = api.approver.get("/api/gates").json()["items"]
    answer = api.approver.post(f"/api/executions/{execution.execution_id}/node-runs/{pending['node_run_id']}/decision",
                               {"decision": "approve", "comment": "ship it"})
    assert answer.status_code == 200, answer.json()

    execution = wait_for(execution, statuses=("escalated", "failed", "success"), workers=demo)
    assert execution.status == "escalated" and execution.escalation["node_id"] == "compliance"
    publish = execution.node_runs.filter(node_id="publish", status="success").get()
    assert publish.worker and execution.state["published_at"]
    assert execution.state["draft"] == pending["shown"]["draft"]


def test_a_rejection_through_the_command_loops_back_to_the_drafter_and_asks_again(demo, api, capsys):
    demo.start(1)
    execution = wait_for(start("release_review", topic="v2.2"), workers=demo)
    assert execution.status == "waiting"

    call_command("decide_gate", execution.execution_id, "approve", "reject", "--as", "approver-user",
                 "--comment", "name the breaking change")
    assert "approve: reject by approver-user" in capsys.readouterr().out

    execution = wait_for(execution, statuses=("waiting", "failed", "escalated"), workers=demo)
    assert execution.status == "waiting", execution.ended_reason
    nodes = trail(execution)
    first = nodes.index(("approve", "failed"))
    assert nodes[first + 1:] == [("draft", "success"), ("review", "success"), ("approve", "waiting")]
    call_command("gates", "--user", "approver-user")
    (pending,) = json.loads(capsys.readouterr().out)
    assert pending["execution_id"] == execution.execution_id


def test_a_gate_nobody_decides_escalates_when_the_deployed_sweep_finds_it_past_its_time_out(demo):
    edit_workflow("release_review", lambda document: next(
        node for node in document["nodes"] if node["id"] == "approve")["gate"].update(timeout_seconds=1))
    demo.start(1, beat=True, SWEEP_EVERY_SECONDS="1")
    execution = wait_for(start("release_review", topic="v2.3"), workers=demo)
    assert execution.status in ("waiting", "escalated"), execution.ended_reason

    execution = wait_for(execution, statuses=("escalated", "failed", "success"), timeout=30, workers=demo)

    assert execution.status == "escalated", execution.ended_reason
    assert execution.escalation["node_id"] == "approve" and execution.escalation["error_code"] == "GATE_TIMEOUT"
    gate = execution.node_runs.get(node_id="approve")
    assert gate.gate["timed_out"] is True and gate.gate["decision"] == "escalate"


def test_two_gates_in_parallel_branches_are_decided_independently(demo, api, capsys):
    import_documents([PARALLEL], actor="test")
    for name in ("lea", "max"):
        User.objects.create_user(username=name, password="a long password")
    demo.start(1)
    execution = wait_for(start("launch_signoff", topic="launch"), workers=demo)
    assert execution.status == "waiting", execution.ended_reason
    legal, marketing = (execution.node_runs.get(node_id=node_id) for node_id in ("legal", "marketing"))
    assert {legal.status, marketing.status} == {"waiting"}

    call_command("decide_gate", execution.execution_id, "legal", "approve", "--as", "lea")
    execution.refresh_from_db()
    assert execution.status == "waiting" and not execution.node_runs.filter(node_id="publish").exists()
    marketing.refresh_from_db()
    assert marketing.status == "waiting"

    max_ = User.objects.get(username="max")
    max_.groups.add(Group.objects.get_or_create(name="viewer")[0])
    call_command("decide_gate", execution.execution_id, "marketing", "approve", "--as", "max")
    execution = wait_for(execution, statuses=("success", "failed", "escalated"), workers=demo)
    assert execution.status == "success", execution.ended_reason
    assert execution.node_runs.get(node_id="publish").worker
