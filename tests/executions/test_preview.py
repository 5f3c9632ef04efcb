"""A node's context plan: the context a run would assemble, without running it or calling a model."""

import pytest

from agents.backends.builtin import BuiltinBackend
from agents.models import Agent
from core.errors import DocumentError, NotFound
from engine.compression import DictCompressionCache
from executions import preview
from executions.models import Execution, NodeRun
from executions.preview import node_context_plan
from executions.services import execution_import_document
from tests.replay import load_demo
from workflows.models import Workflow
from workflows.services import workflow_import_document

pytestmark = pytest.mark.django_db

SCHOLAR_OUTPUT = {"atoms": [
    {"atom_id": f"atom_{i:03d}", "atom_type": kind, "content": f"Statement {i} about self-attention and "
     f"parallel training of the Transformer, with its evidence and caveats spelled out at length." * 3,
     "confidence": 0.5 + (i % 5) / 10}
    for i, kind in enumerate(["claim", "evidence", "methodology", "background"] * 10)
]}
VALIDATOR_OUTPUT = {"validation_results": [{"atom_id": "atom_000", "valid": True}]}
LONG_REPORT = "\n".join(f"- finding {i}: module {i} has {i * 3} functions and {i % 7} open issues" for i in range(80))


@pytest.fixture
def demo(tmp_path, settings):
    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)
    return {workflow.workflow_id: workflow for workflow in Workflow.objects.all()}


@pytest.fixture
def no_model(monkeypatch):
    """Any backend call fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("a plan called the model")

    monkeypatch.setattr(BuiltinBackend, "complete", refuse)
    monkeypatch.setattr(BuiltinBackend, "summarize", refuse)


def record_execution(workflow_id, execution_id, outputs):
    execution, _ = execution_import_document({
        "execution_id": execution_id, "workflow_ref": workflow_id, "status": "success",
        "results": [{"node_id": node_id, "agent_ref": agent, "status": status, "output": output}
                    for node_id, agent, status, output in outputs],
    })
    return execution


def test_it_plans_the_vault_node_as_a_run_would_overflow_batch_and_fall_back(demo, no_model):
    plan = node_context_plan(workflow=demo["thesis_reading"], node_id="task_vault_001",
                             outputs={"task_scholar_001": SCHOLAR_OUTPUT, "task_validator_001": VALIDATOR_OUTPUT})
    assert plan["outcome"] == "ready" and plan["outputs_from"] is None
    record = plan["context_management"]
    assert record["task_id"] == "task_vault_001"
    assert record["context_limit"] == plan["limits"]["data_limit"] == 4_050
    assert record["overflow"] > 0, "more data than the vault's small window holds"
    actions = {(a["data"], a["action"]) for a in record["resolution"]["actions"]}
    assert ("task_scholar_001_output", "reference") in actions, "the node's transfer_config asks for references"
    assert record["resolution"]["within_limit"] and record["resolution"]["final_tokens"] <= 4_050
    # As a run: the agent's prompt and instructions are inputs too, beside the references.
    assert {"system_prompt", "task_instructions", "task_scholar_001_output", "knowledge_atoms_query",
            "supplementary.md"} <= set(record["total_input_data"])
    batch = next(a for a in record["resolution"]["actions"] if a["action"] == "batch")
    assert batch["data"] == "knowledge_atoms_query" and plan["batch_count"] == batch["batches"] > 1
    (failure,) = plan["resolution_failures"]
    assert (failure["path"], failure["error_code"], failure["fallback_strategy"], failure["fallback_value"]) == (
        "/workspace/papers/supplementary.md", "REF_NOT_FOUND", "use_default", {"note": "no supplementary material"})
    inputs = {entry["name"]: entry for entry in plan["resolved_inputs"]}
    assert inputs["supplementary.md"]["content"] == {"note": "no supplementary material"}
    assert plan["model_calls_skipped"] == [{"purpose": "completion", "calls": plan["batch_count"],
                                            "note": "builtin would be asked once per batch; a plan never calls the model"}]
    assert Execution.objects.count() == NodeRun.objects.count() == 0


def test_it_plans_with_the_latest_outputs_of_the_most_recent_execution(demo):
    record_execution("thesis_reading", "exec_old", [("task_scholar_001", "Scholar", "success", {"atoms": []})])
    record_execution("thesis_reading", "exec_new", [
        ("task_scholar_001", "Scholar", "failed", None),
        ("task_scholar_001", "Scholar", "success", SCHOLAR_OUTPUT),
        ("task_validator_001", "Validator", "success", VALIDATOR_OUTPUT),
    ])
    plan = node_context_plan(workflow=demo["thesis_reading"], node_id="task_vault_001")
    assert plan["outputs_from"] == "exec_new"
    scholar = next(entry for entry in plan["resolved_inputs"] if entry["name"] == "task_scholar_001_output")
    assert scholar["resolved_tokens"] > 1_000, "the new run's atoms, not the old run's empty list"
    assert [f["error_code"] for f in plan["resolution_failures"]] == ["REF_NOT_FOUND"]  # only the missing file


def test_it_plans_with_the_most_recent_run_not_a_node_tried_since(demo):
    run = record_execution("thesis_reading", "exec_run", [
        ("task_scholar_001", "Scholar", "success", SCHOLAR_OUTPUT),
        ("task_validator_001", "Validator", "success", VALIDATOR_OUTPUT),
    ])
    Execution.objects.create(execution_id="try_since", workflow=run.workflow, status="success", trial=True,
                             input={"from": "the trial"})
    plan = node_context_plan(workflow=demo["thesis_reading"], node_id="task_vault_001")
    assert plan["outputs_from"] == "exec_run"


def test_it_shows_outputs_no_run_has_produced_as_failures(demo):
    plan = node_context_plan(workflow=demo["thesis_reading"], node_id="task_vault_001")
    failed = {(f.get("task_id") or f.get("path"), f["fallback_strategy"]) for f in plan["resolution_failures"]}
    assert failed == {("task_scholar_001", "skip"), ("task_validator_001", "skip"),
                      ("/workspace/papers/supplementary.md", "use_default")}
    assert "task_scholar_001_output" not in plan["context_management"]["total_input_data"]


def test_it_answers_a_reference_that_would_abort_the_node_with_its_failure(demo):
    workflow, _ = workflow_import_document({
        "workflow_id": "strict", "name": "Strict", "topology": "seq",
        "nodes": [{"id": "read", "agent_ref": "Scholar", "input_mapping": {"data_references": [
            {"ref_type": "file", "path": "papers/missing.md", "fallback_config": {"strategy": "abort"}}]}}],
    })
    plan = node_context_plan(workflow=workflow, node_id="read")
    assert plan["outcome"] == "would_abort" and plan["context_management"] is None and plan["batch_count"] == 0
    (failure,) = plan["resolution_failures"]
    assert (failure["error_code"], failure["fallback_strategy"]) == ("REF_NOT_FOUND", "abort")
    assert plan["model_calls_skipped"][0] == {"purpose": "completion", "calls": 0, "note": plan["model_calls_skipped"][0]["note"]}


def test_it_retries_at_once_and_adds_up_the_delays_a_run_would_wait(demo):
    workflow, _ = workflow_import_document({
        "workflow_id": "patient", "name": "Patient", "topology": "seq",
        "nodes": [{"id": "read", "agent_ref": "Scholar", "input_mapping": {"data_references": [
            {"ref_type": "file", "path": "papers/missing.md",
             "fallback_config": {"strategy": "retry", "retry_count": 2, "retry_delay_ms": 600_000}}]}}],
    })
    plan = node_context_plan(workflow=workflow, node_id="read")
    (failure,) = plan["resolution_failures"]
    assert (failure["attempts"], failure["fallback_strategy"]) == (3, "skip")
    assert plan["waits_skipped_seconds"] == 1_200


def test_it_summarises_extractively_where_a_run_would_ask_the_model(demo, no_model):
    workflow, _ = workflow_import_document({
        "workflow_id": "abstract", "name": "Abstract", "topology": "seq",
        "nodes": [{"id": "read", "agent_ref": "Scholar", "input_mapping": {"data_references": [
            {"ref_type": "file", "path": "papers/transformer.md", "transfer_mode": "summary",
             "summary_config": {"strategy": "abstractive", "max_length": 60}}]}}],
    })
    plan = node_context_plan(workflow=workflow, node_id="read")
    (summary,) = [a for a in plan["context_management"]["resolution"]["actions"] if a["action"] == "summarize"]
    assert summary["strategy"] == "extractive" and summary["reduced_tokens"] <= 60
    assert {"purpose": "abstractive_summary", "calls": 1,
            "note": "summary_config asks for abstractive summaries; the plan's are extractive"} in plan["model_calls_skipped"]


def test_it_compresses_dependencies_extractively_and_never_writes_the_cache(demo, no_model, monkeypatch):
    cache = DictCompressionCache()
    monkeypatch.setattr(preview, "COMPRESSION_CACHE", cache)
    Agent.objects.filter(agent_id="Report_Synthesizer").update(backend="remote_llm")
    outputs = {"task_a": LONG_REPORT, "task_b": "docs: fine", "task_c": {"tests": 12}}
    plan = node_context_plan(workflow=demo["parallel_analysis"], node_id="task_d", outputs=outputs)
    totals = plan["compression"]["totals"]
    assert (totals["dependencies"], totals["compressed"], totals["skipped_short"]) == (3, 1, 2)
    assert totals["lines_after"] < totals["lines_before"]
    assert cache.entries == {}, "an extractive text must not stand in for the model's later"
    assert "compressed_dependencies" in plan["context_management"]["total_input_data"]
    assert not any(name.endswith("_output") for name in plan["context_management"]["total_input_data"])
    compression = next(call for call in plan["model_calls_skipped"] if call["purpose"] == "compression")
    assert compression["calls"] == 1 and "'flash'" in compression["note"]


def test_it_uses_a_compression_the_cache_already_holds(demo, monkeypatch):
    from engine.compression import cache_key

    cache = DictCompressionCache()
    cache.set(cache_key(LONG_REPORT, 0.3, "flash"), "- the model's summary")
    monkeypatch.setattr(preview, "COMPRESSION_CACHE", cache)
    plan = node_context_plan(workflow=demo["parallel_analysis"], node_id="task_d", outputs={"task_a": LONG_REPORT})
    (section,) = plan["compression"]["dependencies"]
    assert section["cache_hit"] and section["lines_after"] == 1


def test_it_names_what_it_cannot_plan(demo):
    with pytest.raises(NotFound, match="no node 'task_zzz'"):
        node_context_plan(workflow=demo["thesis_reading"], node_id="task_zzz")
    with pytest.raises(DocumentError) as error:
        node_context_plan(workflow=demo["thesis_reading"], node_id="task_vault_001", outputs={"typo": {}})
    assert error.value.where == "outputs.typo"
    with pytest.raises(DocumentError) as error:
        node_context_plan(workflow=demo["thesis_reading"], node_id="task_vault_001", state={"_instance": 3})
    assert error.value.where == "state"


def test_it_names_the_node_whose_reference_settings_a_run_could_not_use(demo):
    workflow, _ = workflow_import_document({
        "workflow_id": "odd", "name": "Odd", "topology": "seq",
        "nodes": [{"id": "read", "agent_ref": "Scholar", "input_mapping": {"data_references": [
            {"ref_type": "file", "path": "papers/transformer.md",
             "batch_config": {"enabled": True, "batch_size_tokens": 100, "overlap_tokens": 500}}]}}],
    })
    with pytest.raises(DocumentError) as error:
        node_context_plan(workflow=workflow, node_id="read")
    assert error.value.where == "nodes[read].input_mapping"


def test_it_plans_the_very_context_a_run_then_assembles(demo):
    from executions.node_kinds.llm import perform
    from executions.services import workflow_graph

    execution = record_execution("thesis_reading", "exec_1", [
        ("task_scholar_001", "Scholar", "success", SCHOLAR_OUTPUT),
        ("task_validator_001", "Validator", "success", VALIDATOR_OUTPUT),
    ])
    plan = node_context_plan(workflow=demo["thesis_reading"], node_id="task_vault_001")
    graph = workflow_graph(demo["thesis_reading"])
    run = NodeRun.objects.create(execution=execution, node_id="task_vault_001", status="running", sequence=2,
                                 agent=Agent.objects.get(agent_id="Knowledge_Vault"))
    performed = perform(run, graph, graph.nodes["task_vault_001"])
    assert plan["context_management"] == performed.record["context_record"]
    assert plan["resolved_inputs"] == performed.record["resolved_inputs"]
    assert plan["batch_count"] == performed.record["prompt"].count("=== next batch ===") + 1 > 1
    assert [{**f, "timestamp": ""} for f in plan["resolution_failures"]] == [
        {**f, "timestamp": ""} for f in performed.record["resolution_failures"]]


def test_the_plan_estimates_the_most_the_nodes_calls_would_cost(demo, no_model, settings):
    from decimal import Decimal

    from django.utils import timezone

    from agents.catalogue import model_entry

    outputs = {"task_scholar_001": SCHOLAR_OUTPUT, "task_validator_001": VALIDATOR_OUTPUT}
    free = node_context_plan(workflow=demo["thesis_reading"], node_id="task_vault_001", outputs=outputs)
    assert free["cost_estimate"]["cost"] == "0.000000000000"  # the builtin costs nothing, and says so
    assert free["cost_estimate"]["prices"]["sources"]["input_price"].startswith("builtin: calls no model")

    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "hosted": {"kind": "openai_compatible", "base_url": "http://h/v1"}}
    Agent.objects.filter(agent_id="Knowledge_Vault").update(backend="hosted", model="gpt-4o-mini")
    Workflow.objects.filter(pk=demo["thesis_reading"].pk).update(updated_at=timezone.now())  # its graph is read again
    plan = node_context_plan(workflow=Workflow.objects.get(workflow_id="thesis_reading"), node_id="task_vault_001",
                             outputs=outputs)
    estimate = plan["cost_estimate"]
    assert (estimate["backend"], estimate["model"], estimate["calls"]) == ("hosted", "gpt-4o-mini", plan["batch_count"])
    assert estimate["tokens_out"] == plan["batch_count"] * 2000  # the vault's max_output_tokens, assumed written
    assert "each call writes the most it may (max_output_tokens, 2000)" in estimate["assumption"]
    expected = model_entry("hosted", "gpt-4o-mini").cost(estimate["tokens_in"], estimate["tokens_out"])
    assert Decimal(estimate["cost"]) == expected and estimate["tokens_in"] > 1000
