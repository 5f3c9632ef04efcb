"""What the middleware answers: a body over the upload limit, a page filter with a NUL character,
and every answer under /api/ (JSON errors, never cached)."""
import json

import pytest
from django.conf import settings
from django.test import Client

from executions.models import Execution

pytestmark = pytest.mark.django_db


def over_the_limit() -> str:
    return json.dumps({"workflow_id": "w", "input": {"text": "x" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE}})


def test_it_answers_an_api_write_over_the_upload_limit_with_413_in_json(api):
    body = over_the_limit()
    response = api.author.client.post("/api/executions", body, content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {
        "code": "PAYLOAD_TOO_LARGE",
        "message": f"the request body is {len(body)} bytes; the limit is {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes",
        "details": {"limit_bytes": settings.DATA_UPLOAD_MAX_MEMORY_SIZE}}
    assert not Execution.objects.exists()


def test_it_answers_a_page_form_over_the_upload_limit_with_a_413_page(api):
    browser = Client(enforce_csrf_checks=True)  # the CSRF check reads the form first
    browser.force_login(api.author.user)
    response = browser.post("/evaluations/new/", "feedback=" + "x" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
                            content_type="application/x-www-form-urlencoded")
    assert response.status_code == 413
    assert response["Content-Type"].startswith("text/html") and b"Request too large (413)" in response.content


def test_it_lets_a_body_within_the_limit_through(api):
    response = api.author.post("/api/executions", {"workflow_id": "w", "input": {"text": "x" * 1000}})
    assert response.status_code == 422 and response.json()["message"] == "workflow_id: workflow 'w' does not exist"


@pytest.mark.parametrize("url", ["/agents/?q=a%00b", "/executions/?workflow=%00", "/evaluations/?target_id=x%00",
                                 "/derive-requests/?status=%00", "/workflows/?topology=%00", "/agents/?%00=1"])
def test_it_answers_a_page_filter_with_a_nul_character_with_400(api, url):
    browser = Client()
    browser.force_login(api.viewer.user)
    response = browser.get(url)
    assert response.status_code == 400 and b"NUL character" in response.content


def test_it_leaves_nul_characters_in_the_api_to_each_parameters_check(api):
    response = api.viewer.get("/api/agents", q="a\x00b")
    assert response.status_code == 422 and response.json()["message"].startswith("query.q: ")


@pytest.mark.parametrize("path", ["/api/nonexistent", "/api/executions/x/nothing/here", "/api/agents/a/b/c/d"])
def test_it_answers_a_path_no_api_operation_has_with_the_apis_json_404(api, path):
    for client in (api.viewer, api.anonymous):
        response = client.get(path)
        assert response.status_code == 404 and response["Content-Type"] == "application/json"
        assert response.json() == {"code": "NOT_FOUND", "details": None,
                                   "message": "no API operation answers at this address (the operations: /api/docs)"}


def test_it_answers_a_method_an_operation_does_not_take_in_json_naming_the_methods_it_takes(api):
    response = api.author.delete("/api/me")
    assert response.status_code == 405 and response["Allow"] == "GET"
    assert response.json() == {"code": "METHOD_NOT_ALLOWED", "details": None,
                               "message": "DELETE is not an operation here; the methods here: GET"}


def test_it_answers_a_failure_nothing_handled_in_json(api, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("executions.selectors.executions_list", broken)
    api.viewer.client.raise_request_exception = False
    response = api.viewer.get("/api/executions")
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    assert response.json() == {"code": "SERVER_ERROR", "message": "internal server error", "details": None}
    assert b"a bug" not in response.content


def test_no_cache_keeps_an_api_answer(api):
    refused = api.author.post("/api/executions", {"workflow_id": "w"})  # no such workflow
    assert refused.status_code == 422
    for response in (api.viewer.get("/api/me"), api.viewer.get("/api/executions"), api.anonymous.get("/api/me"),
                     api.viewer.get("/api/nonexistent"), refused):
        assert "no-store" in response["Cache-Control"], (response.status_code, response.content)
    browser = Client()
    browser.force_login(api.viewer.user)
    assert "no-store" not in browser.get("/agents/").get("Cache-Control", "")  # pages are not the API's
