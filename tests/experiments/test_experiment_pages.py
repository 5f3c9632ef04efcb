"""The experiment pages through Django's client: the list (filters, paging, progress, the
main score), an experiment's page (header, progress, figures, items filtered and paged,
outputs and reasons escaped), cancel (authors, once), the new-experiment form (prefilled,
pins and overrides for the chosen workflow, each refusal at its field with what was typed
kept and nothing stored), and the links to them from other pages."""
from unittest import mock

import pytest
from django.test import Client

from agents.models import AgentVersion
from executions.models import Execution
from experiments.experiment_services import experiment_create, experiment_start
from experiments.models import Experiment, ExperimentItem
from experiments.summaries import summary_refresh
from tests.experiments.core_support import QUESTIONS, load, run_in_process

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def nothing_sent():
    """Nothing goes to a worker: the tests run the items' runs here (run_in_process)."""
    with mock.patch("executions.tasks.run_node.apply_async"), mock.patch("quality.tasks.evaluate.apply_async"), \
            mock.patch("experiments.tasks.run_ended.apply_async"), \
            mock.patch("quality.derive_requests.tasks.raise_derive_requests.apply_async"):
        yield


def finished(loaded: bool = False, **fields) -> Experiment:
    if not loaded:
        load()
    experiment = experiment_create(workflow_id="echo", dataset="capitals", concurrency=4, actor="ann", **fields)
    return run_in_process(experiment_start(experiment=experiment))


CONTAINS = {"type": "contains", "path": "$.nodes.say.response"}


def test_every_page_needs_a_signed_in_user():
    experiment = finished()
    for path in ("/experiments/", "/experiments/new/", f"/experiments/{experiment.experiment_id}/"):
        response = Client().get(path)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), path
    response = Client().post(f"/experiments/{experiment.experiment_id}/cancel/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_the_list_shows_each_experiment_with_its_progress_and_main_score(viewer):
    experiment = finished(scorers=[CONTAINS], name="<i>first</i>")
    page = viewer.get("/experiments/").content.decode()
    assert f'data-experiment="{experiment.experiment_id}"' in page
    assert "echo@1" in page and "capitals@1" in page and "&lt;i&gt;first&lt;/i&gt;" in page and "<i>first" not in page
    assert "4 of 4" in page and 'data-width="100"' in page
    assert "<strong>0.667</strong>" in page  # contains: 2 of the 3 items with an expected value
    assert 'id="new-experiment"' not in page  # viewers start nothing
    assert 'href="/experiments/"' in page and ">Experiments</a>" in page  # the nav


def test_the_list_filters_by_workflow_dataset_and_status_and_pages(viewer):
    finished()
    load(name="other")
    pending = experiment_create(workflow_id="echo", dataset="other")
    for query, shown in (("status=pending", [pending]), ("dataset=other", [pending]), ("workflow=echo", None),
                         ("workflow=nope", []), ("status=bogus", None)):
        page = viewer.get(f"/experiments/?{query}").content.decode()
        count = page.count('data-experiment="')
        if shown is None:
            assert count == 2, query
        else:
            assert count == len(shown) and all(f'data-experiment="{e.experiment_id}"' in page for e in shown), query
    for _ in range(50):
        experiment_create(workflow_id="echo", dataset="other")
    page = viewer.get("/experiments/").content.decode()
    assert page.count('data-experiment="') == 50 and "page 1 of 2" in page
    assert viewer.get("/experiments/?page=2").content.decode().count('data-experiment="') == 2


def test_an_experiments_page_shows_what_ran_its_figures_and_its_items(viewer):
    load()
    version = AgentVersion.objects.get(agent__agent_id="Echo")
    experiment = finished(loaded=True, scorers=[CONTAINS, {"type": "regex", "name": "city", "pattern": "Paris|Rome"}],
                          agent_versions={"say": version.version},
                          agent_overrides={"Echo": {"runtime": {"model": "<b>other</b>"}}}, max_cost="2.50")
    page = viewer.get(f"/experiments/{experiment.experiment_id}/").content.decode()
    assert f"echo@{experiment.workflow_version.number}" in page and "capitals@1" in page
    assert f"Echo@{version.version}" in page and "&lt;b&gt;other&lt;/b&gt;" in page and "<b>other" not in page
    assert "$2.50" in page and 'data-active=""' in page
    assert 'data-scorer="contains"' in page and 'data-scorer="city"' in page
    assert "0.667" in page and "3 of 4" in page and "NO_EXPECTED" in page  # q4 has no expected value
    assert '<svg class="interval"' in page and "67 %" in page
    assert 'id="node-figures"' in page and 'data-node="say"' in page
    assert page.count('data-item="') == 4
    run = experiment.items.get(position=0).execution.execution_id
    assert f'href="/executions/{run}/"' in page
    assert f'href="/executions/?experiment={experiment.experiment_id}"' in page
    assert 'id="cancel-form"' not in page  # ended, and a viewer


def test_outputs_reasons_and_errors_are_escaped(viewer):
    experiment = finished(scorers=[CONTAINS])
    ExperimentItem.objects.filter(experiment=experiment, position=0).update(
        scores={"contains": {"score": 0.0, "reason": "<script>alert(1)</script>"}},
        error_code="<X>", error="<img src=x onerror=alert(1)>")
    page = viewer.get(f"/experiments/{experiment.experiment_id}/").content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    assert "&lt;img src=x" in page and "<img src=x" not in page and "&lt;X&gt;" in page


def test_the_items_are_filtered_by_status_and_paged(viewer):
    load([{"id": f"i{n:03d}", "input": {"question": f"q{n}"}} for n in range(60)], name="many")
    experiment = experiment_create(workflow_id="echo", dataset="many", concurrency=1)
    experiment_start(experiment=experiment)
    path = f"/experiments/{experiment.experiment_id}/"
    page = viewer.get(path).content.decode()
    assert page.count('data-item="') == 50 and "page 1 of 2" in page and 'data-active="true"' in page
    assert viewer.get(f"{path}?page=2").content.decode().count('data-item="') == 10
    running = viewer.get(f"{path}?status=running").content.decode()
    assert running.count('data-item="') == 1 and 'data-item="i000"' in running
    assert viewer.get(f"{path}?status=bogus").content.decode().count('data-item="') == 50  # an unknown status: all
    assert viewer.get("/experiments/exp_nope/").status_code == 404


def test_an_author_cancels_a_running_experiment_once_and_a_viewer_may_not(author, viewer):
    load()
    experiment = experiment_start(experiment=experiment_create(workflow_id="echo", dataset="capitals", concurrency=1))
    path = f"/experiments/{experiment.experiment_id}/"
    assert 'id="cancel-form"' in author.get(path).content.decode()
    assert 'id="cancel-form"' not in viewer.get(path).content.decode()
    assert viewer.post(f"{path}cancel/").status_code == 403
    experiment.refresh_from_db()
    assert experiment.status == "running"
    response = author.post(f"{path}cancel/", follow=True)
    experiment.refresh_from_db()
    assert (experiment.status, experiment.cancelled_by) == ("cancelled", "author-person")
    assert "Cancelled" in response.content.decode()
    again = author.post(f"{path}cancel/", follow=True).content.decode()
    assert "only a pending or running experiment can be cancelled" in again
    assert author.get(f"{path}cancel/").status_code == 405


def test_the_form_is_for_authors_and_prefilled_from_a_dataset_or_a_workflow(author, viewer):
    load()
    assert viewer.get("/experiments/new/").status_code == 403
    page = author.get("/experiments/new/?dataset=capitals").content.decode()
    assert '<option value="capitals" selected>' in page and 'id="choose-first"' in page
    page = author.get("/experiments/new/?workflow=echo").content.decode()
    assert '<option value="echo" selected>' in page
    version = AgentVersion.objects.get(agent__agent_id="Echo").version
    assert 'name="pin__say"' in page and f'<option value="{version}">{version}</option>' in page
    assert 'name="backend__Echo"' in page and '<option value="builtin">builtin</option>' in page
    assert 'name="model__Echo"' in page
    # The links that prefill it.
    assert 'href="/experiments/new/?dataset=capitals"' in author.get("/datasets/capitals/").content.decode()
    assert 'href="/experiments/new/?workflow=echo"' in author.get("/workflows/echo/").content.decode()
    assert 'id="run-experiment"' not in viewer.get("/datasets/capitals/").content.decode()


def form(**fields) -> dict:
    return {"workflow_id": "echo", "dataset": "capitals", "contains": "on", "contains_path": "$.nodes.say.response",
            "contains_case_sensitive": "on", **fields}


def test_the_form_creates_and_starts_the_experiment_with_its_pins_overrides_and_scorers(author):
    load()
    version = AgentVersion.objects.get(agent__agent_id="Echo")
    response = author.post("/experiments/new/", form(
        name="try", pin__say=version.version, backend__Echo="builtin", model__Echo="other", concurrency="2",
        max_cost="1.5", regex="on", regex_path="$", regex_pattern="Paris", llm_judge="", scorers_json='[{"type": "exact", "name": "same"}]'))
    experiment = Experiment.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/experiments/{experiment.experiment_id}/"
    assert (experiment.name, experiment.status, experiment.concurrency, experiment.created_by) == \
        ("try", "running", 2, "author-person")
    assert experiment.agent_versions == {"say": version.pk}
    assert experiment.agent_overrides == {"say": {"runtime": {"backend": "builtin", "model": "other"}}}
    assert experiment.scorers == [{"type": "contains", "path": "$.nodes.say.response", "case_sensitive": True},
                                  {"type": "regex", "path": "$", "pattern": "Paris"}, {"type": "exact", "name": "same"}]
    assert experiment.max_cost == 1_500_000_000_000
    assert ExperimentItem.objects.filter(experiment=experiment, status="running").count() == 2


@pytest.mark.parametrize("fields, field, says", [
    ({"dataset": ""}, "dataset", "This field is required"),
    ({"concurrency": "0"}, "concurrency", "greater than or equal to 1"),
    ({"regex": "on", "regex_pattern": "(unclosed"}, "regex", "scorers[1].pattern"),
    ({"contains_path": "$.[", "contains_case_sensitive": ""}, "contains", "scorers[0].path"),
    ({"llm_judge": "on", "llm_judge_rubric": "polite", "llm_judge_agent": "Nobody"}, "llm_judge",
     "agent &#x27;Nobody&#x27; does not exist"),
    ({"scorers_json": "[{\"type\": \"exact\", \"bogus\": 1}]"}, "scorers_json", "scorers[1].bogus"),
    ({"scorers_json": "{not json"}, "scorers_json", "is not JSON"),
    ({"model__Echo": "x", "backend__Echo": "nowhere"}, "backend__Echo", "Select a valid choice"),
    ({"pin__say": "9.9.9"}, "pin__say", "Select a valid choice"),
])
def test_a_refusal_is_shown_at_its_field_keeping_what_was_typed_and_stores_nothing(author, fields, field, says):
    load()
    response = author.post("/experiments/new/", form(name="<kept>", **fields))
    assert response.status_code == 200
    page = response.content.decode()
    error = page.split(f'id="id_{field}-error"', 1)
    assert len(error) == 2, f"no error at {field}: {page[page.find('field-error') - 300:][:800]}"
    assert says in error[1].split("</p>", 1)[0]
    assert 'value="&lt;kept&gt;"' in page
    assert not Experiment.objects.exists() and not Execution.objects.exists()


def test_each_place_a_refusal_names_has_its_field_on_the_form():
    load()
    from executions.run_graphs import run_graph
    from experiments.experiment_views import ExperimentForm, _field_of
    from workflows.models import Workflow

    _, graph = run_graph(Workflow.objects.get(workflow_id="echo"))
    shown = ExperimentForm(graph=graph)
    scorer_fields = ["contains", "llm_judge", "scorers_json", "scorers_json"]
    for where, field in (("workflow_id", "workflow_id"), ("dataset_version", "dataset_version"), ("max_cost", "max_cost"),
                         ("agent_versions.say", "pin__say"), ("agent_versions.Echo", None),
                         ("agent_overrides.Echo.runtime.backend", "backend__Echo"),
                         ("agent_overrides.Echo.runtime.model", "model__Echo"), ("agent_overrides.Echo", "backend__Echo"),
                         ("scorers[1].agent", "llm_judge"), ("scorers[3].name", "scorers_json"), ("scorers[7]", None),
                         ("scorers", None), ("", None)):
        assert _field_of(shown, where, scorer_fields) == field, where


def test_a_run_of_an_experiment_links_back_to_it(viewer):
    experiment = finished()
    run = experiment.items.get(position=1).execution
    page = viewer.get(f"/executions/{run.execution_id}/").content.decode()
    assert f'href="/experiments/{experiment.experiment_id}/"' in page and '<span class="mono">q2</span>' in page


def test_the_figures_wait_for_an_ended_item(viewer):
    load()
    experiment = experiment_start(experiment=experiment_create(workflow_id="echo", dataset="capitals",
                                                               scorers=[CONTAINS]))
    summary_refresh(experiment.pk, force=True)
    page = viewer.get(f"/experiments/{experiment.experiment_id}/").content.decode()
    assert 'id="no-figures"' in page and f"0 of {len(QUESTIONS)}" in page
