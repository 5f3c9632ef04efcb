"""The evaluations page: filters (what it is of, which one, pass), links to the targets,
the scores as bars, and the per-target report (`?target_type=agent&target_id=X`)."""
import io
import re

import pytest
from django.core.management import call_command

from tests.pages.test_agents import evaluation, finished_run, signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(tmp_path, settings):
    settings.WORKSPACE_ROOT = tmp_path
    call_command("load_demo", stdout=io.StringIO())


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
    assert '<span class="low" style="width: 30%"></span>' in page       # accuracy 0.3: low
    assert '<span class="low" style="width: 40%"></span>' in page       # overall 0.4
    assert '<span class="mid" style="width: 50%"></span>' in page       # completeness 0.5


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
