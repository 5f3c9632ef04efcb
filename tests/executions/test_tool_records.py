"""A node run's turns and tool calls on its record: exported in the §5 document, imported
back (checked like the rest of it), and given by the API."""
import copy

import pytest

from core.errors import DocumentError
from executions.documents import execution_document
from executions.models import Execution
from executions.services.document_import import execution_import_document
from tests.executions.conftest import drain
from tests.executions.node_kinds.test_tool_loop import atoms, run  # noqa: F401 - `atoms` is a fixture

pytestmark = pytest.mark.django_db


@pytest.fixture
def searched(atoms):  # noqa: F811 - the fixture imported above
    """A run whose one node searched the knowledge base once, then answered."""
    execution, node = run("tool_test_search", {"q": "context window budget"})
    assert execution.status == "success", execution.ended_reason
    return execution, node


def test_the_export_carries_the_turns_and_calls_and_an_import_brings_them_back_whole(searched):
    execution, node = searched
    document = execution_document(execution)
    [result] = document["results"]
    assert result["turns"] == node.turns and result["tool_calls"] == node.tool_calls
    assert len(result["turns"]) == 2 and result["tool_calls"][0]["name"] == "builtin.knowledge_search"

    copied = {**copy.deepcopy(document), "execution_id": "tools_copied"}
    imported, outcome = execution_import_document(copied)
    assert outcome == "created"
    [again] = imported.node_runs.all()
    assert (again.turns, again.tool_calls) == (node.turns, node.tool_calls)
    assert execution_document(imported) == copied
    assert execution_import_document(copied)[1] == "unchanged"  # the same record again changes nothing


def copied(execution, execution_id):
    """`execution` exported, imported back under another id, and its one node run there."""
    imported, outcome = execution_import_document({**execution_document(execution), "execution_id": execution_id})
    assert outcome == "created"
    return imported.node_runs.get()


def test_a_call_waiting_for_a_persons_approval_and_then_approved_travels_too(atoms, api):  # noqa: F811
    execution, node = run("tool_test_search", {"q": "context window"},
                          tools_needing_approval=["builtin.knowledge_search"])
    assert [call["status"] for call in node.tool_calls] == ["awaiting_approval"]
    assert copied(execution, "tools_waiting").tool_calls == node.tool_calls  # not run: no server, no result yet

    url = f"/api/executions/{execution.execution_id}/node-runs/{node.pk}/decision"
    assert api.author.post(url, {"decision": "approve"}).status_code == 200
    execution = drain(execution)
    node.refresh_from_db()
    [call] = node.tool_calls
    assert call["approved_by"] == "author-user" and call["decision"]["decision"] == "approve"
    assert copied(execution, "tools_approved").tool_calls == node.tool_calls


def test_a_node_run_without_tools_is_exported_as_the_seed_has_it(searched):
    execution, _ = searched
    execution.node_runs.update(turns=[], tool_calls=[])
    [result] = execution_document(execution)["results"]
    assert set(result) == {"node_id", "agent_ref", "status", "output", "duration_ms"}


def imported_with(document, change):
    """Import `document` under a new id after `change(result)` edits its one result."""
    document = {**copy.deepcopy(document), "execution_id": "tools_changed"}
    change(document["results"][0])
    return execution_import_document(document)


@pytest.mark.parametrize(("change", "where", "message"), [
    (lambda r: r["tool_calls"][0].update(status="success", error_code="TOOL_ERROR"),
     "results[0].tool_calls[0].error_code", "does not agree with status"),
    (lambda r: r["tool_calls"][0].update(status="boom"), "results[0].tool_calls[0].status", "does not match"),
    (lambda r: r["tool_calls"][0].update(status="awaiting_approval", error_code="TOOL_ERROR"),
     "results[0].tool_calls[0].error_code", "a successful or waiting call has none"),
    (lambda r: r["tool_calls"][0].update(result_digest="md5:x"), "results[0].tool_calls[0].result_digest", "match"),
    (lambda r: r["tool_calls"][0].update(colour="red"), "results[0].tool_calls[0]", "'colour' was unexpected"),
    (lambda r: r["tool_calls"][0].update(turn=2), "results[0].tool_calls[0].turn", "does not list tool call"),
    (lambda r: r["tool_calls"].append(dict(r["tool_calls"][0])), "results[0].tool_calls[1].id", "used twice"),
    (lambda r: r["tool_calls"][0].update(result_kept=False), "results[0].tool_calls[0].result", "result_kept is false"),
    (lambda r: r["tool_calls"][0].update(started_at="yesterday"), "results[0].tool_calls[0].started_at",
     "not an ISO 8601 datetime"),
    (lambda r: r["turns"][1].update(turn=3), "results[0].turns[1].turn", "expected 2"),
    (lambda r: r["turns"][0].update(text="x" * 2001), "results[0].turns[0].text", "is too long"),
    (lambda r: r.update(turns=[]), "results[0].turns", "no turns"),
])
def test_an_imported_conversation_that_does_not_hold_together_is_refused_naming_where(searched, change, where,
                                                                                        message):
    document = execution_document(searched[0])
    with pytest.raises(DocumentError, match=message) as refused:
        imported_with(document, change)
    assert refused.value.where == where
    assert not Execution.objects.filter(execution_id="tools_changed").exists()


def test_the_api_gives_a_node_runs_turns_and_calls_whole_and_the_light_record_without_them(searched, api):
    execution, node = searched
    path = f"/api/executions/{execution.execution_id}/node-runs"
    whole = api.viewer.get(f"{path}/{node.pk}").json()
    assert whole["turns"] == node.turns and whole["tool_calls"] == node.tool_calls
    [light] = api.viewer.get(path).json()["items"]
    assert "tool_calls" not in light and "turns" not in light
    everything = api.viewer.get(f"/api/executions/{execution.execution_id}", node_runs="all").json()
    assert everything["results"][0]["tool_calls"] == node.tool_calls
    assert everything["node_runs"][0]["turns"] == node.turns


def test_the_timeline_marks_each_tool_call_of_a_node_run_without_its_arguments_or_result(searched, api):
    execution, node = searched
    [drawn] = api.viewer.get(f"/api/executions/{execution.execution_id}/timeline").json()["node_runs"]
    [call] = node.tool_calls
    assert drawn["tool_call_marks"] == [{"name": "builtin.knowledge_search", "status": "success",
                                         "started_at": call["started_at"], "duration_ms": call["duration_ms"]}]
