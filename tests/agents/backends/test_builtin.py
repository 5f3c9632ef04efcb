import json
import re

import jsonschema
import pytest

from agents.backends import BackendError, BackendRequest, choose_skill, get_backend
from agents.backends.builtin import SKILLS, BuiltinBackend, count_tokens, read_paper, register_skill
from demo.documents import AGENTS, ATOM_SCHEMA, PAPER_SECTIONS, paper_markdown
from demo.services import demo_workspace_write
from engine.context.files import read_file

SKILLS_OF = {agent["agent_id"]: agent["capabilities"]["skills"] for agent in AGENTS}
backend = BuiltinBackend()


def request(skill_or_agent: str, inputs=None, *, runner: str | None = None, state=None, **fields) -> BackendRequest:
    """A request for the node of `skill_or_agent` (a demo agent, or a bare skill), run by `runner`."""
    required = SKILLS_OF.get(skill_or_agent, [skill_or_agent])
    skills = SKILLS_OF[runner] if runner else required
    return BackendRequest(agent_id=runner or skill_or_agent, skills=skills, required_skills=required,
                          system_prompt=fields.pop("system_prompt", "You are a test agent."),
                          prompt=fields.pop("prompt", "Do the task."), inputs=inputs or {}, state=state or {},
                          **fields)


def run(*args, **kwargs):
    return backend.complete(request(*args, **kwargs)).output


def demo_atoms():
    return run("Scholar", {"paper": paper_markdown()})["atoms"]


# ---------------------------------------------------------------- the skill rule


def test_it_performs_the_agents_first_skill_on_its_own_node():
    assert choose_skill(request("Publisher")) == "publish_unreliable"
    assert choose_skill(request("Backup_Publisher")) == "publish"


def test_it_lets_a_fallback_run_a_node_only_through_a_shared_skill():
    assert choose_skill(request("Publisher", runner="Backup_Publisher")) == "publish"
    with pytest.raises(BackendError) as caught:
        choose_skill(request("Compliance_Checker", runner="Backup_Publisher"))
    assert caught.value.code == "CAPABILITY_GAP" and caught.value.retryable is False
    assert "[legal_review]" in str(caught.value) and "[publish, compliance_check]" in str(caught.value)


# ---------------------------------------------------------------- the response


def test_it_says_it_is_not_a_model_and_counts_tokens_with_tiktoken():
    req = request("Scholar", {"paper": paper_markdown()}, system_prompt="You read papers.", prompt="## paper\n" + paper_markdown())
    response = backend.complete(req)
    assert (response.backend, response.model) == ("builtin", "builtin")
    assert "not a model" in backend.label and get_backend("builtin").label == backend.label
    assert response.tokens_in == count_tokens("You read papers.") + count_tokens(req.prompt)
    assert response.text == json.dumps(response.output, ensure_ascii=False)
    assert response.tokens_out == count_tokens(response.text) > 0


def test_it_gives_the_same_output_for_the_same_request():
    for skill in SKILLS:
        inputs = {"paper": paper_markdown(), "repository": "acme/widgets", "draft": "Release notes", "topic": "2.0"}
        try:
            first = backend.complete(request(skill, inputs, state={"rounds": 1}, execution_id="e1"))
        except BackendError:
            continue
        second = backend.complete(request(skill, json.loads(json.dumps(inputs)), state={"rounds": 1}, execution_id="e1"))
        assert first == second, skill


def test_it_refuses_skills_it_does_not_perform():
    for skill, code in (("game24_generate", "BAD_INPUT"), ("tot_explore", "NOT_IMPLEMENTED"), ("translate", "UNKNOWN_SKILL")):
        with pytest.raises(BackendError) as caught:
            backend.complete(request(skill))
        assert (caught.value.code, caught.value.retryable) == (code, False)


# ---------------------------------------------------------------- thesis reading


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


def test_it_summarizes_extractively_within_the_target():
    text = paper_markdown()
    summary = backend.summarize(text, 60)
    assert 0 < count_tokens(summary) <= 60
    sentences = [s for line in summary.splitlines() if not line.startswith("#") for s in re.split(r"(?<=\.)\s+", line) if s]
    assert sentences and all(sentence in " ".join(text.split()) for sentence in sentences)  # the paper's own words


def test_it_does_nothing_for_the_noop_skill_whatever_the_inputs():
    assert SKILLS["noop"] is not None
    response = backend.complete(request("noop", {"paper": paper_markdown()}, state={"x": 1}))
    assert response.output == {"ok": True} and response.text == '{"ok": true}'
    assert (response.backend, response.model) == ("builtin", "builtin") and response.tokens_out > 0


def test_it_judges_outputs_by_rules_it_names():
    from agents.backends.builtin import judge_outputs

    def judged(outputs):
        return judge_outputs(BackendRequest(agent_id="Judge", skills=["judge_outputs"], required_skills=["judge_outputs"],
                                            system_prompt="", prompt="", inputs={"outputs": outputs}))

    clean = judged({"a": {"report": "3 TODO/FIXME markers found"}, "b": "done"})
    assert clean["score"] == 1.0
    flawed = judged({"a": {"summary": "TBD"}, "b": "", "c": {"error": "boom"}})
    assert flawed["score"] == round(6 / 9, 4)
    assert flawed["feedback"] == ["the output of a has a placeholder where a value should be", "the output of b is empty",
                                  "the output of c is only an error"]
    assert judged({}) == {"score": 0.0, "feedback": ["no node produced an output"]}


def test_it_refuses_a_registered_skill_that_would_replace_another():
    noop = SKILLS["noop"]
    with pytest.raises(ValueError) as caught:
        register_skill("noop", lambda request: {"ok": False})
    assert "'noop' is already performed by agents.backends.builtin.noop" in str(caught.value)
    assert register_skill("noop", noop) is noop and SKILLS["noop"] is noop
    for name, problem in (("", "non-empty string"), ("tot_explore", "the Tree-of-Thoughts search itself")):
        with pytest.raises(ValueError, match=problem):
            register_skill(name, noop)
    assert "" not in SKILLS and "tot_explore" not in SKILLS
