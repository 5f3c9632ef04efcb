"""The API's account operations, its authentication and its error shape."""
import pytest
from django.contrib.auth.models import User
from django.test import Client

from core.models import ApiToken

pytestmark = pytest.mark.django_db


def test_it_refuses_requests_without_credentials_with_a_json_error(api):
    response = api.anonymous.get("/api/me")
    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHENTICATED"


def test_it_tells_a_user_their_roles(api):
    assert api.viewer.get("/api/me").json() == {"username": "viewer-user", "roles": ["viewer"]}
    assert api.approver.get("/api/me").json()["roles"] == ["viewer", "approver"]
    assert api.admin.get("/api/me").json()["roles"] == ["viewer", "author", "approver", "admin"]


def test_it_creates_a_token_shown_once_that_authenticates_until_revoked(api):
    created = api.viewer.post("/api/tokens", {"name": "nightly import"})
    assert created.status_code == 201
    body = created.json()
    assert body["token"].startswith(f"sy_{body['prefix']}_")
    stored = ApiToken.objects.get(pk=body["id"])
    assert body["token"] not in (stored.digest, stored.prefix)  # only the digest is kept
    program = Client(HTTP_AUTHORIZATION=f"Bearer {body['token']}")
    assert program.get("/api/me").json()["username"] == "viewer-user"
    assert "token" not in api.viewer.get("/api/tokens").json()["items"][0]
    assert api.viewer.delete(f"/api/tokens/{body['id']}").json()["revoked_at"] is not None
    assert program.get("/api/me").status_code == 401


def test_it_refuses_a_forged_or_malformed_token(api):
    _, token = ApiToken.issue(api.viewer.user, "real")
    prefix = token.split("_")[1]
    for forged in (f"sy_{prefix}_not-the-secret", "sy_short_x", "garbage", ""):
        assert Client(HTTP_AUTHORIZATION=f"Bearer {forged}").get("/api/me").status_code == 401


def test_it_lets_no_one_revoke_someone_elses_token(api):
    token, _ = ApiToken.issue(api.author.user, "mine")
    response = api.viewer.delete(f"/api/tokens/{token.pk}")
    assert response.status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


def test_it_lets_only_admins_manage_users_and_see_backends(api):
    for client in (api.viewer, api.author, api.approver):
        assert client.get("/api/users").status_code == 403
        assert client.post("/api/users", {"username": "x", "password": "long enough"}).json()["code"] == "FORBIDDEN"
        assert client.get("/api/backends").status_code == 403
    created = api.admin.post("/api/users", {"username": "carol", "password": "long enough", "roles": ["author"]})
    assert created.status_code == 201 and created.json()["roles"] == ["viewer", "author"]
    carol = User.objects.get(username="carol")
    changed = api.admin.put(f"/api/users/{carol.pk}/roles", {"roles": ["approver"]})
    assert changed.json()["roles"] == ["viewer", "approver"]
    assert [b["name"] for b in api.admin.get("/api/backends").json()] == ["builtin"]
    assert api.admin.get("/api/users", limit=2).json()["count"] == 5


def test_it_never_shows_a_backend_urls_user_password_or_query(api, settings):
    leaky = "https://user:sk-SECRET-42@[::1]:8443/v1?key=sk-SECRET-42#sk-SECRET-42"
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "leaky": {"kind": "openai_compatible", "base_url": leaky},
                             "bare": {"kind": "openai_compatible", "base_url": "user:sk-SECRET-42@api.example.com"}}
    response = api.admin.get("/api/backends")
    assert "SECRET" not in response.content.decode() and "user" not in response.content.decode()
    shown = {backend["name"]: backend["base_url"] for backend in response.json()}
    assert shown == {"builtin": "", "leaky": "https://[::1]:8443/v1", "bare": "(a URL that is not http(s), not shown)"}


def test_it_names_what_is_wrong_with_bad_input(api):
    response = api.admin.post("/api/users", {"username": "dave", "password": "short", "roles": ["wizard"]})
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "VALIDATION_ERROR" and "password" in body["message"]
    response = api.admin.post("/api/users", {"username": "dave", "password": "long enough", "roles": ["wizard"]})
    assert response.status_code == 422
    assert "wizard" in response.json()["message"] and not User.objects.filter(username="dave").exists()
    assert api.admin.post("/api/users", {"username": "viewer-user", "password": "long enough"}).status_code == 409


def test_it_needs_the_csrf_token_for_writes_from_a_browser_session(api):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(api.viewer.user)
    assert browser.get("/api/me").status_code == 200
    response = browser.post("/api/tokens", {"name": "x"}, content_type="application/json")
    assert response.status_code == 403
    assert not ApiToken.objects.filter(name="x").exists()


def test_it_serves_the_schema_and_docs_only_to_signed_in_users(api):
    assert api.anonymous.get("/api/openapi.json").status_code == 302
    assert api.anonymous.get("/api/docs").status_code == 302
    schema = api.viewer.get("/api/openapi.json").json()
    assert "/api/me" in schema["paths"]
    browser = Client()
    browser.force_login(api.viewer.user)
    docs = browser.get("/api/docs")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()
    assert b"cdn." not in docs.content  # the Swagger UI is served from this server


def test_it_lets_an_admin_revoke_tokens_in_the_admin_site(api):
    token, secret = ApiToken.issue(api.author.user, "laptop")
    site = Client()
    site.force_login(User.objects.create_superuser("root", password="a long password"))
    response = site.post("/admin/core/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})
    assert response.status_code == 302
    assert Client(HTTP_AUTHORIZATION=f"Bearer {secret}").get("/api/me").status_code == 401


def test_it_refuses_a_token_name_the_database_could_not_store(api):
    response = api.viewer.post("/api/tokens", {"name": "bad\u0000name"})
    assert response.status_code == 422
    assert not ApiToken.objects.filter(user=api.viewer.user).exclude(name="tests").exists()


@pytest.mark.parametrize("method, path", [("post", "/api/tokens"), ("put", "/api/users/{user}/roles"),
                                          ("delete", "/api/tokens/{token}"), ("get", "/api/me")])
def test_it_answers_a_bad_or_revoked_token_with_401_whatever_the_method(api, method, path):
    revoked, secret = ApiToken.issue(api.admin.user, "old")
    revoked.revoked_at = revoked.created_at
    revoked.save(update_fields=["revoked_at"])
    path = path.format(user=api.viewer.user.pk, token=revoked.pk)
    signed_in = Client(enforce_csrf_checks=True)  # a session too: the token alone decides
    signed_in.force_login(api.admin.user)
    for presented, client in ((secret, Client(enforce_csrf_checks=True)), ("sy_deadbeef_forged", signed_in)):
        client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {presented}"
        response = getattr(client, method)(path, data={"name": "x", "roles": ["admin"]}, content_type="application/json")
        assert response.status_code == 401, response.content
        assert response.json()["code"] == "UNAUTHENTICATED"
    assert not ApiToken.objects.filter(name="x").exists() and not api.viewer.user.groups.exists()


def test_it_still_takes_writes_with_a_good_token_without_csrf(api):
    _, secret = ApiToken.issue(api.viewer.user, "program")
    program = Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert program.post("/api/tokens", {"name": "x"}, content_type="application/json").status_code == 201


@pytest.mark.parametrize("username, password, says", [
    ("dave", "password", "This password is too common."),
    ("dave", "84721906533", "This password is entirely numeric."),
    ("davidson", "davidson1", "The password is too similar to the username."),
])
def test_it_runs_a_new_users_password_through_the_password_validators(api, username, password, says):
    response = api.admin.post("/api/users", {"username": username, "password": password})
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "VALIDATION_ERROR" and body["message"].startswith("password: ") and says in body["message"]
    assert {"where": "password", "message": says} in body["details"]
    assert not User.objects.filter(username=username).exists()


def test_it_refuses_lone_surrogates_in_token_names_and_users(api):
    response = api.viewer.post("/api/tokens", {"name": "lone \ud800"})
    assert response.status_code == 422 and "name" in response.json()["message"]
    response = api.admin.post("/api/users", {"username": "erin", "password": "a long \udfff passphrase"})
    assert response.status_code == 422 and "password" in response.json()["message"]
    assert not User.objects.filter(username="erin").exists()
    assert not ApiToken.objects.filter(user=api.viewer.user).exclude(name="tests").exists()


def test_it_refuses_a_token_whose_prefix_no_database_could_hold(api):
    _, token = ApiToken.issue(api.viewer.user, "real")
    secret = token.split("_", 2)[2]
    for forged in (f"sy_abc\x00defg_{secret}", f"sy_ABCDEF12_{secret}", f"sy_abcdéfgh_{secret}"):
        response = Client(HTTP_AUTHORIZATION=f"Bearer {forged}").get("/api/me")
        assert response.status_code == 401 and response.json()["code"] == "UNAUTHENTICATED"


def test_it_judges_a_token_sent_for_the_schema_alone_too(api):
    browser = Client(HTTP_AUTHORIZATION="Bearer sy_deadbeef_forged")
    browser.force_login(api.viewer.user)
    response = browser.get("/api/openapi.json")
    assert response.status_code == 302 and "/login/" in response["Location"]
    _, secret = ApiToken.issue(api.viewer.user, "docs")
    assert Client(HTTP_AUTHORIZATION=f"bearer {secret}").get("/api/openapi.json").status_code == 200
