"""Pieces of a node run that need no worker: contracts, named inputs, text for compression."""
import pytest

from demo.documents import PARALLEL_ANALYSIS
from executions.compression import as_text
from executions.node_errors import NodeFailure
from executions.node_kinds.llm import check_contracts
from executions.output_readers import named_inputs
from executions.services import workflow_graph
from tests.replay import load_demo
from workflows.contracts import contract_results
from workflows.models import Workflow
from workflows.services import workflow_import_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def chain(tmp_path, settings):
    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)
    workflow = Workflow.objects.get(workflow_id="thesis_reading")
    return workflow, workflow_graph(workflow)


def test_it_checks_an_output_against_the_blueprint_contract_to_the_next_agent(chain):
    workflow, graph = chain
    scholar = workflow.nodes.get(node_id="task_scholar_001")
    good = {"atoms": [{"atom_id": "a1", "atom_type": "claim", "content": "x", "confidence": 0.9}]}
    check_contracts(scholar, graph.plan, good, {}, graph.contracts)
    with pytest.raises(NodeFailure) as caught:
        check_contracts(scholar, graph.plan, {"atoms": [{"atom_id": "a1", "atom_type": "rumour"}]}, {}, graph.contracts)
    assert caught.value.code == "CONTRACT_VIOLATION"
    assert "Scholar → Validator" in str(caught.value) and "atoms/0" in str(caught.value)


def test_it_leaves_a_node_without_a_contract_alone(chain):
    workflow, graph = chain
    check_contracts(workflow.nodes.get(node_id="task_vault_001"), graph.plan, "anything", {}, graph.contracts)


def test_it_reads_named_inputs_from_the_run_and_records_what_is_not_there_yet(chain):
    workflow, _ = chain
    node = Workflow.objects.get(workflow_id="release_review").nodes.get(node_id="draft")
    items, failures = named_inputs(node, {"input": {"topic": "v2"}, "state": {}, "nodes": {}})
    assert items == [{"name": "topic", "content": "v2", "priority": 1}]
    assert [(f["input"], f["path"], f["error_code"], f["fallback_strategy"]) for f in failures] == [
        ("feedback", "$.state.feedback", "REF_NOT_FOUND", "skip"),
        ("gate_feedback", "$.state.gate_feedback", "REF_NOT_FOUND", "skip")]  # no gate has decided yet


def test_a_run_missing_an_input_its_nodes_map_records_the_reference_that_selected_nothing(in_process, api):
    from executions.services import execution_start
    from tests.executions.conftest import drain

    # A workflow that declares no inputs starts without them (parallel_analysis declares its repository).
    undeclared = {key: value for key, value in PARALLEL_ANALYSIS.items() if key != "input_schema"}
    workflow, _ = workflow_import_document({**undeclared, "workflow_id": "undeclared_analysis"})
    execution = drain(execution_start(workflow=workflow, input={}))
    task_a = execution.node_runs.get(node_id="task_a")
    [failure] = task_a.resolution_failures
    assert failure | {"timestamp": None} == {
        "ref_type": "input_mapping", "path": "$.input.repository", "input": "repository",
        "error_code": "REF_NOT_FOUND", "error_message": "path '$.input.repository' selects nothing in this run",
        "fallback_strategy": "skip", "fallback_value": None, "attempts": 1, "timestamp": None}
    assert "repository" not in {item["name"] for item in task_a.resolved_inputs}
    shown = api.viewer.get(f"/api/executions/{execution.execution_id}/node-runs/{task_a.pk}").json()
    assert shown["resolution_failures"] == task_a.resolution_failures
    with_it = drain(execution_start(workflow=workflow, input={"repository": "acme"}))
    assert with_it.node_runs.get(node_id="task_a").resolution_failures == []


def test_it_turns_outputs_into_lines_for_compression():
    assert as_text({"analysis": "a\nb\nc", "score": 3}) == "analysis:\na\nb\nc\nscore: 3"
    assert as_text([{"x": 1}, "y"]).splitlines() == ['{"x": 1}', '"y"']


def test_it_reads_the_graph_again_after_a_new_agent_version_or_new_contracts(chain):
    from core.documents import import_documents
    from demo.documents import AGENTS, BLUEPRINT

    workflow, graph = chain
    scholar = next(dict(a) for a in AGENTS if a["agent_id"] == "Scholar")
    scholar["prompt_config"] = dict(scholar["prompt_config"], system_prompt="You read papers, carefully.")
    import_documents(scholar, actor="test")
    workflow.refresh_from_db()
    fresh = workflow_graph(workflow)
    assert fresh is not graph
    assert fresh.versions[workflow.nodes.get(node_id="task_scholar_001").agent_id] != graph.versions[
        workflow.nodes.get(node_id="task_scholar_001").agent_id]

    blueprint = dict(BLUEPRINT, contracts={})
    import_documents(blueprint, actor="test")
    workflow.refresh_from_db()
    assert workflow_graph(workflow).contracts == []


def test_it_names_the_worker_whose_workspace_lacks_a_referenced_file(in_process, settings, tmp_path):
    from executions.services import execution_start, node_run_execute

    settings.WORKSPACE_ROOT = tmp_path / "share-not-mounted"  # the demo paper is in tmp_path
    execution = execution_start(workflow=Workflow.objects.get(workflow_id="thesis_reading"))
    scholar = execution.node_runs.get(node_id="task_scholar_001")
    node_run_execute(node_run_id=scholar.pk, worker="worker@host-b")
    scholar.refresh_from_db()
    (failure,) = scholar.resolution_failures
    assert failure["error_code"] == "REF_NOT_FOUND"
    assert "the workspace folder does not exist on host worker@host-b" in failure["error_message"]
    assert "'/workspace/papers/transformer.pdf'" in failure["error_message"]


class Hung(BaseException):
    """Raised by the alarm: a BaseException, so that no `except Exception` on the way turns it into a node failure."""


@pytest.mark.django_db(transaction=True)  # commits for real, so that the chain continues as on a worker
def test_it_finishes_a_run_whose_contract_pattern_backtracks_catastrophically(in_process, settings):
    import signal
    import sys

    from core.documents import import_documents
    from executions.services import execution_start
    from tests.executions.conftest import drain

    reply = "import json, sys; sys.stdin.read(); print(json.dumps({'text': 'a' * 40 + '!'}))"
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "command": {"kind": "command", "argv": [sys.executable, "-c", reply]}}
    import_documents([
        {"agent_id": "Echo", "name": "Echo", "version": "1.0.0", "type": "business", "status": "active",
         "prompt_config": {"system_prompt": "Say it."}, "capabilities": {"skills": ["say"]},
         "runtime": {"backend": "command"}},
        {"blueprint_id": "echoes", "name": "Echoes", "agents": [{"agent_ref": "Echo", "source": "new"}],
         # Python's `re` takes 2^40 steps to find that 'aaa…a!' does not match.
         "contracts": {"Echo → Echo": {"data_type": "echo", "schema": {
             "type": "object", "required": ["text"], "properties": {"text": {"not": {"pattern": "^(a+)+$"}}}}}}},
        {"workflow_id": "echoes", "name": "Echoes", "topology": "seq",
         "nodes": [{"id": "first", "agent_ref": "Echo"},
                   {"id": "second", "agent_ref": "Echo",
                    "input_mapping": {"data_references": [{"ref_type": "task_output", "task_id": "first"}]}}],
         "error_handling": {"retry_count": 0}},
    ], actor="test")

    def hung(*_):
        raise Hung("the run did not finish within 60 s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        execution = drain(execution_start(workflow=Workflow.objects.get(workflow_id="echoes")))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert execution.status == "success", execution.ended_reason
    assert execution.node_runs.get(node_id="first").status == "success"
    graph = workflow_graph(execution.workflow)
    assert [c.key for c, error in contract_results(graph.nodes["first"], graph.plan, {"text": "aa"}, graph.contracts)
            if error] == ["Echo → Echo"], "the contract applies to the first node's output"


def test_it_checks_the_contract_to_the_next_node_of_a_seq_without_transitions(chain):
    from core.documents import import_documents

    import_documents({"workflow_id": "read_then_check", "name": "Read, then check", "topology": "seq",
                      "nodes": [{"id": "read", "agent_ref": "Scholar"}, {"id": "check", "agent_ref": "Validator"}]},
                     actor="test")
    workflow = Workflow.objects.get(workflow_id="read_then_check")
    graph = workflow_graph(workflow)
    with pytest.raises(NodeFailure) as caught:
        check_contracts(workflow.nodes.get(node_id="read"), graph.plan, {"atoms": [{"atom_type": "rumour"}]}, {},
                        graph.contracts)
    assert caught.value.code == "CONTRACT_VIOLATION" and "Scholar → Validator" in str(caught.value)


def test_a_node_whose_instructions_cannot_fit_fails_with_their_code_never_truncating_them(in_process):
    from core.documents import import_documents
    from executions.services import execution_start, node_run_execute

    import_documents([
        {"agent_id": "Wordy", "name": "Wordy", "version": "1.0.0", "type": "business", "status": "active",
         "prompt_config": {"system_prompt": "Answer.", "task_context": "Read every word of this. " * 400},
         "capabilities": {"skills": ["say"]},
         "context_limits": {"max_input_tokens": 1_500, "max_output_tokens": 100, "reserved_for_system_prompt": 0,
                            "reserved_for_instructions": 0}},
        {"workflow_id": "wordy", "name": "Wordy", "topology": "seq", "nodes": [{"id": "only", "agent_ref": "Wordy"}],
         "error_handling": {"retry_count": 0}},
    ], actor="test")
    execution = execution_start(workflow=Workflow.objects.get(workflow_id="wordy"))
    run = execution.node_runs.get(node_id="only")
    node_run_execute(node_run_id=run.pk, worker="test")
    run.refresh_from_db()
    assert (run.status, run.error_code) == ("failed", "INSTRUCTIONS_EXCEED_CONTEXT")
    assert "never truncated" in run.error and run.error_details["context_limit"] < run.error_details["instruction_tokens"]


def test_the_builtin_summary_is_recorded_as_the_extractive_one_it_is_and_why(in_process, settings):
    from core.documents import import_documents
    from executions.services import execution_start, node_run_execute

    (settings.WORKSPACE_ROOT / "long.md").write_text(
        "\n\n".join(f"Finding {n}: attention layers relate every token to every other one, so sentence {n} "
                    f"carries its own detail about training step {n * 7}." for n in range(400)))
    import_documents([
        {"workflow_id": "digest", "name": "Digest", "topology": "seq", "error_handling": {"retry_count": 0},
         "nodes": [{"id": "only", "agent_ref": "Validator", "input_mapping": {"data_references": [
             {"ref_type": "file", "path": "long.md", "transfer_mode": "summary",
              "summary_config": {"strategy": "abstractive", "summary_ratio": 0.1}}]}}]},
    ], actor="test")
    execution = execution_start(workflow=Workflow.objects.get(workflow_id="digest"))
    run = execution.node_runs.get(node_id="only")
    node_run_execute(node_run_id=run.pk, worker="test")
    run.refresh_from_db()
    (action,) = [a for a in run.context_record["resolution"]["actions"] if a["data"] == "long.md"]
    assert action["action"] == "summarize" and action["strategy"] == "extractive"
    assert action["strategy_note"] == "no LLM backend for abstractive summaries; used extractive"


@pytest.mark.django_db(transaction=True)  # commits for real, so that the join runs as on a worker
def test_a_compression_cache_that_fails_is_written_to_the_node_runs_cache_error(in_process, monkeypatch):
    import socket

    from django.core.cache.backends.redis import RedisCache

    from executions import compression
    from executions.compression_cache import RedisCompressionCache
    from executions.services import execution_start
    from tests.executions.conftest import drain

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    monkeypatch.setattr(compression, "COMPRESSION_CACHE", RedisCompressionCache(RedisCache(f"redis://127.0.0.1:{closed}/0", {})))
    execution = drain(execution_start(workflow=Workflow.objects.get(workflow_id="parallel_analysis"),
                                      input={"repository": "acme"}))
    assert execution.status == "success", execution.ended_reason
    synthesis = execution.node_runs.get(node_id="task_d")
    errors = [d["cache_error"] for d in synthesis.compression["dependencies"]]
    assert len(errors) == 3 and all(error.startswith("get: ConnectionError") for error in errors)


@pytest.mark.parametrize("compress_models, agent_model, called", [
    ({"openai": {"flash": "fast-model", "pro": "big-model"}}, "agent-model", "fast-model"),
    ({}, "agent-model", "agent-model"),
    ({"command": {"flash": "elsewhere"}}, "", "backend-default"),
])
def test_compress_model_names_map_to_the_backends_real_models(chain, settings, chat_server, monkeypatch,
                                                              compress_models, agent_model, called):
    from engine.compression import DictCompressionCache
    from executions import compression

    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "openai": {
        "kind": "openai_compatible", "base_url": chat_server.base_url, "model": "backend-default", "max_retries": 0}}
    settings.COMPRESS_MODELS = compress_models
    monkeypatch.setattr(compression, "COMPRESSION_CACHE", DictCompressionCache())
    chat_server.reply("the findings, compressed")
    workflow = Workflow.objects.get(workflow_id="parallel_analysis")
    graph = workflow_graph(workflow)
    node = graph.nodes["task_d"]
    agent = node.agent
    agent.backend, agent.model = "openai", agent_model
    outputs = {dep: "\n".join(f"{dep} finding {n}: latency fell by {n} ms" for n in range(80))
               for dep in graph.plan.dependencies("task_d")}
    _, _, record = compression.compress_dependencies(node, graph.plan, outputs, [], [], agent)
    assert {request.body["model"] for request in chat_server.requests} == {called}
    assert (record["model"], record["model_called"]) == ("flash", called)
    assert record["totals"]["compressed"] == len(outputs)


def test_it_never_puts_a_backend_urls_user_or_query_into_a_node_runs_error(settings):
    """A backend defined other than by the checked file (settings made by hand) whose URL holds
    a key: the node fails on its configuration, and what viewers read does not hold the key."""
    from core.documents import import_documents
    from executions.services import execution_start
    from tests.executions.conftest import drain

    secret = "sk-SECRET-0123456789"
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "leaky": {
        "kind": "openai_compatible", "base_url": f"https://user:{secret}@api.example.com/v1?key={secret}",
        "model": "m", "max_retries": 0}}
    import_documents([
        {"agent_id": "Leaky", "name": "Leaky", "version": "1.0.0", "type": "business", "status": "active",
         "prompt_config": {"system_prompt": "Say it."}, "capabilities": {"skills": ["say"]},
         "runtime": {"backend": "leaky"}},
        {"blueprint_id": "leaky", "name": "Leaky", "agents": [{"agent_ref": "Leaky", "source": "new"}]},
        {"workflow_id": "leaky", "name": "Leaky", "topology": "seq", "nodes": [{"id": "only", "agent_ref": "Leaky"}],
         "error_handling": {"retry_count": 0}},
    ], actor="test")
    execution = drain(execution_start(workflow=Workflow.objects.get(workflow_id="leaky")))
    node_run = execution.node_runs.get(node_id="only")
    assert (node_run.status, node_run.error_code) == ("failed", "BAD_BACKEND_CONFIG")
    assert "base_url must be an http:// or https:// URL without user or password" in node_run.error
    shown = " ".join(str(value) for value in (node_run.error, node_run.error_details, execution.ended_reason,
                                               execution.escalation))
    assert secret not in shown and "user:" not in shown


def test_it_counts_a_node_in_its_models_encoding_and_says_so_on_the_record(in_process, settings, chat_server):
    from agents.documents import agent_document
    from agents.models import Agent
    from agents.services import agent_import_document
    from engine.tokens import TokenCounter
    from executions.services import execution_start, node_run_execute
    from tests.engine.test_tokens import MIXED

    chat_server.reply({"atoms": [{"atom_id": "a1", "atom_type": "claim", "content": "A claim.", "confidence": 0.9}]})
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "hosted": {
        "kind": "openai_compatible", "base_url": chat_server.base_url, "max_retries": 0}}
    document = agent_document(Agent.objects.get(agent_id="Scholar"))
    prompt = dict(document["prompt_config"], system_prompt=MIXED)  # where the two encodings part
    agent_import_document({**document, "prompt_config": prompt, "runtime": {"backend": "hosted", "model": "gpt-4o-mini"}},
                          actor="test")

    execution = execution_start(workflow=Workflow.objects.get(workflow_id="thesis_reading"))
    scholar = execution.node_runs.get(node_id="task_scholar_001")
    node_run_execute(node_run_id=scholar.pk, worker="worker@host")
    scholar.refresh_from_db()

    assert scholar.status == "success", (scholar.error_code, scholar.error)
    assert scholar.context_record["encoding"] == "o200k_base"
    (call,) = scholar.calls  # the server reported no usage: counted here, in the model's encoding
    assert (call["usage"], call["encoding"]) == ("counted", "o200k_base")
    sent = [message["content"] for message in chat_server.requests[0].body["messages"]]
    o200k, cl100k = TokenCounter("o200k_base"), TokenCounter("cl100k_base")
    assert scholar.tokens_in == sum(map(o200k.count, sent)) != sum(map(cl100k.count, sent))


def test_it_fails_a_node_whose_models_encoding_it_cannot_count(in_process, settings, chat_server):
    from agents.documents import agent_document
    from agents.models import Agent
    from agents.services import agent_import_document
    from executions.services import execution_start, node_run_execute

    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "hosted": {
        "kind": "openai_compatible", "base_url": chat_server.base_url, "max_retries": 0}}
    document = agent_document(Agent.objects.get(agent_id="Scholar"))
    agent_import_document({**document, "runtime": {"backend": "hosted", "model": "odd-model"}}, actor="test")
    settings.MODEL_OVERRIDES = {"odd-model": {"encoding": "p50k_base"}}  # the operators' file, changed since

    execution = execution_start(workflow=Workflow.objects.get(workflow_id="thesis_reading"))
    scholar = execution.node_runs.get(node_id="task_scholar_001")
    node_run_execute(node_run_id=scholar.pk, worker="worker@host")
    scholar.refresh_from_db()

    assert (scholar.status, scholar.error_code) == ("failed", "ENCODING_UNKNOWN")
    assert "Scholar's tokens cannot be counted: encoding 'p50k_base' is not one Switchyard can count" in scholar.error
    assert chat_server.requests == [] and scholar.context_record is None
