"""Webhooks in: made through the API (the secret shown once, kept sealed), a signed POST
starting a run at once (202), every refusal starting nothing, and one run per idempotency key."""
from __future__ import annotations

import json
import threading
import time
from unittest import mock

import pytest
from django.db import connection

from core.models import AuditEntry
from executions.models import Execution
from tests.pages.conftest import signed_in
from tests.triggers.conftest import signed_post
from triggers import services
from triggers.models import TriggeredRun, WebhookTrigger

pytestmark = pytest.mark.django_db


@pytest.fixture
def webhook(hooked, api):
    """A webhook of `hooked`, made by an author: its answer (with the secret) and its path."""
    answer = api.author.post("/api/workflows/hooked/webhooks", {
        "name": "issues", "input_mapping": {"repository": "$.repo.full_name"}, "max_body_bytes": 2000})
    assert answer.status_code == 201, answer.content
    made = answer.json()
    made["path"] = f"/hooks/{made['hook_id']}"
    return made


BODY = {"repo": {"full_name": "acme/shop"}, "action": "opened"}


def test_it_shows_the_secret_once_keeps_it_sealed_and_audits_the_webhook(webhook, api):
    assert webhook["secret"].startswith("whsec_") and webhook["url"].endswith(webhook["path"])
    stored = WebhookTrigger.objects.get(hook_id=webhook["hook_id"])
    assert webhook["secret"] not in stored.sealed_secret
    listed = api.viewer.get("/api/workflows/hooked/webhooks").json()["items"]
    assert [row["hook_id"] for row in listed] == [webhook["hook_id"]] and "secret" not in listed[0]
    entry = AuditEntry.objects.get(action="webhook.create")
    assert (entry.actor_name, entry.via, entry.object_id) == ("author-user", "api_token", webhook["hook_id"])
    assert entry.after["input_mapping"] == {"repository": "$.repo.full_name"}
    assert webhook["secret"] not in json.dumps(entry.after)


def test_it_starts_a_run_from_a_signed_post_at_once_and_names_its_trigger(webhook, api):
    answer = signed_post(webhook["path"], BODY, webhook["secret"])

    assert answer.status_code == 202, answer.content
    started = answer.json()
    execution = Execution.objects.get(execution_id=started["execution_id"])
    assert execution.input == {"repository": "acme/shop"} and execution.created_by is None
    assert started["url"].endswith(f"/executions/{execution.execution_id}/") and started["repeated"] is False
    assert TriggeredRun.objects.get(execution=execution).webhook.hook_id == webhook["hook_id"]
    entry = AuditEntry.objects.get(action="execution.trigger")
    assert (entry.via, entry.via_detail, entry.object_id) == ("webhook", webhook["hook_id"], execution.execution_id)
    trigger = api.viewer.get(f"/api/executions/{execution.execution_id}/trigger").json()
    assert trigger == {"trigger": {"kind": "webhook", "id": webhook["hook_id"], "name": "issues",
                                   "idempotency_key": None}, "callbacks": []}
    page = signed_in(api.viewer.user).get(f"/executions/{execution.execution_id}/").content.decode()
    assert f'data-url="/api/executions/{execution.execution_id}/trigger"' in page  # drawn by run_trigger.js


def _stale() -> str:
    return str(int(time.time()) - 301)


@pytest.mark.parametrize(("send", "status", "says"), [
    (lambda hook: signed_post(hook["path"], BODY, "whsec_not-the-secret"), 401, "is not the HMAC-SHA256"),
    (lambda hook: signed_post(hook["path"], BODY, hook["secret"], timestamp=_stale()), 401, "more than 300 seconds"),
    (lambda hook: signed_post(hook["path"], BODY, hook["secret"], headers={"HTTP_X_SWITCHYARD_TIMESTAMP": ""}), 401,
     "X-Switchyard-Timestamp header is missing"),
    (lambda hook: signed_post(hook["path"], BODY, hook["secret"], headers={"HTTP_X_SWITCHYARD_SIGNATURE": ""}), 401,
     "X-Switchyard-Signature header is missing"),
    (lambda hook: signed_post(hook["path"], {"repo": {"full_name": "x" * 2000}}, hook["secret"]), 413,
     "this webhook's limit is 2000 bytes"),
    (lambda hook: signed_post(hook["path"], None, hook["secret"], raw=b"{not json"), 422, "body: malformed JSON"),
    (lambda hook: signed_post(hook["path"], {"repo": {"name": "shop"}}, hook["secret"]), 422,
     "input_mapping.repository: the path '$.repo.full_name' of the input mapping selects nothing in the body"),
    (lambda hook: signed_post("/hooks/" + "0" * 32, BODY, hook["secret"]), 404, "no webhook answers"),
], ids=["bad signature", "stale timestamp", "no timestamp", "no signature", "too large", "not JSON",
        "mapping selects nothing", "unknown hook"])
def test_it_refuses_and_starts_nothing(webhook, send, status, says):
    answer = send(webhook)

    assert answer.status_code == status, answer.content
    assert says in answer.json()["message"]
    assert not Execution.objects.exists() and not TriggeredRun.objects.exists()
    assert not AuditEntry.objects.filter(action="execution.trigger").exists()


def test_it_answers_the_same_run_for_a_repeated_idempotency_key(webhook):
    first = signed_post(webhook["path"], BODY, webhook["secret"], headers={"HTTP_IDEMPOTENCY_KEY": "delivery-1"})
    again = signed_post(webhook["path"], BODY, webhook["secret"], headers={"HTTP_IDEMPOTENCY_KEY": "delivery-1"})
    other = signed_post(webhook["path"], BODY, webhook["secret"], headers={"HTTP_IDEMPOTENCY_KEY": "delivery-2"})

    assert (first.status_code, again.status_code, other.status_code) == (202, 202, 202)
    assert again.json()["execution_id"] == first.json()["execution_id"] and again.json()["repeated"] is True
    assert other.json()["execution_id"] != first.json()["execution_id"]
    assert Execution.objects.count() == 2


def test_it_reads_the_idempotency_key_from_the_body_path_the_webhook_names(hooked, api):
    made = api.author.post("/api/workflows/hooked/webhooks", {
        "name": "deliveries", "input_mapping": {"repository": "$.repo"}, "idempotency_path": "$.delivery"}).json()
    path = f"/hooks/{made['hook_id']}"
    first = signed_post(path, {"repo": "acme", "delivery": 7}, made["secret"])
    again = signed_post(path, {"repo": "acme", "delivery": 7}, made["secret"])

    assert again.json()["execution_id"] == first.json()["execution_id"]
    assert TriggeredRun.objects.get().idempotency_key == "7"


def test_it_starts_one_run_when_a_repeat_races_past_the_first_check(webhook):
    """Two requests with one key, both past the look for an earlier run before either
    commits: the unique constraint refuses the second's record, its run is rolled back with
    it, and it answers the first's run."""
    first = signed_post(webhook["path"], BODY, webhook["secret"], headers={"HTTP_IDEMPOTENCY_KEY": "race"})
    earlier = services._earlier_run
    looks = []

    def missed_once(source, key):
        looks.append(key)
        return None if len(looks) == 1 else earlier(source, key)

    with mock.patch.object(services, "_earlier_run", missed_once):
        second = signed_post(webhook["path"], BODY, webhook["secret"], headers={"HTTP_IDEMPOTENCY_KEY": "race"})

    assert second.status_code == 202 and second.json()["execution_id"] == first.json()["execution_id"]
    assert looks == ["race", "race"]
    assert Execution.objects.count() == 1 and TriggeredRun.objects.count() == 1


def test_it_answers_404_once_disabled_and_audits_it(webhook, api):
    answer = api.author.delete(f"/api/workflows/hooked/webhooks/{webhook['hook_id']}")
    assert answer.status_code == 200 and answer.json()["disabled_at"]

    refused = signed_post(webhook["path"], BODY, webhook["secret"])
    assert refused.status_code == 404 and not Execution.objects.exists()
    assert AuditEntry.objects.filter(action="webhook.disable", object_id=webhook["hook_id"]).count() == 1


@pytest.mark.parametrize(("body", "where", "says"), [
    ({"name": "x", "input_mapping": {"repository": "repo"}}, "input_mapping.repository", "must start with '$'"),
    ({"name": "x", "callback_url": "https://elsewhere.example/hook"}, "callback_url",
     "names the host 'elsewhere.example', which is not among the hosts callbacks may call"),
    ({"name": "x", "version": 9}, "version", "9"),
    ({"name": "x", "max_body_bytes": 10**9}, "max_body_bytes", "the server's limit"),
], ids=["bad JSONPath", "host not allowed", "no such version", "over the global limit"])
def test_it_refuses_a_webhook_naming_the_field_and_stores_nothing(hooked, api, body, where, says):
    answer = api.author.post("/api/workflows/hooked/webhooks", body)

    assert answer.status_code == 422, answer.content
    assert answer.json()["message"].startswith(f"{where}: ") and says in answer.json()["message"]
    assert not WebhookTrigger.objects.exists() and not AuditEntry.objects.filter(action="webhook.create").exists()


def test_it_lets_only_authors_make_or_disable_webhooks(webhook, api):
    assert api.viewer.post("/api/workflows/hooked/webhooks", {"name": "mine"}).status_code == 403
    assert api.viewer.delete(f"/api/workflows/hooked/webhooks/{webhook['hook_id']}").status_code == 403
    assert WebhookTrigger.objects.get().disabled_at is None


def test_it_opens_the_secret_under_an_old_key_kept_as_a_fallback_and_refuses_it_once_gone(webhook, settings):
    old = settings.SECRET_KEY
    settings.SECRET_KEY = "a new secret key, long and random enough for this test"
    settings.SECRET_KEY_FALLBACKS = [old]
    assert signed_post(webhook["path"], BODY, webhook["secret"]).status_code == 202

    settings.SECRET_KEY_FALLBACKS = []
    refused = signed_post(webhook["path"], BODY, webhook["secret"])
    assert refused.status_code == 401 and "SECRET_KEY this server no longer has" in refused.json()["message"]
    assert Execution.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_it_starts_one_run_for_two_concurrent_requests_with_one_key(hooked, api):
    """Two requests at once, each on its own connection, both past the look for an earlier
    run before either starts its transaction: one run, both answered with it."""
    made = api.author.post("/api/workflows/hooked/webhooks", {"name": "race",
                                                              "input_mapping": {"repository": "$.repo"}}).json()
    both_looked = threading.Barrier(2, timeout=10)
    earlier = services._earlier_run

    def look_then_wait(source, key):
        found = earlier(source, key)
        if threading.current_thread() is not threading.main_thread() and found is None:
            both_looked.wait()
        return found

    answers = []

    def post():
        try:
            answers.append(signed_post(f"/hooks/{made['hook_id']}", {"repo": "acme"}, made["secret"],
                                       headers={"HTTP_IDEMPOTENCY_KEY": "same"}))
        finally:
            connection.close()

    with mock.patch.object(services, "_earlier_run", look_then_wait):
        threads = [threading.Thread(target=post) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)

    assert not both_looked.broken, "both looked before either started its run"
    assert sorted(answer.status_code for answer in answers) == [202, 202]
    assert len({answer.json()["execution_id"] for answer in answers}) == 1
    assert sorted(answer.json()["repeated"] for answer in answers) == [False, True]
    assert Execution.objects.count() == 1 and TriggeredRun.objects.count() == 1
