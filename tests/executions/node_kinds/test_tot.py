"""A Tree-of-Thoughts node run through the services (executions/node_kinds/tot.py): the game24 demo
workflow with the builtin roles, and the same roles driven by prompts against the
loopback chat-completions server.

Transactions commit for real; node runs are executed here, messages to workers are only
recorded (as in test_services.py).
"""
import io
import json
import re
from unittest import mock

import pytest
from django.core.management import CommandError, call_command

from agents.backends import BackendRequest, get_backend
from core.documents import import_documents
from core.errors import DocumentError
from demo.documents import GAME24, TOT_AGENTS
from engine.tot import ThoughtTree, builtin_roles, verify
from executions.models import Execution, ThoughtSearch
from executions.services import execution_start
from tests.executions.conftest import drain
from tests.replay import load_demo
from tests.workflow_edits import edit_workflow
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)

NODE_KEYS = {"id", "parent_id", "children_ids", "depth", "content", "action_type", "evaluation", "status", "metadata"}
TREE_KEYS = {"task_id", "problem", "task_type", "search_config", "nodes", "root_id", "search_state"}
MESSAGE_KEYS = {"from", "to", "type", "payload", "task_id"}


@pytest.fixture(autouse=True)
def demo(tmp_path, settings):
    settings.WORKSPACE_ROOT = tmp_path
    settings.NODE_RETRY_BACKOFF_SECONDS = 0
    load_demo(tmp_path)
    with mock.patch("executions.tasks.run_node.apply_async") as sent:
        yield sent


def solve(workflow_id="game24", **input):
    return drain(execution_start(workflow=Workflow.objects.get(workflow_id=workflow_id), input=input))


@pytest.fixture
def undeclared():
    """game24 as a workflow that declares no inputs and also maps a problem as text: what the
    node itself makes of any input (the demo's input_schema refuses a bad one before it starts)."""
    document = json.loads(json.dumps(GAME24))
    document.pop("input_schema")
    document.update(workflow_id="tot_any_input", name="any input")
    document["nodes"][0]["input_mapping"]["problem"] = "$.input.problem"
    import_documents(document, actor="test")
    return "tot_any_input"


def assert_seed_shapes(search: ThoughtSearch):
    tree = search.tree
    assert set(tree) == TREE_KEYS
    assert {"strategy", "max_depth", "branching_factor", "pruning_threshold"} <= set(tree["search_config"])
    assert set(tree["search_state"]) == {"current_depth", "frontier", "best_path"}
    assert tree["nodes"][tree["root_id"]]["parent_id"] is None
    for node_id, node in tree["nodes"].items():
        assert set(node) == NODE_KEYS and node["id"] == node_id
        assert node["status"] in {"pending", "expanded", "pruned", "terminal"}
        assert node["evaluation"] is None or {"score", "confidence", "reasoning"} == set(node["evaluation"])
        for child in node["children_ids"]:
            assert tree["nodes"][child]["parent_id"] == node_id
    for message in search.messages:
        assert MESSAGE_KEYS <= set(message) <= MESSAGE_KEYS | {"error"}
        assert message["task_id"] == tree["task_id"]


def test_it_solves_the_seed_example_and_stores_the_search():
    execution = solve(numbers=[4, 9, 10, 13])
    assert execution.status == Execution.Status.SUCCESS
    [run] = execution.node_runs.all()
    assert (run.status, run.node_id, run.agent.agent_id) == ("success", "solve", "ToT_Orchestrator")
    solution = run.output["final_solution"]
    assert solution["verification"] == {"is_valid": True, "validation_errors": []}
    assert verify(solution["answer"], [4, 9, 10, 13]) == []
    assert run.output["error"] is None and run.output["stats"]["llm_calls"] > 3

    search = run.thought_search
    assert (search.execution_id, search.problem, search.task_type) == (execution.pk, "4 9 10 13", "math_reasoning")
    assert_seed_shapes(search)
    assert search.final_solution == solution and search.stats == run.output["stats"] and search.error is None
    assert search.stats["total_nodes"] == len(search.tree["nodes"])
    best = search.tree["search_state"]["best_path"]
    assert best[0] == "root" and search.tree["nodes"][best[-1]]["status"] == "terminal"
    types = [message["type"] for message in search.messages]
    assert types[:3] == ["decompose_task", "decomposition_result", "initialize_search"]
    assert types[-2:] == ["search_complete", "final_solution"]
    assert {"generate_thoughts", "generated_thoughts", "evaluate_thoughts", "evaluation_results",
            "synthesize_solution"} <= set(types)
    # The node run says what the roles cost and what they were sent.
    assert (run.backend, run.model) == ("builtin", "builtin")
    assert run.tokens_in > 0 and run.tokens_out > 0
    assert "## message" in run.prompt and '"type": "generate_thoughts"' in run.prompt


def test_it_fails_the_node_when_the_search_is_exhausted_and_keeps_the_tree():
    edit_workflow("game24", lambda document: document["error_handling"].update(retry_count=2))  # not retried: it would end the same
    execution = solve(numbers=[1, 1, 1, 1])
    assert execution.status == Execution.Status.FAILED
    [run] = execution.node_runs.all()
    assert (run.status, run.error_code) == ("failed", "SEARCH_EXHAUSTED")
    assert "no terminal node meets the success criterion" in run.error
    assert run.tokens_in > 0 and run.backend == "builtin"
    search = run.thought_search
    assert search.final_solution is None
    assert search.error["code"] == "SEARCH_EXHAUSTED" and search.error["recoverable"] is False
    assert_seed_shapes(search)
    leaves = [node for node in search.tree["nodes"].values() if not node["children_ids"]]
    assert leaves and {node["status"] for node in leaves} == {"pruned"}, "every branch was cut, none ended"
    complete = [m for m in search.messages if m["type"] == "search_complete"]
    assert complete[0]["error"]["code"] == "SEARCH_EXHAUSTED"
    assert "final_solution" not in [m["type"] for m in search.messages]


def test_it_takes_the_search_settings_from_the_node_and_the_run():
    execution = solve(numbers=[4, 9, 10, 13], search_config={"strategy": "DFS", "breadth": 2})
    assert execution.status == Execution.Status.SUCCESS
    config = execution.thought_searches.get().tree["search_config"]
    assert (config["strategy"], config["breadth"]) == ("DFS", 2)
    assert (config["branching_factor"], config["max_depth"]) == (8, 3)  # the node's, and the decomposer's depth


def test_it_reads_the_problem_as_text_too(undeclared):
    execution = solve(undeclared, problem="4 9 10 13")
    assert execution.status == Execution.Status.SUCCESS
    assert execution.thought_searches.get().problem == "4 9 10 13"


@pytest.mark.parametrize("input, code, message", [
    ({}, "INVALID_INPUT", "needs `numbers`"),
    ({"numbers": [4, "nine", 10, 13]}, "INVALID_INPUT", "whole numbers"),
    ({"numbers": [4, 9, 10, 13], "search_config": {"beam": 3}}, "INVALID_INPUT", "unknown settings beam"),
    ({"numbers": [4, 9, 10, 13], "search_config": {"strategy": "A*"}}, "INVALID_INPUT", "strategy"),
    ({"problem": "four nine ten thirteen"}, "INVALID_FORMAT", "payload.problem"),
])
def test_it_fails_a_run_whose_problem_or_settings_it_cannot_use(undeclared, input, code, message):
    execution = solve(undeclared, **input)
    [run] = execution.node_runs.all()
    assert (execution.status, run.status, run.error_code) == ("failed", "failed", code)
    assert message in run.error


def test_the_demo_asks_for_its_numbers_before_it_starts():
    for input, said in (({}, "input.numbers: is required by the workflow"),
                        ({"numbers": [4, "nine", 10, 13]}, "input.numbers.1: 'nine' is not of type 'integer'")):
        with pytest.raises(DocumentError, match=re.escape(said)):
            solve(**input)
    assert not Execution.objects.exists()


def test_a_run_that_fails_says_what_its_node_said_in_its_reason_api_and_header(api, client, undeclared):
    execution = solve(undeclared)
    assert execution.ended_reason == (
        "node 'solve' failed: INVALID_INPUT: the run gives no problem: its input needs `numbers` "
        "(e.g. [4, 9, 10, 13]) or `problem` (a text)")
    record = api.viewer.get(f"/api/executions/{execution.execution_id}").json()
    assert record["ended_reason"] == execution.ended_reason

    marked_up = solve(undeclared, numbers=["<b>nine</b>"])
    assert "got [\"<b>nine</b>\"]" in marked_up.ended_reason
    client.force_login(api.viewer.user)
    page = client.get(f"/executions/{marked_up.execution_id}/").content.decode()
    header = page[page.index('id="run-ended-reason"'):]
    assert "INVALID_INPUT: numbers must be a list of whole numbers" in header[:600]
    assert "&lt;b&gt;nine&lt;/b&gt;" in header[:600] and "<b>nine" not in page


def test_it_names_role_agents_that_do_not_exist():
    document = json.loads(json.dumps(GAME24))
    document.update(workflow_id="game24_broken", name="broken")
    document["nodes"][0]["input_mapping"]["tot"]["roles"] = {"generator": "Nobody"}
    import_documents(document, actor="test")
    [run] = solve("game24_broken", numbers=[4, 9, 10, 13]).node_runs.all()
    assert (run.error_code, run.error) == ("UNKNOWN_AGENT", "the search's role agents Nobody do not exist")


# -- the builtin's game24 skills ------------------------------------------------------------


def ask_builtin(skill, message):
    request = BackendRequest(agent_id="ToT_Generator", skills=[skill], required_skills=[skill], system_prompt="",
                             prompt="", inputs={} if message is None else {"message": message})
    return get_backend("builtin").complete(request).output


def test_it_answers_protocol_messages_with_the_builtin_game24_skills():
    request = {"from": "explorer", "to": "generator", "type": "generate_thoughts", "task_id": "t1", "payload": {
        "parent_node": {"id": "root", "parent_id": None, "children_ids": [], "depth": 0, "content": "4 9 10 13",
                        "action_type": "root", "evaluation": None, "status": "expanded", "metadata": {}},
        "generation_strategy": "sequential_proposal", "num_candidates": 3,
        "context": {"problem": "4 9 10 13", "goal": "24", "constraints": []}}}
    reply = ask_builtin("game24_generate", request)
    assert (reply["from"], reply["to"], reply["type"], reply["task_id"]) == ("generator", "explorer",
                                                                            "generated_thoughts", "t1")
    assert len(reply["payload"]["candidates"]) == 3
    assert reply == builtin_roles()["generator"](request)

    broken = dict(request, payload=dict(request["payload"], num_candidates=0))
    reply = ask_builtin("game24_generate", broken)
    assert reply["error"]["code"] == "INVALID_FORMAT" and "num_candidates" in reply["error"]["message"]
    assert reply["type"] == "generated_thoughts" and reply["payload"] == {}


def test_it_refuses_a_game24_skill_without_a_message_and_the_search_skills():
    from agents.backends import BackendError

    with pytest.raises(BackendError) as caught:
        ask_builtin("game24_evaluate", None)
    assert caught.value.code == "BAD_INPUT" and not caught.value.retryable
    with pytest.raises(BackendError) as caught:
        ask_builtin("tot_orchestrate", {"type": "decompose_task"})
    assert caught.value.code == "NOT_IMPLEMENTED" and "Tree-of-Thoughts search" in str(caught.value)


# -- the same roles, driven by prompts on an OpenAI-compatible backend ----------------------

MESSAGE = re.compile(r"## message\n(.*?)\n\n## reply", re.S)


def model_roles(settings, chat_server):
    """Role agents on the `chat` backend (the loopback server), with the demo's prompts, and
    a game24 workflow that uses them."""
    settings.LLM_BACKENDS = {"builtin": {"kind": "builtin"}, "chat": {
        "kind": "openai_compatible", "base_url": chat_server.base_url, "model": "test-model", "max_retries": 0,
        "timeout_seconds": 5}}
    documents, roles = [], {}
    for agent in TOT_AGENTS:
        if agent["agent_id"] in ("ToT_Orchestrator", "ToT_Explorer"):
            continue
        document = json.loads(json.dumps(agent))
        document["agent_id"] = agent["agent_id"] + "_LLM"
        document["runtime"] = dict(document["runtime"], backend="chat", model="test-model")
        documents.append(document)
        roles[agent["agent_id"].removeprefix("ToT_").lower()] = document["agent_id"]
    workflow = json.loads(json.dumps(GAME24))
    workflow.update(workflow_id="game24_llm", name="Game of 24 on a model")
    workflow["nodes"][0]["input_mapping"]["tot"]["roles"] = roles
    import_documents([*documents, workflow], actor="test")


class ScriptedModel:
    """A 'model' that reads the protocol message out of the prompt and answers it as the
    builtin roles would, in the ways models do: the whole message, the payload alone, or
    the message inside a ```json fence."""

    def __init__(self, break_evaluation: int | None = None):
        self.break_evaluation = break_evaluation
        self.evaluations = 0
        self.roles = builtin_roles()

    def __call__(self, body: dict):
        request = json.loads(MESSAGE.search(body["messages"][-1]["content"]).group(1))
        role = request["to"]
        reply = self.roles[role](request)
        if role == "evaluator":
            self.evaluations += 1
            if self.evaluations == self.break_evaluation:
                return "These numbers look promising, I would give them a 7."
            return f"Here is my evaluation:\n```json\n{json.dumps(reply)}\n```"
        if role == "generator":
            return json.dumps(reply["payload"])  # the payload alone
        return json.dumps({key: reply[key] for key in ("type", "payload")})  # without from/to/task_id


def test_it_drives_the_roles_by_prompts_on_a_chat_completions_backend(settings, chat_server):
    model_roles(settings, chat_server)
    chat_server.respond_with(ScriptedModel()).reply(usage={"prompt_tokens": 100, "completion_tokens": 20})
    execution = solve("game24_llm", numbers=[4, 9, 10, 13])
    assert execution.status == Execution.Status.SUCCESS
    [run] = execution.node_runs.all()
    assert verify(run.output["final_solution"]["answer"], [4, 9, 10, 13]) == []
    calls = len(chat_server.requests)
    assert run.output["stats"]["llm_calls"] == calls
    assert (run.backend, run.model, run.tokens_in, run.tokens_out) == ("chat", "test-model", 100 * calls, 20 * calls)

    first = chat_server.requests[0].body
    assert first["model"] == "test-model"
    system, user = first["messages"]
    assert system == {"role": "system", "content": "You are the decomposer of a Tree-of-Thoughts search."}
    assert '"decomposition_result"' in user["content"] and "The Game of 24" in user["content"]
    assert json.loads(MESSAGE.search(user["content"]).group(1))["type"] == "decompose_task"
    assert_seed_shapes(run.thought_search)


def test_it_records_a_malformed_reply_as_invalid_format_and_searches_on(settings, chat_server):
    model_roles(settings, chat_server)
    chat_server.respond_with(ScriptedModel(break_evaluation=1))
    execution = solve("game24_llm", numbers=[4, 9, 10, 13])
    assert execution.status == Execution.Status.SUCCESS
    search = execution.thought_searches.get()
    [broken] = [m for m in search.messages if m.get("error")]
    assert (broken["from"], broken["type"], broken["error"]["code"]) == ("evaluator", "evaluation_results",
                                                                        "INVALID_FORMAT")
    assert "not a JSON object" in broken["error"]["message"]
    [node] = [n for n in search.tree["nodes"].values() if n["metadata"].get("error")]
    assert node["status"] == "pruned" and node["evaluation"] is None


def test_it_fails_the_node_with_invalid_format_when_the_decomposer_answers_badly(settings, chat_server):
    model_roles(settings, chat_server)
    chat_server.reply_once({"type": "decomposition_result", "payload": {"depth_estimate": "three"}})
    execution = solve("game24_llm", numbers=[4, 9, 10, 13])
    [run] = execution.node_runs.all()
    assert (execution.status, run.status, run.error_code) == ("failed", "failed", "INVALID_FORMAT")
    assert "payload.thought_granularity" in run.error
    search = run.thought_search
    assert search.error["code"] == "INVALID_FORMAT" and len(search.tree["nodes"]) == 1
    assert [m["type"] for m in search.messages][:2] == ["decompose_task", "decomposition_result"]
    assert search.messages[1]["error"]["code"] == "INVALID_FORMAT"


def test_it_fails_the_node_with_the_backend_error_when_a_role_cannot_be_reached(settings, chat_server):
    model_roles(settings, chat_server)
    chat_server.fail(503)
    [run] = solve("game24_llm", numbers=[4, 9, 10, 13]).node_runs.all()
    assert (run.status, run.error_code) == ("failed", "HTTP_503")
    assert run.error.startswith("decomposer (ToT_Decomposer_LLM): ")


# -- the thought tree as a document and over the API -----------------------------------------


def test_it_exports_the_thought_tree_whole_in_the_seeds_shape():
    execution = solve(numbers=[3, 3, 8, 8])
    search = execution.thought_searches.get()
    printed = io.StringIO()
    call_command("export_document", "thought_tree", str(search.node_run_id), stdout=printed)
    tree = json.loads(printed.getvalue())
    assert tree == search.tree and set(tree) == TREE_KEYS
    assert (tree["problem"], tree["task_type"]) == ("3 3 8 8", "math_reasoning")
    assert len(tree["nodes"]) == search.stats["total_nodes"] > 1
    assert ThoughtTree.from_dict(tree).as_dict() == tree


def test_it_exports_no_thought_tree_for_a_node_run_that_searched_nothing():
    for identifier in ("999999", "not-a-number", "99999999999999999999999"):
        with pytest.raises(CommandError, match=f"thought_tree '{identifier}' does not exist"):
            call_command("export_document", "thought_tree", identifier, stdout=io.StringIO())


def test_it_refuses_to_import_a_thought_tree():
    tree = solve(numbers=[4, 9, 10, 13]).thought_searches.get().tree
    with pytest.raises(DocumentError, match="exported .* not imported"):
        import_documents(tree)
    assert ThoughtSearch.objects.count() == 1


def test_it_serves_the_thought_tree_whole_to_a_viewer(api):
    execution = solve(numbers=[4, 9, 10, 13])
    search = execution.thought_searches.get()
    path = f"/api/executions/{execution.execution_id}/node-runs/{search.node_run_id}/thought-tree"
    response = api.viewer.get(path)
    assert response.status_code == 200
    assert response.json() == search.tree and set(response.json()) == TREE_KEYS
    assert api.anonymous.get(path).status_code == 401


def test_it_serves_no_thought_tree_of_another_run_or_of_a_node_run_without_one(api):
    mine = solve(numbers=[4, 9, 10, 13])
    theirs = solve(numbers=[1, 1, 1, 1]).thought_searches.get().node_run_id
    response = api.viewer.get(f"/api/executions/{mine.execution_id}/node-runs/{theirs}/thought-tree")
    assert response.status_code == 404 and "has no thought search for node run" in response.json()["message"]
    assert api.viewer.get(f"/api/executions/exec_missing/node-runs/{theirs}/thought-tree").status_code == 404
    assert api.viewer.get(f"/api/executions/{mine.execution_id}/node-runs/0/thought-tree").status_code == 422
