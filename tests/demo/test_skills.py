import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agents.backends import BackendError
from agents.backends.builtin import SKILLS, register_skill
from demo.skills import DEMO_SKILLS

# Requests built as the builtin backend's own tests build them.
from tests.agents.backends.test_builtin import SKILLS_OF, backend, request, run

ROOT = Path(__file__).resolve().parents[2]
# ---------------------------------------------------------------- the registration

# The product as installed without the demo app: the same settings, less "demo".
WITHOUT_DEMO = """
import json, sys
import django
from django.conf import settings
import project.settings as product
values = {name: getattr(product, name) for name in dir(product) if name.isupper()}
values["INSTALLED_APPS"] = [app for app in product.INSTALLED_APPS if app != "demo"]
settings.configure(**values)
django.setup()
from agents.backends import BackendError, BackendRequest
from agents.backends.builtin import BuiltinBackend
refusals = {}
for skill in sys.argv[1:]:
    request = BackendRequest(agent_id="a", skills=[skill], required_skills=[skill], system_prompt="", prompt="",
                             inputs={"draft": "Release notes", "repository": "acme/widgets"})
    try:
        BuiltinBackend().complete(request)
        refusals[skill] = None
    except BackendError as error:
        refusals[skill] = [error.code, error.retryable, str(error)]
print(json.dumps(refusals))
"""


def test_it_leaves_the_builtin_without_the_demo_skills_when_the_demo_app_is_not_installed():
    demo_skills = sorted(DEMO_SKILLS)
    done = subprocess.run([sys.executable, "-c", WITHOUT_DEMO, *demo_skills, "noop"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings"})
    assert done.returncode == 0, done.stderr
    refusals = json.loads(done.stdout.splitlines()[-1])
    assert refusals.pop("noop") is None, "the product's own skills are still there"
    for skill, (code, retryable, message) in refusals.items():
        assert (code, retryable) == ("UNKNOWN_SKILL", False), skill
        assert f"no behaviour for skill {skill!r}" in message


def test_it_registers_the_demo_skills_with_the_builtin_backend():
    assert {"publish_unreliable", "legal_review", "analyze_code", "analyze_docs", "analyze_tests"} <= set(DEMO_SKILLS)
    assert all(SKILLS[name] is perform for name, perform in DEMO_SKILLS.items())
    performed = set(SKILLS) | {"tot_orchestrate", "tot_explore"}
    assert {skill for skills in SKILLS_OF.values() for skill in skills} <= performed, "every demo agent can run"
    assert register_skill("legal_review", DEMO_SKILLS["legal_review"]) is DEMO_SKILLS["legal_review"]


def test_it_registers_the_game_of_24_verifier_with_evaluations():
    from engine.tot.game24 import verify
    from quality.evaluations import ANSWER_VERIFIERS, answer_errors

    assert verify in ANSWER_VERIFIERS
    assert answer_errors("(13 - 9) * (10 - 4)", "4 9 10 13") == []
    assert answer_errors("(13 - 9) * (10 - 4) + 0", "4 9 10 13") != []


def test_it_keeps_the_product_free_of_imports_of_the_demo():
    """The builtin backend learns the demo's skills from the demo, never the other way."""
    offending = []
    for package in ("agents", "core", "workflows", "knowledge", "executions", "engine"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
                offending += [f"{path.relative_to(ROOT)} imports {name}" for name in names
                              if name == "demo" or name.startswith("demo.")]
    assert offending == []


# ---------------------------------------------------------------- release review: retry and fallback


def test_it_falls_back_from_the_unreliable_publisher_to_the_backup():
    with pytest.raises(BackendError) as caught:
        backend.complete(request("Publisher", {"draft": "Release notes"}, attempt=3))
    assert (caught.value.code, caught.value.retryable) == ("PUBLISH_FAILED", True)
    assert "attempt 3" in str(caught.value)
    output = run("Publisher", {"draft": "Release notes"}, runner="Backup_Publisher")
    assert output["status"] == "published"


# ---------------------------------------------------------------- parallel analysis


@pytest.mark.parametrize("agent", ["Code_Analyzer", "Docs_Analyzer", "Test_Analyzer"])
def test_it_writes_a_long_deterministic_analysis_of_a_repository(agent):
    output = run(agent, {"repository": "acme/widgets"})
    assert set(output) == {"repository", "analysis", "findings", "score"}
    assert 60 <= len(output["analysis"].splitlines()) <= 120
    assert "acme/widgets" in output["analysis"].splitlines()[0] and "synthetic" in output["analysis"]
    assert all(set(f) == {"severity", "location", "message"} for f in output["findings"])
    assert 0 < output["score"] <= 10
    assert run(agent, {"repository": "acme/gadgets"})["analysis"] != output["analysis"]
    assert run(agent, execution_input={"repository": "acme/widgets"}) == output


def test_it_synthesizes_a_report_from_the_analyses():
    analyses = {node: run(agent, {"repository": "acme/widgets"})
                for node, agent in (("task_a", "Code_Analyzer"), ("task_b", "Docs_Analyzer"), ("task_c", "Test_Analyzer"))}
    output = run("Report_Synthesizer", {**analyses, "task_instructions": "Combine."})
    assert output["sections"] == ["task_a", "task_b", "task_c"]
    assert all(f"## {node}" in output["report"] for node in analyses)
    assert output["overall_score"] == round(sum(a["score"] for a in analyses.values()) / 3, 1)
    compressed = run("Report_Synthesizer", {"compressed_dependencies": "### task_a\nCode analysis of acme/widgets\nscore 7"})
    assert compressed["sections"] == ["compressed_dependencies"] and "Code analysis of acme/widgets" in compressed["report"]
    assert compressed["overall_score"] is None


# ---------------------------------------------------------------- release review


def test_it_drafts_reviews_once_and_then_accepts():
    state = {}
    first = run("Drafter", {"topic": "Switchyard 1.2"}, state=state)
    assert first["text"].startswith("Release notes for Switchyard 1.2") and first["round"] == 1
    state["draft"] = first["text"]
    review = run("Reviewer", {"draft": first["text"]}, state=state)
    assert (review["verdict"], review["round"]) == ("revise", 1) and review["comments"]
    state.update(feedback=review["comments"], rounds=review["round"])
    second = run("Drafter", {"topic": "Switchyard 1.2", "feedback": review["comments"]}, state=state)
    assert second["round"] == 2 and f"Revised after review: {review['comments']}" in second["text"]
    again = run("Reviewer", {"draft": second["text"]}, state=state)
    assert (again["verdict"], again["round"]) == ("accept", 2)


def test_it_publishes_at_a_deterministic_time():
    output = run("Backup_Publisher", {"draft": "Release notes"}, execution_id="exec_1", node_id="publish")
    assert set(output) >= {"published_at", "channel", "status"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", output["published_at"])
    assert (output["channel"], output["status"]) == ("release-notes", "published")
    assert run("Backup_Publisher", {"draft": "Release notes"}, execution_id="exec_1", node_id="publish") == output


def test_it_checks_compliance_and_cannot_do_a_legal_review():
    output = run("compliance_check", {"draft": "Release notes for 1.2\n- Faster."})
    assert output["compliant"] is True and all(c["passed"] for c in output["checks"])
    assert run("compliance_check", {"draft": "TODO: write"})["compliant"] is False
    with pytest.raises(BackendError) as caught:
        backend.complete(request("Compliance_Checker", {"draft": "x"}))
    assert (caught.value.code, caught.value.retryable) == ("CAPABILITY_GAP", False)
    assert "legal_database" in str(caught.value)


def test_it_plans_and_hands_escalations_to_a_person():
    plan = run("Orchestrator", {"goal": "Review the release"})
    assert plan["goal"] == "Review the release" and plan["steps"][0] == {"step": 1, "action": "read goal"}
    escalation = run("review_escalation", {"escalation": {"node_id": "compliance", "error": "legal_review needs a tool"}})
    assert escalation["decision"] == "hand_to_human" and escalation["reason"] == "legal_review needs a tool"
