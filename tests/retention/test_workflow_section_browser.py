"""The Retention section of a workflow's page: an author sets the workflow's own rule in a real
browser (a refused number shown at its field, the rule its runs get, the Cost card's note once
runs are deleted); a viewer reads it without a way to change it."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from core.models import AuditEntry
from retention.models import WorkflowRetention
from tests.pages.conftest import browser, page_for, signed_in  # noqa: F401 - the browser's fixtures
from tests.pages.test_derive_requests import watch_errors


@pytest.mark.django_db(transaction=True)
def test_an_author_sets_the_workflows_rule_and_a_refusal_shows_at_its_field(demo, api, page_for, settings):  # noqa: F811
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
