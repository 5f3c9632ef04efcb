"""The pages in a real browser."""

import pytest

from tests.pages.conftest import screenshot

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_lets_a_person_sign_in_through_the_form_and_find_their_way(browser, live_server, api, demo):
    page = browser.new_page(base_url=live_server.url)
    try:
        page.goto("/workflows/")
        assert "/login/" in page.url  # sent to the login page first
        page.fill("input[name=username]", "author-user")
        page.fill("input[name=password]", "a long password")
        page.click("button[type=submit]")
        page.wait_for_url("**/workflows/")
        assert page.locator("h1").inner_text() == "Workflows"
        page.click(".brand")
        page.wait_for_selector("text=Recent runs")
        screenshot(page, "overview")
        for link, heading in (("Agents", "Agents"), ("Executions", "Executions"), ("Derive requests", "Derive requests")):
            page.click(f"nav >> text={link}")
            page.wait_for_selector(f"h1:text-is('{heading}')")
    finally:
        page.close()
