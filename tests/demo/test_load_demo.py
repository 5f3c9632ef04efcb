import io

import pypdf
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents.models import Agent
from core.documents import export_document
from demo.documents import DOCUMENTS, THESIS_CHAIN, paper_pdf
from engine.inputs import read_inputs
from executions.models import Execution
from workflows.models import Workflow

pytestmark = pytest.mark.django_db


@pytest.fixture
def workspace(tmp_path, settings):
    settings.WORKSPACE_ROOT = tmp_path
    return tmp_path


def test_it_loads_the_demo_and_is_idempotent(workspace, capsys):
    call_command("load_demo")
    first = capsys.readouterr().out
    assert "created: workflow release_review" in first
    call_command("load_demo")
    assert "0 changed" in capsys.readouterr().out
    assert set(Workflow.objects.values_list("workflow_id", flat=True)) == {
        "thesis_reading", "parallel_analysis", "repository_review", "release_review", "game24", "research_with_tools",
        "research_without_tools"}
    assert Agent.objects.filter(backend="builtin").count() == Agent.objects.count() >= 19


def test_it_keeps_the_seed_task_chain_as_written(workspace):
    call_command("load_demo")
    chain = export_document("task_chain", "thesis_reading")["task_chain"]
    assert chain[:2] == THESIS_CHAIN["task_chain"][:2]
    assert chain[0]["input"]["data_references"][0]["path"] == "/workspace/papers/transformer.pdf"


def test_it_sets_up_what_the_inspection_pages_need_to_show(workspace):
    call_command("load_demo")
    vault = Agent.objects.get(agent_id="Knowledge_Vault")
    assert vault.effective_data_limit == 4050, "a small window, so the vault's inputs overflow"
    references = Workflow.objects.get(workflow_id="thesis_reading").nodes.get(node_id="task_vault_001").input_mapping["data_references"]
    assert any(r.get("batch_config", {}).get("enabled") for r in references)
    missing = [r for r in references if r["ref_type"] == "file"]
    assert missing and not (workspace / "papers" / "supplementary.md").exists()
    assert missing[0]["fallback_config"]["strategy"] == "use_default"
    synthesizer = Workflow.objects.get(workflow_id="parallel_analysis").nodes.get(node_id="task_d")
    assert (synthesizer.compress, synthesizer.compress_ratio) == (True, 0.3)
    review = Workflow.objects.get(workflow_id="release_review")
    assert (review.retry_count, review.fallback_agent.agent_id, review.escalate_to.agent_id) == (2, "Backup_Publisher", "Orchestrator")
    assert review.transitions.exclude(condition=None).count() == 2
    assert {"ToT_Generator", "ToT_Evaluator", "ToT_Synthesizer", "ToT_Decomposer", "ToT_Explorer", "ToT_Orchestrator"} <= set(
        Agent.objects.values_list("agent_id", flat=True)
    )


def test_it_writes_a_sample_paper_that_a_pdf_reader_can_read(workspace):
    call_command("load_demo")
    reader = pypdf.PdfReader(workspace / "papers" / "transformer.pdf")
    assert [item.title for item in reader.outline] == ["Abstract", "Introduction", "Methodology", "Results", "Conclusion"]
    assert "Scaled dot-product attention" in reader.pages[2].extract_text()
    assert (workspace / "papers" / "transformer.md").read_text().startswith("# Attention Is All You Need")
    assert (workspace / "papers" / "transformer.pdf").read_bytes() == paper_pdf()


def test_every_demo_workflow_declares_the_inputs_its_mappings_read():
    for document in DOCUMENTS:
        if "nodes" not in document:
            continue  # an agent, the blueprint, the task chain (whose tasks read files, no input)
        declared = (document.get("input_schema") or {}).get("properties", {})
        read = read_inputs(document)
        assert set(read) == set(declared), document["workflow_id"]
        assert all(spec.get("type") and spec.get("description") for spec in declared.values()), document["workflow_id"]
    assert read_inputs({"nodes": [{"id": t["task_id"], "input_mapping": t["input"]} for t in THESIS_CHAIN["task_chain"]]}) == {}


@pytest.mark.parametrize("workflow_id, missing", [("parallel_analysis", "repository"), ("repository_review", "repository"),
                                                  ("release_review", "topic"), ("game24", "numbers")])
def test_a_demo_run_without_its_required_input_is_refused_by_the_command_naming_it(workspace, workflow_id, missing):
    call_command("load_demo", stdout=io.StringIO())
    with pytest.raises(CommandError, match=rf"^--input: input\.{missing}: is required by the workflow \(") as refused:
        call_command("run_workflow", workflow_id, "--input", "{}")
    assert refused.value.returncode == 2
    assert not Execution.objects.exists()
