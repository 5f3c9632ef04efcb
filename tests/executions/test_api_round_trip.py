"""The API end to end, with a real Celery worker on the real Redis: a workflow created
through the API runs to success; an escalated run is resumed through the API and ends."""
import time

import pytest

from tests.replay import load_demo

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

ENDED = ("success", "failed", "cancelled")

ROUND_TRIP = {
    "workflow_id": "api_round_trip",
    "name": "API round trip",
    "topology": "seq",
    "nodes": [
        {"id": "analyse", "agent_ref": "Code_Analyzer", "input_mapping": {"repository": "$.input.repository"}},
        {"id": "draft", "agent_ref": "Drafter", "input_mapping": {"topic": "$.input.repository"},
         "output_mapping": {"draft": "$.text"}},
        {"id": "review", "agent_ref": "Reviewer", "input_mapping": {"draft": "$.state.draft"}},
    ],
    "transitions": [{"from": "analyse", "to": "draft"}, {"from": "draft", "to": "review"}],
}


@pytest.fixture
def demo(workers, settings, tmp_path):
    """The demo data, and one worker."""
    settings.WORKSPACE_ROOT = tmp_path
    workers.env["WORKSPACE_ROOT"] = str(tmp_path)
    load_demo(tmp_path)
    workers.start(1)
    return workers


def poll(client, execution_id, until, workers, timeout=60):
    """Read the run through the API until its status is one of `until`."""
    deadline = time.monotonic() + timeout
    while True:
        record = client.record(execution_id)
        if record["status"] in until:
            return record
        if time.monotonic() > deadline:
            raise AssertionError(f"{execution_id} still {record['status']} after {timeout}s\n{workers.logs()}")
        time.sleep(0.1)


def test_it_runs_a_workflow_created_through_the_api_to_success(demo, api):
    created = api.author.post("/api/workflows", ROUND_TRIP)
    assert created.status_code == 201, created.json()

    started = api.author.post("/api/executions", {"workflow_id": "api_round_trip", "input": {"repository": "switchyard"}})
    assert started.status_code == 201, started.json()
    record = poll(api.viewer, started.json()["execution_id"], ENDED, demo)

    assert record["status"] == "success", (record["ended_reason"], demo.logs())
    assert [run["node_id"] for run in record["node_runs"]] == ["analyse", "draft", "review"]
    for run in record["node_runs"]:
        assert (run["status"], run["backend"], run["kind"]) == ("success", "builtin", "first")
        assert run["worker"] and run["duration_ms"] is not None and run["context_management"] is not None
    assert [r["status"] for r in record["results"]] == ["success"] * 3
    assert record["state"]["draft"].startswith("Release notes for switchyard")
    summary = api.viewer.get("/api/executions", workflow="api_round_trip").json()["items"][0]
    assert summary["node_runs"]["success"] == 3 and summary["completed_at"]


def test_it_resumes_an_escalated_run_through_the_api_until_it_ends(demo, api):
    started = api.author.post("/api/executions", {"workflow_id": "release_review", "input": {"topic": "v2.0"}})
    assert started.status_code == 201, started.json()
    execution_id = started.json()["execution_id"]
    # An approver approves the draft at the gate, through the API too.
    record = poll(api.viewer, execution_id, ("waiting", "escalated", *ENDED), demo)
    assert record["status"] == "waiting", (record["ended_reason"], demo.logs())
    gate = next(run for run in record["node_runs"] if run["status"] == "waiting")
    decided = api.approver.post(f"/api/executions/{execution_id}/node-runs/{gate['node_run_id']}/decision",
                                {"decision": "approve"})
    assert decided.status_code == 200, decided.json()
    # Publishing fails, is retried, falls back; the compliance check then fails and escalates.
    record = poll(api.viewer, execution_id, ("escalated", *ENDED), demo)
    assert record["status"] == "escalated", (record["ended_reason"], demo.logs())
    assert (record["escalation"]["node_id"], record["escalation"]["escalate_to"]) == ("compliance", "Orchestrator")
    kinds = [(run["node_id"], run["kind"], run["status"]) for run in record["node_runs"] if run["node_id"] == "publish"]
    assert kinds[0] == ("publish", "first", "failed") and kinds[-1] == ("publish", "fallback", "success")

    resumed = api.author.post(f"/api/executions/{execution_id}/resume", {"output": {"compliant": True, "by": "a person"}})
    assert resumed.status_code == 200, resumed.json()
    record = poll(api.viewer, execution_id, ENDED, demo)
    assert record["status"] == "success" and record["escalation"] is None
    last = record["node_runs"][-1]
    assert (last["node_id"], last["kind"], last["output"]) == ("compliance", "manual", {"compliant": True, "by": "a person"})
    assert api.author.post(f"/api/executions/{execution_id}/resume", {"output": {}}).status_code == 409
