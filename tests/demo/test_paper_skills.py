"""The §7.1 reading chain's skills (demo/paper_skills.py), performed by the builtin backend
once the demo has registered them."""
import json
import re

import jsonschema

from agents.backends.builtin import SKILLS, count_tokens
from demo.documents import ATOM_SCHEMA, PAPER_SECTIONS, paper_markdown
from demo.paper_skills import PAPER_SKILLS, read_paper
from demo.services import demo_workspace_write
from engine.context.files import read_file

# Requests built as the builtin backend's own tests build them.
from tests.agents.backends.test_builtin import run


def demo_atoms():
    return run("Scholar", {"paper": paper_markdown()})["atoms"]


def test_it_registers_the_reading_chain_with_the_builtin_backend():
    assert set(PAPER_SKILLS) == {"extract_atoms", "validate_atoms", "integrate_atoms"}
    assert all(SKILLS[name] is perform for name, perform in PAPER_SKILLS.items())


def test_it_extracts_atoms_of_the_demo_paper_that_match_the_atom_schema():
    output = run("Scholar", {"paper": paper_markdown()})
    jsonschema.validate(output, ATOM_SCHEMA)
    atoms = output["atoms"]
    assert len(atoms) == sum(len(lines) for _, lines in PAPER_SECTIONS) - 1  # one sentence spans two lines
    assert [a["atom_id"] for a in atoms[:2]] == ["atom_001", "atom_002"]
    types = {section: {a["atom_type"] for a in atoms if a["source_section"] == section} for section, _ in PAPER_SECTIONS}
    assert types == {"Abstract": {"claim"}, "Introduction": {"background"}, "Methodology": {"methodology"},
                     "Results": {"evidence"}, "Conclusion": {"claim"}}
    assert all(0.6 <= a["confidence"] <= 0.99 for a in atoms)
    assert output["metadata"] == {"sections": [s for s, _ in PAPER_SECTIONS], "atom_count": len(atoms),
                                  "sources": ["paper"], "title": "Attention Is All You Need (a short reading copy)"}


def test_it_reads_the_same_atoms_from_the_pdf_text(tmp_path):
    demo_workspace_write(workspace=tmp_path)
    text = read_file({"ref_type": "file", "path": "/workspace/papers/transformer.pdf", "format": "pdf"}, workspace_root=tmp_path)
    from_pdf = run("Scholar", {"transformer_pdf": text})
    jsonschema.validate(from_pdf, ATOM_SCHEMA)
    assert from_pdf["atoms"] == demo_atoms()
    assert "Experiments on two translation tasks show these models are superior in quality while being" in from_pdf["atoms"][2]["content"]


def test_it_finds_the_paper_in_sections_summaries_and_reference_previews():
    sections = {"sections": {"Results": "On WMT 2014 the model reaches 28.4 BLEU.", "Conclusion": "Attention is enough for translation."},
                "missing_sections": []}
    output = run("Scholar", {"paper": sections, "system_prompt": "You read papers and extract atoms.",
                             "task_instructions": "Reply with one JSON object."})
    assert [(a["source_section"], a["atom_type"]) for a in output["atoms"]] == [("Results", "evidence"), ("Conclusion", "claim")]
    assert output["metadata"]["sources"] == ["paper"]
    reference = {"transfer_mode": "reference", "reference": {"ref_type": "file", "path": "/workspace/papers/x.md"},
                 "inline_preview": {"text_preview": "## Introduction\n\nRecurrent networks have been the standard for years.",
                                    "preview_count": 1}}
    atoms = run("Scholar", {"paper": reference})["atoms"]
    assert [(a["content"], a["atom_type"]) for a in atoms] == [("Recurrent networks have been the standard for years.", "background")]
    assert run("Scholar", {})["metadata"]["note"] == "no text with sentences in the inputs"


def test_it_reads_numbered_headings_and_skips_references():
    title, sections = read_paper("1 Introduction\nWe study things in depth.\n2. Methods\nWe train a model on data.\n"
                                 "References\n[1] Someone et al. A paper. 2017.")
    assert title == "" and sections == [("Introduction", ["We study things in depth."]), ("Methods", ["We train a model on data."])]


def test_it_keeps_the_atoms_within_the_output_budget():
    output = run("Scholar", {"paper": paper_markdown() * 20}, max_output_tokens=1000)
    assert 5 < output["metadata"]["atom_count"] < 320
    assert output["metadata"]["note"].startswith(f"kept the first {output['metadata']['atom_count']} of 320 sentences")
    assert count_tokens(json.dumps(output)) < 1200


def test_it_validates_claims_from_a_summary_a_list_or_text():
    claims = [a for a in demo_atoms() if a["atom_type"] == "claim"]
    summary = {"items_summary": [{"atom_id": a["atom_id"], "atom_type": "claim", "confidence": a["confidence"],
                                  "content_summary": a["content"]} for a in claims],
               "total_items": len(claims), "summarized_items": len(claims), "omitted_fields": []}
    from_summary = run("Validator", {"claims": summary})
    assert run("Validator", {"claims": claims}) == from_summary
    results = from_summary["validation_results"]
    assert [r["atom_id"] for r in results] == [a["atom_id"] for a in claims]
    for result, atom in zip(results, claims, strict=True):
        assert result["valid"] == (atom["confidence"] >= 0.7 or bool(re.search(r"\d", atom["content"])))
        assert result["note"]
    assert from_summary["valid_count"] + from_summary["invalid_count"] == len(claims)
    assert from_summary["valid_count"] == sum(r["valid"] for r in results)
    text = run("Validator", {"claims": "The model reaches 28.4 BLEU. Attention is all you need here."})
    assert [r["valid"] for r in text["validation_results"]] == [True, False]


def test_it_integrates_the_atoms_that_passed_validation():
    atoms = demo_atoms()
    validation = run("Validator", {"claims": atoms})
    output = run("Knowledge_Vault", {"task_scholar_001": atoms, "task_validator_001": validation["validation_results"],
                                     "supplementary": {"note": "no supplementary material"},
                                     "system_prompt": "You integrate.", "_batch": {"index": 2, "of": 3}})
    invalid = {r["atom_id"] for r in validation["validation_results"] if not r["valid"]}
    assert output["integrated_atoms"] == [a["atom_id"] for a in atoms if a["atom_id"] not in invalid]
    assert output["rejected_atoms"] == [a["atom_id"] for a in atoms if a["atom_id"] in invalid]
    assert output["vault_size"] == len(output["integrated_atoms"]) == sum(output["by_type"].values())
    assert output["sources"] == ["task_scholar_001", "task_validator_001", "supplementary"]
    assert output["batch"] == {"index": 2, "of": 3}
    assert "batch" not in run("Knowledge_Vault", {"atoms": atoms})
