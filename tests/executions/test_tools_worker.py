"""Agents that call tools, on a real worker: a loopback chat-completions server plays the
model and answers with tool calls — one, two at once, malformed arguments, a tool the agent
does not have, and calls without end — and the worker runs them through the catalogue, feeds
the results back and records every turn and call."""
import json

import pytest

from agents.services import agent_import_document
from demo.documents import _agent
from executions.services import execution_start
from knowledge.models import KnowledgeAtom, Paper
from tests.agents.backends.chat_server import ChatServer, ToolCalls
from tests.executions.conftest import wait_for
from workflows.services import workflow_import_document

pytestmark = pytest.mark.integration

SEARCH = "builtin__knowledge_search"
BEHAVIOURS = {  # the agent's system prompt names what its model does
    "one": [[(SEARCH, {"query": "context window"})]],
    "parallel": [[(SEARCH, {"query": "context"}), ("builtin__db_query", {"table": "papers", "select": ["title"], "conditions": [
        {"field": "paper_id", "operator": "eq", "value": "p_budget"}]})]],
    "malformed": [[(SEARCH, '{"query": "unfinished')]],
    "unknown": [[("builtin__delete_everything", {})]],
    "endless": [[(SEARCH, {"query": "again"})]] * 100,
}


def model(body):
    """What the model says next: the behaviour's calls for each turn, then an answer that
    repeats what the tools answered (status and content of each tool message)."""
    behaviour = body["messages"][0]["content"].split()[-1]
    results = [message for message in body["messages"] if message["role"] == "tool"]
    turn = sum(1 for message in body["messages"] if message["role"] == "assistant")
    if turn < len(BEHAVIOURS[behaviour]):
        assert [tool["function"]["name"] for tool in body["tools"]] == [SEARCH, "builtin__db_query"]
        return ToolCalls(BEHAVIOURS[behaviour][turn])
    return {"answered": behaviour, "results": [json.loads(message["content"]) for message in results]}


@pytest.fixture
def tool_model(demo, tmp_path, settings):
    paper = Paper.objects.create(paper_id="p_budget", title="Context budgets")
    KnowledgeAtom.objects.create(atom_id="a_budget", paper=paper, atom_type="claim", confidence=0.9,
                                 content="Trimming keeps the context window within its budget.")
    with ChatServer() as server:
        server.reply(usage={"prompt_tokens": 100, "completion_tokens": 10}).respond_with(model)
        config = tmp_path / "backends.toml"
        config.write_text(f'[backends.model]\nkind = "openai_compatible"\nbase_url = "{server.base_url}"\n'
                          'model = "gpt-4o-mini"\nmax_retries = 0\n')
        demo.env.update(SWITCHYARD_BACKENDS_FILE=str(config))
        settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "model": {"kind": "openai_compatible",
                                                                     "base_url": server.base_url}}
        for behaviour in BEHAVIOURS:
            agent = _agent(f"tools_{behaviour}", f"Tools {behaviour}", skills=[],
                           prompt=f"You answer with tools: {behaviour}")
            agent["capabilities"]["tools"] = ["builtin.knowledge_search", "builtin.db_query"]
            agent["runtime"].update(backend="model", model="gpt-4o-mini", encoding="o200k_base")
            agent_import_document(agent)
        yield server


def run(nodes, topology="dag"):
    workflow, _ = workflow_import_document({
        "workflow_id": f"tools_{'_'.join(nodes)}", "name": "Tools", "topology": topology,
        "nodes": [{"id": node, "agent_ref": f"tools_{node}"} for node in nodes],
        "error_handling": {"retry_count": 0, "fallback_agent": None, "escalate_to": None}})
    return execution_start(workflow=workflow, input={})


def test_a_worker_runs_the_calls_a_model_asks_for_and_records_each_turn(demo, tool_model):
    demo.start(1)
    calling = run(["one", "parallel", "malformed", "unknown"])
    endless = run(["endless"], topology="seq")
    calling, endless = wait_for(calling, workers=demo, timeout=120), wait_for(endless, workers=demo, timeout=120)

    assert calling.status == "success", (calling.ended_reason, demo.logs())
    node = {run.node_id: run for run in calling.node_runs.all()}
    one = node["one"]
    [call] = one.tool_calls
    assert (call["name"], call["status"], call["arguments"]) == ("builtin.knowledge_search", "success",
                                                                 {"query": "context window"})
    assert one.output["results"][0]["atoms"][0]["atom_id"] == "a_budget"  # the model was given the result
    assert len(one.turns) == 2 and len(one.calls) == 2 and one.tokens_in == 200  # both turns paid, as reported
    assert [c["status"] for c in node["parallel"].tool_calls] == ["success", "success"]
    assert node["parallel"].turns[0]["tool_call_ids"] == [c["id"] for c in node["parallel"].tool_calls]
    assert node["parallel"].output["results"][1]["rows"] == [{"title": "Context budgets"}]
    [malformed] = node["malformed"].tool_calls
    assert malformed["status"] == "TOOL_ARGUMENTS_INVALID" and malformed["arguments"] == '{"query": "unfinished'
    assert node["malformed"].output["results"][0]["error"]["code"] == "TOOL_ARGUMENTS_INVALID"
    [unknown] = node["unknown"].tool_calls
    assert unknown["status"] == "TOOL_UNAVAILABLE" and "delete_everything" in unknown["error"]

    assert endless.status == "failed"
    [stopped] = endless.node_runs.all()
    assert (stopped.status, stopped.error_code, len(stopped.tool_calls), len(stopped.turns)) == (
        "failed", "TOOL_LOOP_LIMIT", 8, 9)
    assert len(stopped.calls) == 9  # every turn's model call is on the record, and in its cost
