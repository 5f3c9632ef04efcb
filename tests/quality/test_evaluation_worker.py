"""Evaluations and derivations end to end on a real Celery worker against the real Redis:
a run ends → the worker evaluates it → the rules raise derive requests → an approver
decides through the API (a request for a tool the catalogue lacks cannot be approved)."""
import time

import pytest

from agents.models import Agent, DeriveRequest
from executions.models import Evaluation
from executions.services import execution_resume, execution_start
from tests.executions.conftest import approve_gate, wait_for
from workflows.models import Workflow

pytestmark = pytest.mark.integration


def eventually(find, workers, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        found = find()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"nothing after {timeout}s\n{workers.logs()}")
        time.sleep(0.1)


def test_it_evaluates_runs_raises_requests_and_derives_the_approved_child_on_a_worker(demo, api):
    demo.start(1)
    analysis = wait_for(execution_start(workflow=Workflow.objects.get(workflow_id="parallel_analysis"),
                                        input={"repository": "acme"}), workers=demo)
    assert analysis.status == "success"
    evaluation = eventually(lambda: Evaluation.objects.filter(execution=analysis, target_type="execution").first(), demo)
    assert evaluation.method == "computed" and evaluation.passed
    assert evaluation.details["accuracy"]["judge"]["agent_id"] == "Judge"
    analysis.refresh_from_db()
    assert analysis.quality_gate["passed"] is True
    assert api.viewer.get("/api/evaluations", target_id=analysis.execution_id).json()["count"] == 1
    record = api.viewer.get(f"/api/executions/{analysis.execution_id}").json()
    assert (record["domain"], record["quality_gate"]["evaluation_id"]) == ("software_engineering", evaluation.evaluation_id)

    review = wait_for(execution_start(workflow=Workflow.objects.get(workflow_id="release_review"),
                                      input={"topic": "v2.0"}), workers=demo)
    review = wait_for(approve_gate(review), statuses=("escalated", "failed", "success"), workers=demo)
    assert review.status == "escalated"  # the compliance node needs the legal_database tool
    execution_resume(execution=review, output={"compliant": True, "by": "a person"})
    assert wait_for(review, statuses=("success", "failed"), workers=demo).status == "success"
    request = eventually(lambda: DeriveRequest.objects.filter(parent_agent__agent_id="Compliance_Checker").first(), demo)
    assert (request.trigger, request.status, request.created_by) == ("capability_gap", "pending", "rule:capability_gap")
    assert request.trigger_context["missing_tools"] == ["legal_database"]
    assert not Agent.objects.filter(parent__agent_id="Compliance_Checker").exists()  # nothing before approval

    # legal_database is no tool of the catalogue: a child could not call it, so the request
    # cannot be approved as it is (the child a worker creates for an approval:
    # test_research_derivation_worker.py).
    response = api.approver.post(f"/api/derive-requests/{request.derive_request_id}/approve", {"comment": "go"})
    assert response.status_code == 422 and response.json()["details"]["tools"] == ["legal_database"]
    request.refresh_from_db()
    assert request.status == "pending"
    response = api.approver.post(f"/api/derive-requests/{request.derive_request_id}/reject", {"comment": "no such tool"})
    assert response.status_code == 200, response.json()
    history = api.viewer.get(f"/api/derive-requests/{request.derive_request_id}").json()["history"]
    assert [(e["event"], e["actor"]) for e in history] == [("raised", "rule:capability_gap"), ("rejected", "approver-user")]
    assert not Agent.objects.filter(parent__agent_id="Compliance_Checker").exists()
