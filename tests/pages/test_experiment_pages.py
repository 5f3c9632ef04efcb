"""An experiment as a person runs one, in a real browser on real workers: a CSV imported as a
dataset through the upload page, the experiment started from the form (its workflow and
dataset chosen, a scorer ticked), its page following the progress to the end, then the
figures: the mean with its interval, the pass rate, how many items were scored. Then a new
version of its agent comes, run again with that version pinned: the two experiments are
compared from the experiments list, the items that got worse are highlighted, and a regressed
item's two runs are compared node by node."""
import re

import pytest
from playwright.sync_api import expect

from core.documents import import_documents
from experiments.models import Experiment
from tests.executions.conftest import workers  # noqa: F401 - real worker processes on the test database
from tests.experiments.core_support import ECHO
from tests.pages.conftest import screenshot
from tests.pages.test_workflow_editor import watched

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]

# Four questions; the third expects another city, the fourth expects nothing (so it is not scored).
CSV = b"""id,question,expected
q1,the capital of France is Paris,Paris
q2,the capital of Italy is Rome,Rome
q3,the capital of Spain is Madrid,Lisbon
q4,no expected value here,
"""


@pytest.fixture
def echo_on_workers(workers, settings, tmp_path):  # noqa: F811 - the fixture imported above
    settings.WORKSPACE_ROOT = tmp_path
    workers.env["WORKSPACE_ROOT"] = str(tmp_path)
    import_documents(ECHO, actor="test")
    return workers


# A later version of Echo that performs `noop` (answers {"ok": true}): its runs give no response,
# so the items the first version passed fail.
ECHO_NOOP = {**ECHO[0], "version": "2.0.0", "prompt_config": {"system_prompt": "Say nothing useful."},
             "capabilities": {"skills": ["noop"]}}


def test_a_person_imports_a_csv_runs_an_experiment_reads_its_figures_and_compares_another(page_for, api, echo_on_workers):
    page, errors = watched(page_for, api.author.user)

    # The dataset, from a CSV file on the upload page.
    page.goto("/datasets/upload/")
    page.fill("#id_name", "capitals")
    page.set_input_files("#id_file", files=[{"name": "capitals.csv", "mimeType": "text/csv", "buffer": CSV}])
    page.click("#upload-button")
    page.wait_for_url("**/datasets/capitals/")
    expect(page.locator("#items tbody tr")).to_have_count(4)

    # The form, from the dataset's page: the dataset chosen, then the workflow (its node shown).
    page.click("#run-experiment")
    page.wait_for_url(re.compile(r"/experiments/new/\?dataset=capitals$"))
    expect(page.locator("#id_dataset")).to_have_value("capitals")
    page.select_option("#id_workflow_id", "echo")
    page.wait_for_url(re.compile(r"workflow_id=echo"))
    expect(page.locator("#id_pin__say")).to_be_visible()
    expect(page.locator("#id_dataset")).to_have_value("capitals")
    page.fill("#id_name", "Capitals on Echo")
    page.check("#id_contains")
    page.fill("#id_contains_path", "$.nodes.say.response")
    page.fill("#id_concurrency", "2")
    page.click("#start-button")
    page.wait_for_url(re.compile(r"/experiments/exp_[^/]+/$"))
    experiment = Experiment.objects.get()
    assert (experiment.name, experiment.concurrency) == ("Capitals on Echo", 2)

    # A worker runs the items; the page follows them to the end, then shows the figures.
    expect(page.locator("#experiment-live")).to_be_visible()
    echo_on_workers.start(1)
    expect(page.locator("#experiment-status")).to_have_text("success", timeout=90_000)
    expect(page.locator("#progress-text")).to_have_text("4 of 4 items ended")
    expect(page.locator("#progress [data-count=success]")).to_have_text("4")
    expect(page.locator("#experiment-live")).to_be_hidden()
    row = page.locator("#scorer-figures tr[data-scorer=contains]")
    expect(row.locator("[data-figure=mean]")).to_have_text("0.667")
    expect(row.locator("[data-figure=pass_rate]")).to_have_text("67 %")
    expect(row.locator("[data-figure=scored]")).to_have_text("3 of 4")
    expect(row).to_contain_text("NO_EXPECTED 1")
    expect(row.locator("svg.interval line.interval-mean")).to_have_attribute("x1", "66.67")
    expect(page.locator("#node-figures tr[data-node=say]")).to_be_visible()
    expect(page.locator("#items tbody tr")).to_have_count(4)
    expect(page.locator("#items tr[data-item=q3] .item-score.fail")).to_be_visible()
    screenshot(page, "experiment")

    # An item's run links back to its experiment.
    page.locator("#items tr[data-item=q1] a.mono").click()
    expect(page.locator("#experiment-of")).to_contain_text(f"Item q1 of experiment {experiment.experiment_id}")

    # The form as it looks filled (asked for again with what a person typed, as choosing a workflow does).
    page.goto("/experiments/new/?workflow_id=echo&dataset=capitals&name=Capitals+on+Echo&contains=on"
              "&contains_path=%24.nodes.say.response&concurrency=2&max_cost=1.50")
    expect(page.locator("#id_contains")).to_be_checked()
    screenshot(page, "experiment-new")

    # A new version of the agent; the same experiment again, that version pinned on its node.
    import_documents([ECHO_NOOP], actor="test")
    page.goto("/experiments/new/?workflow_id=echo&dataset=capitals")
    page.select_option("#id_pin__say", "2.0.0")
    page.fill("#id_name", "Capitals on Echo 2")
    page.check("#id_contains")
    page.fill("#id_contains_path", "$.nodes.say.response")
    page.click("#start-button")
    page.wait_for_url(re.compile(r"/experiments/exp_[^/]+/$"))
    second = Experiment.objects.exclude(pk=experiment.pk).get()
    expect(page.locator("#experiment-status")).to_have_text("success", timeout=90_000)
    expect(page.locator("#items tr[data-item=q1] .item-score.fail")).to_be_visible()

    # The two compared from the experiments list: both ticked, the older one the baseline.
    page.goto("/experiments/")
    page.check(f"input[name=ids][value='{experiment.experiment_id}']")
    page.check(f"input[name=ids][value='{second.experiment_id}']")
    page.click("#compare-button")
    page.wait_for_url(re.compile(r"/experiments/compare/\?ids=exp_[^&]+&ids=exp_[^&]+$"))
    expect(page.locator(f"#compared-experiments tr[data-experiment={experiment.experiment_id}]")).to_contain_text(
        "baseline")
    delta = page.locator(f"#deltas tr[data-experiment={second.experiment_id}][data-scorer=contains]")
    expect(delta.locator("td").nth(2)).to_have_text("3")
    expect(delta.locator("td").nth(3)).to_have_text("0.667")
    expect(delta.locator("td").nth(4)).to_have_text("0.000")
    expect(delta.locator("td").nth(5)).to_have_text("-0.667")
    # Three paired items, two of them 1 → 0: the bootstrap's interval reaches 0 or stays below it.
    expect(delta.locator(".verdict")).to_have_text(re.compile(r"^(regressed|no clear change)$"))
    expect(page.locator("#row-counts")).to_contain_text("4 items · 2 regressed · 0 improved")
    for item_id in ("q1", "q2"):
        expect(page.locator(f"#compare-rows tr[data-item={item_id}]")).to_have_class(re.compile(r"\bregressed\b"))
    for item_id in ("q3", "q4"):
        expect(page.locator(f"#compare-rows tr[data-item={item_id}]")).not_to_have_class(re.compile("regressed"))
    q1 = page.locator("#compare-rows tr[data-item=q1]")
    expect(q1.locator(f"td[data-experiment={second.experiment_id}] .delta")).to_have_text("(-1.000)")
    screenshot(page, "experiment-compare")

    # The regressed item's two runs, node by node: the baseline's as A, the new version's as B.
    q1.locator(f"td[data-experiment={second.experiment_id}] a.compare-runs").click()
    page.wait_for_url(re.compile(r"/executions/compare/\?a=[^&]+&b=[^&]+$"))
    page.wait_for_function("() => window.switchyard.compareGraphs && window.switchyard.compareGraphs.b")
    expect(page.locator("#run-a h2")).to_contain_text(experiment.experiment_id)
    expect(page.locator("#run-b h2")).to_contain_text(second.experiment_id)
    say = page.locator(".compare-table tr[data-node=say]")
    expect(say).to_have_class("verdict-differs")
    expect(say.locator("td[data-field=output]")).to_have_class(re.compile(r"\bdiffers\b"))
    assert errors == []
