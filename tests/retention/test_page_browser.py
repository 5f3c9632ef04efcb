"""A run whose details retention removed, in a real browser: its summary and cost, said plainly, no graph."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from retention.sweep import retention_sweep
from tests.pages.conftest import browser, page_for  # noqa: F401 - the browser's fixtures
from tests.pages.test_derive_requests import watch_errors
from tests.retention.conftest import make_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_run_page_says_the_details_were_removed_and_shows_what_they_were(demo, api, page_for, settings):  # noqa: F811
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
