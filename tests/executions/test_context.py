"""The §7.1 task chain of the demo, each node's context assembled from real files and rows."""
import pytest

from engine.context.limits import ContextLimits
from executions.context import assemble_node_context, outputs_from
from knowledge.models import KnowledgeAtom
from knowledge.registry import MAX_LIMIT
from tests.replay import load_demo
from workflows.models import Workflow

pytestmark = pytest.mark.django_db

SCHOLAR_OUTPUT = {"atoms": [
    {"atom_id": f"atom_{i:03d}", "atom_type": kind, "content": f"Statement {i} about self-attention and "
     f"parallel training of the Transformer, with its evidence and caveats spelled out at length." * 3,
     "confidence": 0.5 + (i % 5) / 10}
    for i, kind in enumerate(["claim", "evidence", "methodology", "background"] * 10)
]}


@pytest.fixture
def chain(tmp_path, settings):
    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)
    return {node.node_id: node for node in Workflow.objects.get(workflow_id="thesis_reading").nodes.all()}


def assemble(node, outputs=None):
    agent = node.agent
    return assemble_node_context(limits=agent.context_limits, encoding=agent.encoding, task_id=node.node_id,
                                 node_input=node.input_mapping, task_output=outputs_from(outputs or {}))


def test_it_reads_the_paper_from_the_workspace_for_the_scholar(chain):
    assembly = assemble(chain["task_scholar_001"])
    (report,) = assembly.inputs
    assert report.name == "transformer.pdf" and report.resolved_at == "before_scheduling"
    assert "Scaled dot-product attention" in report.item.content
    assert assembly.record["resolution"]["within_limit"] and assembly.failures == []


def test_it_summarises_the_claims_for_the_validator(chain):
    assembly = assemble(chain["task_validator_001"], {"task_scholar_001": SCHOLAR_OUTPUT})
    (report,) = assembly.inputs
    assert report.transfer_mode == "summary" and report.reason == "set on the reference"
    summary = report.item.content
    assert summary["total_task_scholar_001_output"] == 10, "only the claims were selected"
    assert report.item.tokens <= 5_000


def test_it_overflows_the_vault_window_and_records_every_decision(chain):
    outputs = {"task_scholar_001": SCHOLAR_OUTPUT,
               "task_validator_001": {"validation_results": [{"atom_id": "atom_000", "valid": True}]}}
    assembly = assemble(chain["task_vault_001"], outputs)
    record = assembly.record
    assert record["context_limit"] == 4_050 and record["overflow"] > 0
    assert record["resolution"]["within_limit"] and record["resolution"]["final_tokens"] <= 4_050
    actions = {(a["data"], a["action"]) for a in record["resolution"]["actions"]}
    assert ("knowledge_atoms_query", "batch") in actions
    (failure,) = assembly.failures
    assert (failure["path"], failure["error_code"], failure["fallback_strategy"]) == (
        "/workspace/papers/supplementary.md", "REF_NOT_FOUND", "use_default")
    inputs = {report.name: report for report in assembly.inputs}
    assert inputs["supplementary.md"].item.content == {"note": "no supplementary material"}
    assert inputs["knowledge_atoms_query"].batches > 1


def test_it_names_this_machine_when_a_file_is_missing_outside_a_worker(chain):
    import socket

    outputs = {"task_scholar_001": SCHOLAR_OUTPUT, "task_validator_001": {"validation_results": []}}
    (failure,) = assemble(chain["task_vault_001"], outputs).failures
    assert failure["error_message"] == (
        f"'/workspace/papers/supplementary.md' does not exist in the workspace on host {socket.gethostname()} "
        "(the workspace must be one folder shared by every worker)")


def assemble_references(references):
    limits = ContextLimits(max_input_tokens=200_000, max_output_tokens=1_000)
    return assemble_node_context(limits=limits, encoding="cl100k_base", task_id="t",
                                 node_input={"data_references": references})


def test_a_query_with_an_unknown_operator_passes_the_unfiltered_rows_and_says_so(chain):
    assembly = assemble_references([{"ref_type": "db_query", "table": "knowledge_atoms", "select": ["atom_id"],
                                     "conditions": [{"field": "atom_type", "operator": "like", "value": "c%"}],
                                     "limit": 1000}])
    (report,) = assembly.inputs
    assert len(report.item.content) == KnowledgeAtom.objects.count() > 0
    (failure,) = assembly.failures
    assert (failure["error_code"], failure["fallback_strategy"]) == ("REF_FILTER_ERROR", "ignore_filter")
    assert "unknown operator 'like'" in failure["error_message"]


def test_a_limit_over_the_cap_is_recorded_with_the_rows_left_out(chain):
    paper = KnowledgeAtom.objects.first().paper
    KnowledgeAtom.objects.bulk_create(
        KnowledgeAtom(atom_id=f"bulk_{n:04d}", paper=paper, atom_type="claim", content="c", confidence=0.6)
        for n in range(MAX_LIMIT))
    total = KnowledgeAtom.objects.count()
    assembly = assemble_references([{"ref_type": "db_query", "table": "knowledge_atoms", "select": ["atom_id"],
                                     "limit": 5000, "transfer_mode": "full"}])
    (report,) = assembly.inputs
    assert len(report.item.content) == MAX_LIMIT
    assert report.as_dict()["cap"] == {"limit_requested": 5000, "limit_applied": MAX_LIMIT, "rows_passed": MAX_LIMIT,
                                       "rows_left_out": total - MAX_LIMIT}
    assert report.reason.startswith(f"limit 5000 capped at {MAX_LIMIT} rows: {total - MAX_LIMIT} rows left out")
