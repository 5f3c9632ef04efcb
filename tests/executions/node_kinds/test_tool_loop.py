"""A node whose agent has tools, run in this process: the builtin backend asks for calls
(skills registered here), the loop runs them through the catalogue, and the node run's
record says what happened, turn by turn."""
import pytest

from agents.backends import BackendError, ToolRequest
from agents.backends.builtin import SKILLS, register_skill
from agents.services import agent_import_document
from demo.documents import _agent
from executions.services import execution_start
from knowledge.models import KnowledgeAtom, Paper
from tests.executions.conftest import drain
from workflows.services import workflow_import_document

pytestmark = pytest.mark.django_db


def results(request):
    return [message for message in request.transcript if message["role"] == "tool"]


def search_then_answer(request):
    """Search the question's words once, then answer with the atoms found."""
    done = results(request)
    if not done:
        query = request.execution_input.get("q", "")
        return ToolRequest([{"name": "builtin.knowledge_search", "arguments": {"query": query}}])
    found = done[-1]
    if found["status"] != "success":
        return {"answer": None, "failed": found["status"], "error": found["content"]["error"]["message"]}
    return {"answer": [atom["atom_id"] for atom in found["content"]["atoms"]]}


def call_as_told(request):
    """Call what the execution input says, once per turn, `turns` times; then answer."""
    done = results(request)
    if len(done) < request.execution_input.get("turns", 1):
        return ToolRequest([dict(call) for call in request.execution_input.get("calls", [])])
    return {"statuses": [message["status"] for message in done]}


# Registered once a process collects this module; like every skill, each answers any request
# (the builtin's tests call every registered skill), the same way each time.
for _name, _skill in (("tool_test_search", search_then_answer), ("tool_test_call", call_as_told)):
    register_skill(_name, _skill)


def run(skill, input, *, tools=("builtin.knowledge_search",), **runtime):
    agent = _agent("tool_tester", "Tool tester", skills=[skill])
    agent["capabilities"]["tools"] = list(tools)
    agent["runtime"].update(runtime)
    agent_import_document(agent)
    workflow, _ = workflow_import_document({
        "workflow_id": "tool_test", "name": "Tools", "topology": "seq",
        "nodes": [{"id": "ask", "agent_ref": "tool_tester"}],
        "error_handling": {"retry_count": 0, "fallback_agent": None, "escalate_to": None}})
    execution = drain(execution_start(workflow=workflow, input=input))
    return execution, execution.node_runs.get(node_id="ask")


@pytest.fixture
def atoms(in_process):
    paper = Paper.objects.create(paper_id="p_tools", title="Budgets")
    for number, text in enumerate(["Trimming keeps the context window within budget.",
                                   "A context window counts tokens.", "Unrelated gardening advice."], start=1):
        KnowledgeAtom.objects.create(atom_id=f"a_tools_{number}", paper=paper, atom_type="claim", content=text,
                                     confidence=0.5 + number / 10)


def test_it_calls_the_tool_the_model_asks_for_and_answers_from_its_result(atoms):
    execution, node = run("tool_test_search", {"q": "context window budget"})
    assert execution.status == "success", execution.ended_reason
    assert node.output == {"answer": ["a_tools_1", "a_tools_2"]}  # most terms first
    [call] = node.tool_calls
    assert (call["name"], call["server"], call["tool"], call["status"], call["turn"]) == (
        "builtin.knowledge_search", "builtin", "knowledge_search", "success", 1)
    assert call["arguments"] == {"query": "context window budget"}
    assert call["result"]["found"] == 2 and call["result_digest"].startswith("sha256:")
    assert call["result_tokens"] > 0 and call["duration_ms"] >= 0 and '"a_tools_1"' in call["result_preview"]
    first, second = node.turns
    assert first["tool_call_ids"] == [call["id"]] and second["tool_call_ids"] == []
    assert second["context"]["resolution"]["within_limit"]
    assert node.tokens_in == first["tokens_in"] + second["tokens_in"] > 0
    assert [entry["purpose"] for entry in node.calls] == ["node, turn 1", "node, turn 2"]  # both model calls are paid


def test_a_call_whose_arguments_break_the_schema_is_returned_to_the_model_as_an_error(atoms):
    calls = [{"name": "builtin.knowledge_search", "arguments": {"query": "x", "colour": "red"}},
             {"name": "builtin.nothing_here", "arguments": {}}]
    execution, node = run("tool_test_call", {"calls": calls})
    assert execution.status == "success", execution.ended_reason
    assert node.output == {"statuses": ["TOOL_ARGUMENTS_INVALID", "TOOL_UNAVAILABLE"]}
    invalid, unknown = node.tool_calls
    assert invalid["error_code"] == "TOOL_ARGUMENTS_INVALID" and "'colour' was unexpected" in invalid["error"]
    assert invalid["result"] is None and unknown["error_code"] == "TOOL_UNAVAILABLE"


def test_a_model_that_never_stops_calling_fails_the_node_at_max_tool_calls(atoms):
    calls = [{"name": "builtin.knowledge_search", "arguments": {"query": "context"}}]
    execution, node = run("tool_test_call", {"calls": calls, "turns": 100})
    assert execution.status == "failed"
    assert node.status == "failed" and node.error_code == "TOOL_LOOP_LIMIT"
    assert len(node.tool_calls) == 8 and len(node.turns) == 9  # the ninth turn asked again
    assert "max_tool_calls" in node.error


def test_when_the_last_calls_all_failed_the_node_fails_with_their_code(atoms):
    calls = [{"name": "builtin.knowledge_search", "arguments": {"query": "--"}}]  # no word to search for
    execution, node = run("tool_test_call", {"calls": calls, "turns": 100})
    assert node.error_code == "TOOL_ERROR" and "all failed" in node.error


def test_a_tool_the_agent_names_but_the_catalogue_lacks_is_a_capability_gap(atoms):
    calls = [{"name": "legal_database", "arguments": {}}]
    execution, node = run("tool_test_call", {"calls": calls}, tools=["legal_database", "builtin.knowledge_search"])
    assert node.error_code == "CAPABILITY_GAP" and node.error_details == {"missing_tools": ["legal_database"]}


def test_a_large_result_is_passed_by_reference_with_a_preview_and_kept_on_the_record(in_process, settings):
    words = " ".join(f"word{n}" for n in range(5_000))  # about 15K tokens, 44 KB
    (settings.WORKSPACE_ROOT / "big.txt").write_text(words)
    calls = [{"name": "builtin.read_file", "arguments": {"path": "big.txt"}}]
    execution, node = run("tool_test_call", {"calls": calls}, tools=["builtin.*"])
    assert execution.status == "success", execution.ended_reason
    [call] = node.tool_calls
    [action] = node.turns[1]["context"]["resolution"]["actions"]
    assert (action["action"], action["data"]) == ("reference", f"builtin.read_file result ({call['id']})")
    assert action["original_tokens"] > 10_000 > action["reduced_tokens"] == call["result_tokens"]
    assert call["result"] == words  # kept whole on the record (under its cap)


def test_an_agent_without_tools_asked_to_call_one_fails_with_a_capability_gap(in_process):
    calls = [{"name": "builtin.read_file", "arguments": {"path": "a.txt"}}]
    execution, node = run("tool_test_call", {"calls": calls}, tools=[])
    assert node.error_code == "CAPABILITY_GAP" and node.error_details == {"missing_tools": ["builtin.read_file"]}


def test_a_skill_raising_a_gap_is_recorded_as_before(in_process, monkeypatch):
    def needs_legal_database(request):
        raise BackendError("needs legal_database", code="CAPABILITY_GAP", retryable=False,
                           details={"missing_tools": ["legal_database"]})

    monkeypatch.setitem(SKILLS, "tool_test_gap", needs_legal_database)
    execution, node = run("tool_test_gap", {})
    assert node.error_code == "CAPABILITY_GAP" and node.turns == [] and node.tool_calls == []


def test_a_call_that_needs_approval_waits_for_a_person_then_goes_on_without_asking_the_model_again(atoms, api):
    execution, node = run("tool_test_search", {"q": "context window"},
                          tools_needing_approval=["builtin.knowledge_search"])
    assert (execution.status, node.status) == ("waiting", "waiting")
    asked = {"id": node.turns[0]["tool_call_ids"][0], "name": "builtin.knowledge_search",
             "arguments": {"query": "context window"}}
    assert node.gate["kind"] == "tool_call" and node.gate["shown"] == {"calls": [asked]}
    assert node.gate["decisions"] == ["approve", "reject"] and node.gate["decision"] is None
    assert [call["status"] for call in node.tool_calls] == ["awaiting_approval"] and len(node.calls) == 1
    url = f"/api/executions/{execution.execution_id}/node-runs/{node.pk}/decision"
    assert api.viewer.post(url, {"decision": "approve"}).status_code == 403  # authors decide by default

    assert api.author.post(url, {"decision": "approve"}).status_code == 200
    execution = drain(execution)
    node.refresh_from_db()
    assert (execution.status, node.status, node.output) == ("success", "success", {"answer": ["a_tools_2", "a_tools_1"]})
    [call] = node.tool_calls
    assert (call["status"], call["approved_by"], call["decision"]["decision"]) == ("success", "author-user", "approve")
    assert len(node.turns) == 2 and len(node.calls) == 2  # the first turn was not asked again
    assert node.gate["decided_by"] == "author-user"


def test_a_rejected_call_is_answered_to_the_model_as_rejected_with_the_persons_words(atoms, api):
    execution, node = run("tool_test_search", {"q": "context window"},
                          tools_needing_approval=["builtin.knowledge_search"])
    answer = api.author.post(f"/api/executions/{execution.execution_id}/node-runs/{node.pk}/decision",
                             {"decision": "reject", "comment": "not on this data"})
    assert answer.status_code == 200, answer.json()
    execution = drain(execution)
    node.refresh_from_db()
    assert node.output == {"answer": None, "failed": "TOOL_CALL_REJECTED",
                           "error": "rejected by author-user: not on this data"}
    assert node.tool_calls[0]["approved_by"] is None and node.tool_calls[0]["status"] == "TOOL_CALL_REJECTED"
