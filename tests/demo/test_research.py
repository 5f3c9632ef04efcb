"""The demo's `research` skill, turn by turn, through the builtin backend: it refuses without
the knowledge_search tool (a capability gap naming it), asks for one search with the
question's words, and answers from the atoms the search returned, never beyond them."""
import json

import pytest

from agents.backends import BackendError
from agents.backends.base import BackendRequest
from agents.backends.builtin import BuiltinBackend
from demo.documents import RESEARCH_QUESTION, RESEARCH_WITH_TOOLS, RESEARCH_WITHOUT_TOOLS
from demo.services import demo_knowledge_load
from knowledge.tools import knowledge_search
from tools.catalogue import resolve

SEARCH = "builtin.knowledge_search"
backend = BuiltinBackend()


def tools(*names: str) -> list[dict]:
    """The tools as the node's loop sends them: the catalogue's entries the agent names."""
    found, missing = resolve(names)
    assert not missing
    return [{"name": tool.name, "description": tool.description, "input_schema": tool.input_schema} for tool in found]


def research(*, tools=(), transcript=(), question=RESEARCH_QUESTION, **fields) -> BackendRequest:
    return BackendRequest(agent_id="researcher", skills=["research"], required_skills=["research"],
                          system_prompt="You answer questions.", prompt="Answer the question.",
                          inputs={"question": question} if question is not None else {},
                          tools=list(tools), transcript=list(transcript), **fields)


def asked(call_id: str, query: str) -> dict:
    return {"role": "assistant", "text": "", "tool_calls": [
        {"id": call_id, "name": SEARCH, "arguments": {"query": query, "limit": 3}}]}


def result(call_id: str, status: str, content) -> dict:
    return {"role": "tool", "id": call_id, "name": SEARCH, "status": status, "content": content}


def test_without_the_tool_it_is_a_capability_gap_naming_the_tool():
    for offered in ([], tools("builtin.db_query")):
        with pytest.raises(BackendError) as refused:
            backend.complete(research(tools=offered))
        error = refused.value
        assert (error.code, error.retryable, error.details) == ("CAPABILITY_GAP", False, {"missing_tools": [SEARCH]})
        assert SEARCH in str(error)


def test_its_first_turn_asks_for_one_search_with_the_questions_words():
    response = backend.complete(research(tools=tools(SEARCH)))
    assert response.output is None
    assert response.tool_calls == [{"id": "call_1_1", "name": SEARCH,
                                    "arguments": {"query": RESEARCH_QUESTION, "limit": 3}}]


def test_it_takes_the_question_from_the_runs_input_when_the_node_passes_none():
    request = research(tools=tools(SEARCH), question=None, execution_input={"question": "  dropout \n rate  "})
    assert backend.complete(request).tool_calls[0]["arguments"]["query"] == "dropout rate"


def test_with_no_question_it_says_so_rather_than_search_for_nothing():
    with pytest.raises(BackendError, match="needs a question") as refused:
        backend.complete(research(tools=tools(SEARCH), question=None))
    assert refused.value.code == "BAD_INPUT"


@pytest.mark.django_db
def test_it_answers_from_the_atoms_the_search_returned_citing_them():
    demo_knowledge_load()
    found = knowledge_search({"query": RESEARCH_QUESTION, "limit": 3})
    assert found["atoms"], "the demo's knowledge base answers the demo's question"
    for content in (found, json.dumps(found)):  # the result as a value, or as its JSON text
        output = backend.complete(research(tools=tools(SEARCH), transcript=[
            asked("call_1_1", RESEARCH_QUESTION), result("call_1_1", "success", content)])).output
        ids = [atom["atom_id"] for atom in found["atoms"]]
        assert output["sources"] == ids and output["searched"] == RESEARCH_QUESTION
        assert output["note"] == "builtin: not a model"
        for atom in found["atoms"]:
            assert f"{atom['content']} [{atom['atom_id']}]" in output["answer"]
    heads = next(atom for atom in found["atoms"] if "h = 8 parallel attention heads" in atom["content"])
    assert heads["atom_id"] in output["sources"]


@pytest.mark.parametrize("status, content, why", [
    ("success", {"query": "q", "terms": ["zebra"], "found": 0, "atoms": []}, "the search found no atom"),
    ("TOOL_ERROR", "the query has no word of three letters or more to search for", "the search failed (TOOL_ERROR"),
    ("TOOL_UNAVAILABLE", {"error": {"code": "TOOL_UNAVAILABLE", "message": "the server is down"}},
     "the search failed (TOOL_UNAVAILABLE: the server is down)"),
    ("success", "a summary of the atoms found, in prose", "came as a summary or a reference, with no atoms"),
])
def test_a_failed_or_empty_search_gives_an_answer_that_found_nothing(status, content, why):
    output = backend.complete(research(tools=tools(SEARCH), question="zebra stripes", transcript=[
        asked("call_1_1", "zebra stripes"), result("call_1_1", status, content)])).output
    assert output["answer"].startswith("Nothing was found in the knowledge base for 'zebra stripes'")
    assert why in output["answer"]
    assert output["sources"] == [] and output["searched"] == "zebra stripes"


def test_the_demo_declares_one_research_workflow_with_the_tool_and_one_without():
    from demo.documents import AGENTS

    agents = {agent["agent_id"]: agent for agent in AGENTS}
    for workflow, agent_id, agent_tools in ((RESEARCH_WITH_TOOLS, "researcher", [SEARCH]),
                                            (RESEARCH_WITHOUT_TOOLS, "researcher_without_tools", [])):
        [node] = workflow["nodes"]
        assert node["agent_ref"] == agent_id
        assert agents[agent_id]["capabilities"]["skills"] == ["research"]
        assert agents[agent_id]["capabilities"]["tools"] == agent_tools
        assert workflow["input_schema"]["properties"]["question"]["default"] == RESEARCH_QUESTION


@pytest.mark.django_db
@pytest.mark.parametrize("workflow_id, status", [("research_with_tools", "success"), ("research_without_tools", "failed")])
def test_the_demo_research_workflows_run_as_declared(in_process, workflow_id, status):
    from executions.services import execution_start
    from tests.executions.conftest import drain
    from workflows.models import Workflow

    execution = drain(execution_start(workflow=Workflow.objects.get(workflow_id=workflow_id), input={}))
    assert execution.status == status
    run = execution.node_runs.get(node_id="research")
    if status == "success":
        [call] = run.tool_calls
        assert (call["name"], call["status"], call["arguments"]["query"]) == (SEARCH, "success", RESEARCH_QUESTION)
        assert run.output["sources"] and "h = 8 parallel attention heads" in run.output["answer"]
    else:
        assert (run.error_code, run.error_details, run.tool_calls) == ("CAPABILITY_GAP", {"missing_tools": [SEARCH]}, [])
