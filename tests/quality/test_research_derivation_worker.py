"""The evolution loop with tools, end to end, on a real Celery worker against the real Redis:
an agent without the knowledge_search tool fails its node with a capability gap → the run
is evaluated and the capability-gap rule raises a derive request naming the tool → an
approver approves through the API → the worker creates the child with the tool → the same
workflow, its node's agent set to the child in a new version (as an author would), succeeds,
its node run recording the knowledge_search call."""
import pytest

from agents.models import Agent, DeriveRequest
from demo.documents import RESEARCH_QUESTION
from executions.models import NodeRun
from executions.services import execution_start
from tests.executions.conftest import wait_for
from tests.pages.test_agents import signed_in
from tests.quality.test_evaluation_worker import eventually
from workflows.models import Workflow

pytestmark = pytest.mark.integration

SEARCH = "builtin.knowledge_search"


def test_a_capability_gap_for_a_tool_derives_a_child_that_calls_it_on_a_worker(demo, api):
    demo.start(1)
    workflow = Workflow.objects.get(workflow_id="research_without_tools")
    failed = wait_for(execution_start(workflow=workflow, input={}), workers=demo)
    assert failed.status == "failed"
    gap = failed.node_runs.get(node_id="research")
    assert (gap.error_code, gap.error_details) == ("CAPABILITY_GAP", {"missing_tools": [SEARCH]})
    assert SEARCH in gap.error and gap.tool_calls == []

    request = eventually(
        lambda: DeriveRequest.objects.filter(parent_agent__agent_id="researcher_without_tools").first(), demo)
    assert (request.trigger, request.status, request.created_by) == ("capability_gap", "pending", "rule:capability_gap")
    assert request.trigger_context["missing_tools"] == [SEARCH]
    assert request.trigger_context["failures"][0] | {"error": ""} == {
        "execution_id": failed.execution_id, "node_id": "research", "node_run_id": gap.pk, "error": ""}
    page = signed_in(api.viewer.user).get(f"/derive-requests/{request.derive_request_id}/").content.decode()
    assert f'href="/executions/{failed.execution_id}/?node=research&amp;run={gap.pk}#node-panel"' in page
    assert "not available in the tool catalogue" not in page

    response = api.approver.post(f"/api/derive-requests/{request.derive_request_id}/approve", {"comment": "give it the tool"})
    assert response.status_code == 200, response.json()
    child = eventually(lambda: Agent.objects.filter(parent__agent_id="researcher_without_tools").first(), demo)
    assert child.capabilities["tools"] == [SEARCH] and child.capabilities["skills"] == ["research"]
    assert child.level == 1
    assert '<span class="muted">Not run yet.</span>' in signed_in(api.viewer.user).get(
        f"/derive-requests/{request.derive_request_id}/").content.decode()

    # No run puts another agent in a node's place (a re-run pins versions of the node's own
    # agent): the workflow's author writes a new version whose node runs the child.
    document = api.author.get("/api/workflows/research_without_tools").json()
    document["nodes"][0]["agent_ref"] = child.agent_id
    replaced = api.author.put("/api/workflows/research_without_tools", document)
    assert replaced.status_code == 200, replaced.json()
    workflow.refresh_from_db()
    assert workflow.versions.count() == 2

    answered = wait_for(execution_start(workflow=workflow, input={}), workers=demo)
    assert answered.status == "success", list(answered.node_runs.values_list("status", "error_code", "error"))
    run = answered.node_runs.get(node_id="research", status=NodeRun.Status.SUCCESS)
    assert run.agent == child
    [call] = run.tool_calls
    assert (call["name"], call["status"], call["arguments"]["query"]) == (SEARCH, "success", RESEARCH_QUESTION)
    assert len(run.turns) == 2 and run.turns[0]["tool_call_ids"] == [call["id"]]
    output = run.output
    assert output["searched"] == RESEARCH_QUESTION and output["sources"]
    assert output["sources"] == [atom["atom_id"] for atom in call["result"]["atoms"]]
    assert "h = 8 parallel attention heads" in output["answer"]

    page = signed_in(api.viewer.user).get(f"/derive-requests/{request.derive_request_id}/").content.decode()
    assert f'href="/executions/{answered.execution_id}/?node=research&amp;run={run.pk}#node-panel"' in page
