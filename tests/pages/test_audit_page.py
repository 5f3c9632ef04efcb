"""The audit trail's page in a real browser: an admin filters it by action and finds the change."""
import pytest

from tests.pages.conftest import screenshot

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_admin_filters_the_trail_by_action_and_sees_who_changed_what(page_for, api, demo):
    assert api.author.post("/api/agents/Scholar/deprecate").status_code == 200
    assert api.author.post("/api/tokens", {"name": "nightly"}).status_code == 201
    page = page_for(api.admin.user)

    page.goto("/")
    page.click("nav >> text=Audit")
    page.wait_for_selector("h1:text-is('Audit trail')")
    page.select_option("select[name=action]", "agent.deprecate")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**/audit/?*action=agent.deprecate*")

    rows = page.locator("table.audit tbody tr")
    assert rows.count() == 1
    row = rows.first
    assert row.get_attribute("data-action") == "agent.deprecate"
    assert "author-user" in row.inner_text() and "api_token" in row.inner_text()
    assert row.locator("dd").inner_text() == '"active" → "deprecated"'
    screenshot(page, "audit")
    page.set_viewport_size({"width": 800, "height": 900})  # the narrowest window the layout test holds pages to
    assert page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") == 0
    row.locator("a", has_text="Scholar").click()
    page.wait_for_url("**/agents/Scholar/")
