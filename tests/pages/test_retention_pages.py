"""In a real browser: a run whose details retention removed (its summary and cost, said plainly,
no graph); the Retention section of a workflow's page, where an author sets the workflow's own
rule (a refused number shown at its field, the rule its runs get, the Cost card's note once
runs are deleted) and a viewer reads it without a way to change it."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from core.models import AuditEntry
from retention.models import WorkflowRetention
from retention.sweep import retention_sweep
from tests.pages.conftest import signed_in
from tests.pages.test_derive_requests import watch_errors
from tests.retention.conftest import make_run


@pytest.fixture(autouse=True)
def no_pause(settings):
    """The sweep rests between its transactions as deployed (RETENTION_PAUSE); not here."""
    settings.RETENTION_PAUSE = 0


@pytest.mark.django_db(transaction=True)
def test_the_run_page_says_the_details_were_removed_and_shows_what_they_were(demo, api, page_for, settings):
    settings.RETENTION_SUCCESS_DETAIL_DAYS = 7
    run = make_run(days=10, node_runs=6)
    retention_sweep()
    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    page.goto(f"/executions/{run.execution_id}/")
    removed = page.locator("#details-removed")
    expect(removed).to_contain_text("were removed by retention")
    expect(removed).to_contain_text("6 node runs")
    expect(removed.locator("#removed-cost .cost")).to_have_text("$0.00003")
    expect(page.locator("#run-cost .cost")).to_have_text("$0.00003")
    expect(page.locator("#run-counts")).to_have_text("6 (removed by retention)")
    expect(page.locator("#graph")).to_have_count(0)
    expect(page.locator("section[aria-label='Node runs']")).to_have_count(0)
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_an_author_sets_the_workflows_rule_and_a_refusal_shows_at_its_field(demo, api, page_for, settings):
    settings.RETENTION_FAILED_DAYS = 90
    page = page_for(api.author.user)
    errors = watch_errors(page)
    page.goto("/workflows/parallel_analysis/")
    section = page.locator("#retention")
    expect(section.locator("#retention-effective")).to_contain_text("deleted never; failed runs kept 90 days")
    expect(page.locator("#retention-failed-days")).to_have_attribute("placeholder", "global: 90")
    expect(page.locator("#cost-retention-note")).to_be_hidden()

    page.fill("#retention-days", "100000")
    page.click("#retention-save")
    expect(section.locator('[data-problem="days"]')).to_contain_text("36500")
    expect(page.locator("#retention-days")).to_have_attribute("aria-invalid", "true")
    assert not WorkflowRetention.objects.exists()

    page.fill("#retention-days", "30")
    page.fill("#retention-success-detail-days", "7")
    page.click("#retention-save")
    expect(section.locator("#retention-status")).to_have_text("Saved.")
    expect(section.locator("#retention-effective")).to_contain_text("deleted after 30 days")
    expect(section.locator("#retention-effective")).to_contain_text("successful runs' details removed after 7 days")
    expect(page.locator("#retention-days")).not_to_have_attribute("aria-invalid", "true")
    expect(page.locator("#cost-retention-note")).to_be_visible()
    rule = WorkflowRetention.objects.get(workflow__workflow_id="parallel_analysis")
    assert (rule.days, rule.failed_days, rule.success_detail_days, rule.updated_by) == (30, None, 7, "author-user")
    assert list(AuditEntry.objects.filter(action="retention.rule").values_list("via", flat=True)) == ["page"]
    assert [error for error in errors if "status of 422" not in error] == []  # the refusal's answer only


@pytest.mark.django_db
def test_a_viewer_reads_the_rule_without_a_way_to_change_it(demo, api):
    viewer = signed_in(api.viewer.user).get("/workflows/parallel_analysis/").content.decode()
    section = viewer[viewer.index('id="retention"'):viewer.index("</section>", viewer.index('id="retention"'))]
    assert 'data-editable=""' in section and 'id="retention-save"' not in section
    assert section.count(" readonly") == 3 and "Authors change it." in section
    assert "js/workflow_retention.js" in viewer
    author = signed_in(api.author.user).get("/workflows/parallel_analysis/").content.decode()
    assert 'id="retention-save"' in author and 'data-editable="true"' in author
