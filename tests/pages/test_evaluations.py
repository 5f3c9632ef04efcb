"""The evaluations page: filters (what it is of, which one, how made, pass), links to the
targets and to each evaluation, the scores as bars, the per-target report
(`?target_type=agent&target_id=X`); and one evaluation's page: each score's formula and
the figures it used, an aggregate's evaluations, the quality gate."""
import re

import pytest
from django.test import Client
from django.utils.html import escape

from executions.models import Evaluation, Execution
from executions.services import execution_start
from quality.evaluations import execution_evaluate
from tests.executions.conftest import drain
from tests.pages.test_agents import evaluation, finished_run, signed_in
from tests.workflow_edits import edit_workflow
from workflows.models import Workflow

pytestmark = pytest.mark.django_db


@pytest.fixture
def evaluations(demo):
    finished_run("exec_thesis_1", "thesis_reading", ["Scholar", "Validator"])
    evaluation("eval_run_good", "execution", "exec_thesis_1", 0.9, feedback=["every claim has evidence"])
    evaluation("eval_scholar_low", "agent", "Scholar", 0.4, accuracy=0.3, completeness=0.5, efficiency=0.4,
               feedback=["misses methodology", "<script>alert(1)</script>"])
    evaluation("eval_scholar_ok", "agent", "Scholar", 0.8)
    evaluation("eval_validator", "agent", "Validator", 0.75)
    evaluation("eval_workflow", "workflow", "thesis_reading", 0.7)


def ids(response) -> list[str]:
    return sorted(e.evaluation_id for e in response.context["page"])


def test_it_lists_every_evaluation_with_its_target_linked(api, evaluations):
    response = signed_in(api.viewer.user).get("/evaluations/")
    assert len(ids(response)) == 5
    page = response.content.decode()
    assert 'href="/executions/exec_thesis_1/"' in page
    assert 'href="/agents/Scholar/"' in page
    assert 'href="/workflows/thesis_reading/"' in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in page


@pytest.mark.parametrize("query, expected", [
    ({"target_type": "agent"}, ["eval_scholar_low", "eval_scholar_ok", "eval_validator"]),
    ({"target_type": "agent", "target_id": "Scholar"}, ["eval_scholar_low", "eval_scholar_ok"]),
    ({"target_id": "exec_thesis_1"}, ["eval_run_good"]),
    ({"pass": "false"}, ["eval_scholar_low"]),
    ({"pass": "true", "target_type": "agent"}, ["eval_scholar_ok", "eval_validator"]),
    ({"evaluation": "eval_workflow"}, ["eval_workflow"]),
    ({"target_type": "nonsense", "pass": "maybe"}, ["eval_run_good", "eval_scholar_low", "eval_scholar_ok",
                                                     "eval_validator", "eval_workflow"]),
])
def test_it_filters_evaluations(api, evaluations, query, expected):
    assert ids(signed_in(api.viewer.user).get("/evaluations/", query)) == expected


def test_it_reports_on_one_target_with_its_averages(api, evaluations):
    response = signed_in(api.viewer.user).get("/evaluations/", {"target_type": "agent", "target_id": "Scholar"})
    summary = response.context["summary"]
    assert (summary["count"], summary["passed"]) == (2, 1)
    assert summary["overall_score"] == pytest.approx(0.6)
    page = response.content.decode()
    assert re.search(r'Of the agent\s*<a class="mono" href="/agents/Scholar/">Scholar</a>', page)
    assert "50%" in page  # one of two passed


def test_it_draws_each_score_as_a_bar_as_wide_as_the_score(api, evaluations):
    page = signed_in(api.viewer.user).get("/evaluations/", {"evaluation": "eval_scholar_low"}).content.decode()
    assert 'title="accuracy: 0.30"' in page
    assert '<span class="low" data-width="30"></span>' in page       # accuracy 0.3: low
    assert '<span class="low" data-width="40"></span>' in page       # overall 0.4
    assert '<span class="mid" data-width="50"></span>' in page       # completeness 0.5


def test_it_says_so_when_nothing_matches(api, evaluations):
    page = signed_in(api.viewer.user).get("/evaluations/", {"target_id": "nobody"}).content.decode()
    assert "No evaluation matches these filters." in page


def test_it_says_how_evaluations_come_when_there_are_none(api, demo):
    page = signed_in(api.viewer.user).get("/evaluations/").content.decode()
    assert "No evaluation yet" in page


def test_it_reads_the_page_in_a_fixed_number_of_queries(api, evaluations, django_assert_max_num_queries):
    viewer = signed_in(api.viewer.user)
    with django_assert_max_num_queries(7):
        assert viewer.get("/evaluations/").status_code == 200


# --- in the browser ------------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_it_goes_from_an_agent_to_its_evaluations(page_for, api, evaluations):
    from playwright.sync_api import expect

    from tests.pages.conftest import screenshot

    page = page_for(api.viewer.user)
    page.goto("/agents/Scholar/")
    page.get_by_role("link", name="All evaluations of this agent →").click()
    page.wait_for_url("**/evaluations/?target_type=agent&target_id=Scholar")
    expect(page.locator("tbody tr")).to_have_count(2)
    expect(page.locator(".summary")).to_contain_text("passed (1 of 2)")
    page.goto("/evaluations/")
    expect(page.locator("tbody tr")).to_have_count(5)
    screenshot(page, "evaluations")


def test_it_links_each_evaluation_to_its_page(api, evaluations):
    page = signed_in(api.viewer.user).get("/evaluations/").content.decode()
    for evaluation_id in ("eval_run_good", "eval_scholar_low", "eval_workflow"):
        assert f'<a class="mono" href="/evaluations/{evaluation_id}/">{evaluation_id}</a>' in page
    agent_page = signed_in(api.viewer.user).get("/agents/Scholar/").content.decode()
    assert 'href="/evaluations/eval_scholar_low/"' in agent_page and 'href="/evaluations/eval_run_good/"' in agent_page


def test_it_filters_by_method_and_leaves_aggregates_out_of_the_averages(api, evaluations):
    evaluation("agg_agent_Scholar", "agent", "Scholar", 0.6, method="aggregate",
               details={"evaluations": ["eval_scholar_low", "eval_scholar_ok"]})
    viewer = signed_in(api.viewer.user)
    everything = viewer.get("/evaluations/", {"target_type": "agent", "target_id": "Scholar"})
    assert ids(everything) == ["agg_agent_Scholar", "eval_scholar_low", "eval_scholar_ok"]
    summary = everything.context["summary"]
    assert (summary["count"], summary["aggregates"]) == (2, 1)  # the mean of two, not of the two and their mean
    assert summary["overall_score"] == pytest.approx(0.6) and summary["accuracy"] == pytest.approx(0.55)
    assert "without the 1 aggregate listed" in everything.content.decode()
    aggregates = viewer.get("/evaluations/", {"method": "aggregate"})
    assert ids(aggregates) == ["agg_agent_Scholar"]
    assert (aggregates.context["summary"]["count"], aggregates.context["summary"]["aggregates"]) == (1, 0)
    assert ids(viewer.get("/evaluations/", {"method": "manual", "target_id": "Scholar"})) == [
        "eval_scholar_low", "eval_scholar_ok"]
    assert ids(viewer.get("/evaluations/", {"method": "computed"})) == []


# --- one evaluation's page -------------------------------------------------------------

def test_it_shows_a_manual_evaluation_with_its_scores_and_feedback_only(api, evaluations):
    response = signed_in(api.viewer.user).get("/evaluations/eval_scholar_low/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Evaluation of agent <span class=\"mono\">Scholar</span>" in page
    assert 'title="accuracy: 0.30"' in page and 'title="overall: 0.40"' in page
    assert "misses methodology" in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page
    assert "Given by a person (or imported)" in page
    assert 'class="formula"' not in page and 'id="quality-gate"' not in page
    assert 'href="/agents/Scholar/"' in page


def test_it_lists_and_links_what_an_aggregate_averages(api, evaluations):
    evaluation("agg_agent_Scholar", "agent", "Scholar", 0.6, method="aggregate", details={
        "formulas": {"accuracy": "mean of accuracy over the evaluations"},
        "evaluations": ["eval_scholar_ok", "eval_scholar_low", "eval_deleted_since"],
        "policy": {"pass_score": 0.7, "revise_score": 0.4}})
    page = signed_in(api.viewer.user).get("/evaluations/agg_agent_Scholar/").content.decode()
    assert "The 3 evaluations it averages" in page
    assert page.index('href="/evaluations/eval_scholar_ok/"') < page.index('href="/evaluations/eval_scholar_low/"')
    assert "eval_deleted_since" in page and 'href="/evaluations/eval_deleted_since/"' not in page
    assert "mean of accuracy over the evaluations" in page
    assert "pass score 0.70, revise score 0.40" in page


DETAILS = {
    "formulas": {"completeness": "completed / expected", "accuracy": "checks and judge", "efficiency": "tokens and time",
                 "overall_score": "weights · scores", "pass": "overall ≥ pass score", "action": "approve, revise, reject"},
    "completeness": {"expected": ["draft", "review", "publish"], "completed": ["draft", "review"],
                     "incomplete": ["publish"]},
    "accuracy": {"checks": [{"name": "contract Drafter → Reviewer", "passed": True, "node_id": "draft",
                             "agent_id": "Drafter", "detail": ""},
                            {"name": "contract Reviewer → Publisher", "passed": False, "node_id": "review",
                             "agent_id": "Reviewer", "detail": "<img src=x onerror=alert(1)> is not a string"}],
                 "checks_passed": 1, "judge": None, "unverified": False,
                 "judge_problem": "judge Judge could not answer (TIMEOUT): no answer in 30 s"},
    "efficiency": {"tokens_used": 12000, "token_budget": 48000, "token_efficiency": 0.75, "elapsed_seconds": 90.0,
                   "wall_seconds": 600, "time_efficiency": 0.85},
    "policy": {"weights": {"accuracy": 0.4, "completeness": 0.4, "efficiency": 0.2}, "pass_score": 0.7,
               "revise_score": 0.4},
    "quality_gate": {"gate": {"accuracy": 0.8, "overall_score": 0.7},
                     "failed": [{"score": "accuracy", "value": 0.5, "minimum": 0.8},
                                {"score": "overall_score", "value": 0.6267, "minimum": 0.7}]},
}


def test_it_writes_out_each_scores_formula_and_the_arithmetic_on_its_figures(api, evaluations):
    finished_run("exec_review_1", "release_review", ["Drafter", "Reviewer"], status="failed")
    evaluation("eval_review_1", "execution", "exec_review_1", 0.6267, accuracy=0.5, completeness=0.6667,
               efficiency=0.8, method="computed", details=DETAILS,
               execution=Execution.objects.get(execution_id="exec_review_1"))
    page = signed_in(api.viewer.user).get("/evaluations/eval_review_1/").content.decode()
    assert "2 completed / 3 expected = 0.67" in page
    assert re.search(r'id="incomplete-nodes"><li class="chip mono missing">publish</li>', page)
    assert "1 of 2 checks passed = 0.50" in page
    assert re.search(r'<tr class="failed"><td>contract Reviewer → Publisher</td>', page)
    assert "&lt;img src=x onerror=alert(1)&gt; is not a string" in page and "<img src=x" not in page
    assert "judge Judge could not answer (TIMEOUT)" in page and 'id="judge-problem"' in page
    assert "1 − 12,000 / 48,000 = 0.75" in page and "1 − 90.0 s / 600 s = 0.85" in page
    assert "(0.75 + 0.85) / 2 = 0.80" in page
    assert "0.40 × 0.50 + 0.40 × 0.67 + 0.20 × 0.80 = 0.63" in page
    assert "Quality gate failed: accuracy 0.50 &lt; 0.80, overall score 0.63 &lt; 0.70" in page
    assert '<a id="evaluation-run" class="mono" href="/executions/exec_review_1/">exec_review_1</a>' in page


def test_it_says_when_nothing_in_a_run_could_be_verified(api, evaluations):
    unverified = {"accuracy": {"checks": [], "checks_passed": 0, "judge": None, "unverified": True}}
    complete = {"completeness": {"expected": ["draft"], "completed": ["draft"], "incomplete": []}}
    evaluation("eval_unverified", "execution", "exec_thesis_1", 0.9, method="computed",
               details=DETAILS | unverified | complete)
    page = signed_in(api.viewer.user).get("/evaluations/eval_unverified/").content.decode()
    assert 'id="unverified"' in page and "nothing verifiable: 1.00 by default" in page
    # A node did not complete (DETAILS's publish): nothing verifiable is then 0.00, not 1.00.
    evaluation("eval_unverified_failed", "execution", "exec_thesis_1", 0.3, accuracy=0.0, method="computed",
               details=DETAILS | unverified)
    page = signed_in(api.viewer.user).get("/evaluations/eval_unverified_failed/").content.decode()
    assert "nothing verifiable: 0.00 by default" in page


@pytest.mark.parametrize("evaluation_id", ["eval_nope", "eval%00nul", "%3Cscript%3E"])
def test_it_answers_404_for_an_evaluation_that_does_not_exist(api, evaluations, evaluation_id):
    assert signed_in(api.viewer.user).get(f"/evaluations/{evaluation_id}/").status_code == 404


def test_it_sends_anonymous_visitors_of_an_evaluation_to_the_login_page(evaluations):
    response = Client().get("/evaluations/eval_run_good/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


# --- a computed evaluation, from a run driven in this process ----------------------------

def finished_in_process(workflow_id: str, *, judge: str | None = None, gate: dict | None = None,
                        **input) -> Execution:
    """Run a demo workflow to its end in this process (with `no_tasks`), not yet evaluated;
    `judge` and `gate` set the workflow's judge agent and quality gate first."""
    if judge or gate:
        edit_workflow(workflow_id, lambda document: document["evaluation"].update(judge_agent=judge, quality_gate=gate))
    execution = drain(execution_start(workflow=Workflow.objects.get(workflow_id=workflow_id), input=input))
    assert execution.status == "success"
    return execution


def evaluated_run(workflow_id: str, **options) -> Evaluation:
    """A run driven in this process and evaluated as the worker would evaluate it."""
    return execution_evaluate(execution_pk=finished_in_process(workflow_id, **options).pk)


@pytest.mark.django_db(transaction=True)
def test_it_explains_a_computed_evaluation_of_a_real_run(api, demo, no_tasks, django_assert_max_num_queries):
    evaluation_ = evaluated_run("thesis_reading", judge="Judge", gate={"accuracy": 0.8, "efficiency": 0.99})
    viewer = signed_in(api.viewer.user)
    with django_assert_max_num_queries(6):  # session, user, roles, the evaluation and its run, the same run's others
        response = viewer.get(f"/evaluations/{evaluation_.evaluation_id}/")
    page = response.content.decode()
    for name in ("completeness", "accuracy", "efficiency", "overall_score"):
        assert f'<p class="formula">{escape(evaluation_.details["formulas"][name])}</p>' in page, name
    assert "3 completed / 3 expected = 1.00" in page
    assert "2 of 2 checks passed" in page and "contract Scholar → Validator" in page
    assert re.search(r'href="/agents/Judge/">Judge</a> scored the outputs\s*<strong>1.00</strong>', page)
    assert re.search(r"1 − [\d,]+ / 240,000 = 0\.\d\d", page)
    assert re.search(r"Quality gate failed: efficiency 0\.9\d+ &lt; 0\.99", page)
    assert f'href="/executions/{evaluation_.target_id}/"' in page
    for agent_id in ("Scholar", "Validator", "Knowledge_Vault"):  # each agent's part of the same run
        assert f'href="/evaluations/{evaluation_.evaluation_id}_{agent_id}/"' in page
    part = viewer.get(f"/evaluations/{evaluation_.evaluation_id}_Scholar/").content.decode()
    assert "1 completed / 1 expected = 1.00" in part and f'href="/evaluations/{evaluation_.evaluation_id}/"' in part


@pytest.mark.django_db(transaction=True)
def test_it_shows_an_accuracy_nobody_measured_as_not_measured_and_the_overall_of_the_rest(api, demo, no_tasks):
    evaluation_ = evaluated_run("parallel_analysis", gate={"accuracy": 0.5}, repository="acme")  # no judge, no contract
    assert evaluation_.accuracy is None
    viewer = signed_in(api.viewer.user)
    page = viewer.get(f"/evaluations/{evaluation_.evaluation_id}/").content.decode()
    assert 'title="accuracy: not measured"' in page and 'class="scorebar-value muted">not measured<' in page
    assert "nothing verifiable: not measured" in page and 'id="unverified"' in page
    assert "accuracy was not measured: the overall score is of completeness and efficiency alone" in page
    assert re.search(r"\(0\.40 × 1\.00 \+ 0\.20 × 0\.\d\d\) / 0\.60 = [01]\.\d\d", page)
    assert "Quality gate failed: accuracy not measured (minimum 0.50)" in page
    assert "did not pass" in page and '<strong id="evaluation-action">revise</strong>' in page
    run_page = viewer.get(f"/executions/{evaluation_.target_id}/").content.decode()
    assert "Quality gate failed: accuracy not measured (minimum 0.50)" in run_page
    listed = viewer.get("/evaluations/", {"target_type": "agent"}).content.decode()
    assert 'title="accuracy: not measured"' in listed


@pytest.mark.django_db(transaction=True)
def test_it_shows_how_a_run_was_scored_in_the_browser(page_for, api, demo, no_tasks):
    from playwright.sync_api import expect

    from tests.pages.conftest import screenshot

    evaluation_ = evaluated_run("thesis_reading", judge="Judge", gate={"accuracy": 0.8, "efficiency": 0.99})
    page = page_for(api.viewer.user)
    page.goto("/evaluations/?method=computed&target_type=execution")
    page.get_by_role("link", name=evaluation_.evaluation_id).click()
    page.wait_for_url(f"**/evaluations/{evaluation_.evaluation_id}/")
    expect(page.locator("#quality-gate")).to_contain_text("Quality gate failed: efficiency")
    expect(page.locator("#accuracy .formula")).to_contain_text("mean of (passed checks / checks)")
    expect(page.locator("#accuracy table.checks tbody tr")).to_have_count(2)
    expect(page.locator("#accuracy table.checks tbody tr").first).to_contain_text("pass")
    expect(page.locator("#judge")).to_contain_text("Judge scored the outputs 1.00")
    expect(page.locator("#efficiency #token-efficiency")).to_contain_text("240,000")
    expect(page.locator("#overall .arithmetic")).to_contain_text("0.40 × 1.00 + 0.40 × 1.00 + 0.20 ×")
    screenshot(page, "evaluation_detail")
    page.locator("#evaluation-run").click()
    page.wait_for_url(f"**/executions/{evaluation_.target_id}/")
    expect(page.locator("#quality-gate")).to_contain_text("Quality gate failed: efficiency")


# -- recording an evaluation by hand -------------------------------------------------------


def test_it_lets_only_authors_record_an_evaluation(api, demo):
    assert signed_in(api.viewer.user).get("/evaluations/new/").status_code == 403
    assert signed_in(api.viewer.user).post("/evaluations/new/", {"target_type": "agent"}).status_code == 403
    assert "record-evaluation" not in signed_in(api.viewer.user).get("/evaluations/").content.decode()
    assert 'id="record-evaluation"' in signed_in(api.author.user).get("/evaluations/").content.decode()
    assert not Evaluation.objects.exists()


def test_it_names_what_is_wrong_with_a_hand_evaluation_and_stores_nothing(api, demo):
    author = signed_in(api.author.user)
    response = author.post("/evaluations/new/", {"target_type": "agent", "target_id": "Nobody", "accuracy": "0.5",
                                                 "completeness": "1.5", "efficiency": "x", "action": "approve"})
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert "completeness" in errors and "efficiency" in errors
    response = author.post("/evaluations/new/", {"target_type": "agent", "target_id": "Nobody", "accuracy": "0.5",
                                                 "completeness": "0.5", "efficiency": "0.5", "action": "revise"})
    assert response.context["form"].errors["target_id"] == ["agent 'Nobody' does not exist"]
    assert not Evaluation.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_it_records_an_evaluation_from_the_page_and_shows_it(page_for, api, demo):
    page = page_for(api.author.user)
    page.goto("/evaluations/?target_type=agent&target_id=Scholar")
    page.click("#record-evaluation")
    assert page.input_value("#id_target_id") == "Scholar"
    page.fill("#id_accuracy", "0.5")
    page.fill("#id_completeness", "1")
    page.fill("#id_efficiency", "1")
    page.fill("#id_feedback", "misses the methods section\n<b>cites nothing</b>")
    page.click("#save-evaluation")
    page.wait_for_url(re.compile(r"/evaluations/eval_[^/]+/$"))
    stored = Evaluation.objects.get(method="manual")
    # 0.4 × 0.5 + 0.4 × 1 + 0.2 × 1 = 0.8: it passes, and is approved, by the same formula as computed ones
    assert (stored.target_id, stored.overall_score, stored.passed, stored.action) == ("Scholar", 0.8, True, "approve")
    assert stored.feedback == ["misses the methods section", "<b>cites nothing</b>"]
    assert stored.created_by == api.author.user.username
    assert page.get_by_text("<b>cites nothing</b>").count() == 1  # shown as text, not markup
    assert Evaluation.objects.filter(method="aggregate", target_type="agent", target_id="Scholar").exists()
