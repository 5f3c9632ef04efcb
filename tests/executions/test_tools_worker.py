"""Agents that call tools, on a real worker: a loopback chat-completions server plays the
model and answers with tool calls — one, two at once, malformed arguments, a tool the agent
does not have, calls without end, and two calls at once to an MCP server over stdio — and the
worker runs them through the catalogue, feeds the results back and records every turn and call.
A server that hangs is stopped with its node, at the node's time limit."""
import json
import os
import time
from datetime import datetime, timedelta

import pytest

from agents.services import agent_import_document
from demo.documents import _agent
from executions.services import execution_start
from knowledge.models import KnowledgeAtom, Paper
from tests.agents.backends.chat_server import ChatServer, ToolCalls
from tests.executions.conftest import wait_for
from tests.tools.conftest import stdio_options
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
    # Two calls of one turn to an MCP server (the tool tests' own, over stdio): they run at once.
    "mcp": [[("testmcp__slow", {"seconds": 1}), ("testmcp__add", {"a": 2, "b": 3})]],
}


def model(body):
    """What the model says next: the behaviour's calls for each turn, then an answer that
    repeats what the tools answered (status and content of each tool message)."""
    behaviour = body["messages"][0]["content"].split()[-1]
    results = [message for message in body["messages"] if message["role"] == "tool"]
    turn = sum(1 for message in body["messages"] if message["role"] == "assistant")
    if turn < len(BEHAVIOURS[behaviour]):
        assert {"builtin__knowledge_search", "builtin__db_query", "testmcp__slow"} <= {
            tool["function"]["name"] for tool in body["tools"]}
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
                          'model = "gpt-4o-mini"\nmax_retries = 0\n\n'
                          f'[tools.testmcp]\ntransport = "stdio"\nargv = {json.dumps(stdio_options()["argv"])}\n'
                          'allow = ["slow", "add"]\n')
        demo.env.update(SWITCHYARD_BACKENDS_FILE=str(config))
        settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "model": {"kind": "openai_compatible",
                                                                     "base_url": server.base_url}}
        settings.TOOL_SERVERS = {"testmcp": stdio_options(allow=["slow", "add"])}
        for behaviour in BEHAVIOURS:
            agent = _agent(f"tools_{behaviour}", f"Tools {behaviour}", skills=[],
                           prompt=f"You answer with tools: {behaviour}")
            agent["capabilities"]["tools"] = ["builtin.knowledge_search", "builtin.db_query", "testmcp.*"]
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
    calling = run(["one", "parallel", "malformed", "unknown", "mcp"])
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

    slow, add = node["mcp"].tool_calls
    assert (slow["server"], slow["tool"], slow["status"], add["result"]) == ("testmcp", "slow", "success", {"sum": 5})
    assert node["mcp"].output["results"] == [{"result": "done"}, {"sum": 5}]
    began = sorted((datetime.fromisoformat(call["started_at"]), call["duration_ms"]) for call in (slow, add))
    (first, first_ms), (second, _) = began
    assert second < first + timedelta(milliseconds=first_ms)  # the second began before the first ended

    assert endless.status == "failed"
    [stopped] = endless.node_runs.all()
    assert (stopped.status, stopped.error_code, len(stopped.tool_calls), len(stopped.turns)) == (
        "failed", "TOOL_LOOP_LIMIT", 8, 9)
    assert len(stopped.calls) == 9  # every turn's model call is on the record, and in its cost


def test_a_hung_tool_server_is_stopped_with_its_node_at_the_nodes_time_limit(demo, tool_model, tmp_path,
                                                                             monkeypatch, settings):
    pid_file = tmp_path / "hung.pid"
    monkeypatch.setitem(BEHAVIOURS, "hung", [[("testmcp__slow", {"seconds": 120, "pid_file": str(pid_file)})]])
    agent = _agent("tools_hung", "Tools hung", skills=[], prompt="You answer with tools: hung")
    agent["capabilities"]["tools"] = ["builtin.knowledge_search", "builtin.db_query", "testmcp.*"]
    agent["runtime"].update(backend="model", model="gpt-4o-mini", encoding="o200k_base")
    agent_import_document(agent)
    # The server's own limit is 30 s; the node's is 8 s (sent with the task: time for the
    # server to start and take the call), and holds.
    settings.NODE_SOFT_TIME_LIMIT_SECONDS, settings.NODE_HARD_TIME_LIMIT_SECONDS = 8.0, 40.0
    demo.start(1, pool="prefork", NODE_SOFT_TIME_LIMIT_SECONDS="8", NODE_HARD_TIME_LIMIT_SECONDS="40")
    started = time.monotonic()
    execution = wait_for(run(["hung"], topology="seq"), workers=demo, timeout=60)
    assert time.monotonic() - started < 25, "stopped at the node's limit, not the server's"
    [node] = execution.node_runs.all()
    assert (execution.status, node.error_code) == ("failed", "NODE_TIME_LIMIT"), demo.logs()
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10  # the SDK stops it: stdin closed, then SIGTERM, then SIGKILL
    while os.path.exists(f"/proc/{pid}") and "zombie" not in open(f"/proc/{pid}/status").read().lower():
        assert time.monotonic() < deadline, "the hung server still runs after its node was stopped"
        time.sleep(0.2)
