import json
import re

import pytest

from agents.backends import BackendError, BackendRequest, choose_skill, get_backend
from agents.backends.builtin import SKILLS, BuiltinBackend, count_tokens, register_skill
from demo.documents import AGENTS, paper_markdown

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
