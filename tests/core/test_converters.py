"""Ids in URLs that no row can have answer 404, whatever their size, on either database."""
import pytest
from django.test import Client

from core.models import ApiToken

pytestmark = pytest.mark.django_db

HUGE = "99999999999999999999999"  # beyond a 64-bit integer


def test_it_answers_a_page_url_with_an_oversized_id_with_404(api):
    browser = Client()
    browser.force_login(api.viewer.user)
    assert browser.get(f"/executions/exec_1/tot/{HUGE}/").status_code == 404
    assert browser.get("/executions/exec_1/tot/999999999999999999/").status_code == 404  # the longest id it takes


def test_it_answers_api_paths_with_an_oversized_id_without_a_server_error(api):
    token, _ = ApiToken.issue(api.viewer.user, "kept")
    for response in (api.viewer.delete(f"/api/tokens/{HUGE}"), api.admin.put(f"/api/users/{HUGE}/roles", {"roles": []})):
        assert response.status_code == 404 and response.json()["code"] == "NOT_FOUND"
    response = api.viewer.get(f"/api/executions/exec_1/node-runs/{HUGE}")
    assert response.status_code == 422 and "path.node_run_id" in response.json()["message"]
    token.refresh_from_db()
    assert token.revoked_at is None
