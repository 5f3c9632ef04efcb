"""Every page needs a signed-in user, and each list page renders what is stored."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

PAGES = ["/", "/agents/", "/blueprints/", "/workflows/", "/executions/", "/derive-requests/", "/evaluations/"]


@pytest.mark.parametrize("path", PAGES)
def test_it_sends_anonymous_visitors_to_the_login_page(path):
    response = Client().get(path)
    assert response.status_code == 302
    assert response["Location"].startswith(f"/login/?next={path}")


def test_it_signs_a_person_in_and_out(api):
    browser = Client()
    response = browser.post("/login/", {"username": "viewer-user", "password": "a long password", "next": "/agents/"})
    assert (response.status_code, response["Location"]) == (302, "/agents/")
    assert browser.get("/agents/").status_code == 200
    assert browser.post("/logout/").status_code == 302
    assert browser.get("/agents/").status_code == 302


def test_it_refuses_a_wrong_password_and_says_so(api):
    response = Client().post("/login/", {"username": "viewer-user", "password": "wrong"})
    assert response.status_code == 200
    assert b"do not match" in response.content


@pytest.mark.parametrize("path, expected", [
    ("/", b"Recent runs"), ("/agents/", b"Scholar"), ("/blueprints/", b"thesis"), ("/workflows/", b"release_review"),
    ("/executions/", b"No run matches"), ("/derive-requests/", b"Derive requests"), ("/evaluations/", b"Evaluations"),
])
def test_it_renders_each_list_page_for_a_viewer(api, demo, path, expected):
    browser = Client()
    browser.force_login(api.viewer.user)
    response = browser.get(path)
    assert response.status_code == 200
    assert expected in response.content


def test_it_filters_agents_and_keeps_the_filter_in_the_pager(api, demo):
    browser = Client()
    browser.force_login(api.viewer.user)
    page = browser.get("/agents/", {"q": "scholar"}).content.decode()
    assert "Scholar" in page and "Validator" not in page
