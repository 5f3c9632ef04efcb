import pypdf
import pytest
from django.core.management import call_command

from agents.models import Agent
from core.documents import export_document
from demo.documents import THESIS_CHAIN, paper_pdf
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
        "thesis_reading", "parallel_analysis", "repository_review", "release_review", "game24"}
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
