"""The runs list in a real browser: an author ticks runs (or takes all those the filter
matches), cancels them together after a dialog naming how many, and reads which were done
and which refused and why; a viewer is offered none of it."""
import pytest
from playwright.sync_api import expect

from core.documents import import_documents
from core.models import AuditEntry
from demo.documents import AGENTS, PARALLEL_ANALYSIS
from executions.models import Execution
from executions.services import execution_cancel, execution_start
from tests.pages.test_derive_requests import watch_errors
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def runs(tmp_path, settings, no_tasks):
    """Three runs in progress and one cancelled already; nothing is sent to a worker."""
    settings.WORKSPACE_ROOT = tmp_path
    import_documents([*AGENTS, PARALLEL_ANALYSIS], actor="test")
    workflow = Workflow.objects.get(workflow_id="parallel_analysis")
    started = [execution_start(workflow=workflow, input={"repository": f"repo-{n}"}) for n in range(4)]
    execution_cancel(execution=started[3])
    return [run.execution_id for run in started]


def status(execution_id: str) -> str:
    return Execution.objects.get(execution_id=execution_id).status


def test_an_author_cancels_ticked_runs_then_all_matching_after_confirming_how_many(page_for, api, runs):
    first, second, third, ended = runs
    page = page_for(api.author.user)
    errors = watch_errors(page)
    page.goto("/executions/")
    cancel = page.locator("button.bulk-action[data-action='cancel']")
    expect(cancel).to_be_disabled()
    for execution_id in (first, second, ended):
        page.get_by_label(f"Pick {execution_id} to compare").check()
    expect(page.locator("#bulk-picked")).to_have_text("3 runs ticked.")

    cancel.click()  # asked first, naming how many; going back does nothing
    expect(page.locator("#bulk-question")).to_have_text("Cancel 3 runs?")
    page.locator("#bulk-back").click()
    expect(page.locator("#bulk-dialog")).not_to_be_visible()
    assert status(first) == "running"

    cancel.click()
    expect(page.locator("#bulk-confirm")).to_have_text("Cancel 3 runs")
    page.locator("#bulk-confirm").click()
    expect(page.locator("#bulk-summary")).to_have_text("2 runs cancelled, 1 refused:")
    expect(page.locator("#bulk-refused li")).to_have_count(1)
    expect(page.locator("#bulk-refused li")).to_contain_text(f"{ended} — execution {ended} has ended (cancelled)")
    expect(page.locator(f"tr[data-execution-id='{first}'] .status-cell")).to_have_text("cancelled")
    assert (status(first), status(second), status(third)) == ("cancelled", "cancelled", "running")
    entries = AuditEntry.objects.filter(action="execution.cancel", actor_name="author-user", via="page")
    assert sorted(entries.values_list("object_id", flat=True)) == sorted([first, second])
    # A node run the cancel ended says so, and who, in the run page's node panel.
    node_run = Execution.objects.get(execution_id=first).node_runs.get(node_id="task_a")
    page.goto(f"/executions/{first}/?node=task_a&run={node_run.pk}#node-panel")
    expect(page.locator("#node-panel .attempt[open] .attempt-error")).to_have_text("CANCELLED cancelled by author-user")

    # All the runs the filter matches, on every page: here the one still running.
    page.goto("/executions/?status=running")
    page.locator("#bulk-all").check()
    expect(page.locator("#bulk-picked")).to_have_text("All 1 run matching the filter.")
    cancel.click()
    expect(page.locator("#bulk-question")).to_have_text("Cancel 1 run?")
    page.locator("#bulk-confirm").click()
    expect(page.locator("#bulk-summary")).to_have_text("1 run cancelled.")
    assert status(third) == "cancelled"
    operations = AuditEntry.objects.filter(action="execution.bulk").order_by("pk")
    assert [sorted(entry.after["done"]) for entry in operations] == [sorted([first, second]), [third]]
    assert errors == []


def test_a_viewer_is_offered_no_bulk_steering(page_for, api, runs):
    page = page_for(api.viewer.user)
    page.goto("/executions/")
    expect(page.locator("table.executions tbody tr")).to_have_count(4)
    expect(page.locator("#bulk-bar")).to_have_count(0)
