"""Workflow keys: shown once and kept as a digest, good for starting and reading their own
workflow's runs and refused (403) by every other operation, limited per minute (429 with
Retry-After), refused once revoked (401); creation and revocation on the audit trail."""
from __future__ import annotations

import pytest

from core.models import AuditEntry
from executions.models import Execution
from executions.services import execution_start
from tests.conftest import ApiClient
from triggers.models import TriggeredRun, WorkflowKey
from workflows.models import Workflow

pytestmark = pytest.mark.django_db


def make_key(api, workflow_id="hooked", **fields) -> dict:
    answer = api.author.post(f"/api/workflows/{workflow_id}/keys", {"name": "ci", **fields})
    assert answer.status_code == 201, answer.content
    return answer.json()


@pytest.fixture
def key(hooked, api):
    """A key of `hooked` and a client that sends it."""
    made = make_key(api)
    made["client"] = ApiClient(None, made["key"])
    return made


def test_it_shows_the_key_once_keeps_its_digest_and_audits_it(key, api):
    stored = WorkflowKey.objects.get(prefix=key["prefix"])
    assert key["key"].startswith(f"swk_{key['prefix']}_") and key["key"].split("_", 2)[2] not in stored.digest
    assert key["callback_secret"].startswith("cbsec_") and key["rate_per_minute"] == 60
    listed = api.viewer.get("/api/workflows/hooked/keys").json()["items"]
    assert [row["prefix"] for row in listed] == [key["prefix"]] and "key" not in listed[0]
    entry = AuditEntry.objects.get(action="workflow_key.create")
    assert (entry.actor_name, entry.object_type, entry.object_id) == ("author-user", "workflow_key", key["prefix"])


def test_it_starts_a_run_with_the_key_and_reads_it_back(key):
    answer = key["client"].post("/api/workflows/hooked/runs", {"input": {"repository": "acme"}})

    assert answer.status_code == 202, answer.content
    started = answer.json()
    assert started["api_url"].endswith(f"/api/workflows/hooked/runs/{started['execution_id']}")
    run = key["client"].get(f"/api/workflows/hooked/runs/{started['execution_id']}")
    assert run.status_code == 200, run.content
    assert (run.json()["status"], run.json()["trigger"]["kind"], run.json()["trigger"]["id"]) == \
        ("running", "workflow_key", key["prefix"])
    entry = AuditEntry.objects.get(action="execution.trigger")
    assert (entry.via, entry.via_detail, entry.actor_id) == ("workflow_key", key["prefix"], None)


def test_it_answers_the_same_run_for_a_repeated_idempotency_key(key):
    first = key["client"].client.post("/api/workflows/hooked/runs", {"input": {"repository": "a"}},
                                      content_type="application/json", HTTP_IDEMPOTENCY_KEY="job-1")
    again = key["client"].client.post("/api/workflows/hooked/runs", {"input": {"repository": "a"}},
                                      content_type="application/json", HTTP_IDEMPOTENCY_KEY="job-1")

    assert (first.status_code, again.status_code) == (202, 202)
    assert again.json()["execution_id"] == first.json()["execution_id"] and again.json()["repeated"] is True
    assert Execution.objects.count() == 1


@pytest.mark.parametrize(("method", "path"), [
    ("get", "/api/executions"),
    ("get", "/api/workflows"),
    ("get", "/api/workflows/hooked"),
    ("get", "/api/me"),
    ("post", "/api/executions"),
    ("get", "/api/workflows/hooked/keys"),
    ("post", "/api/workflows/hooked/keys"),
    ("get", "/api/workflows/hooked/webhooks"),
    ("post", "/api/workflows/other/runs"),
])
def test_it_refuses_the_key_everywhere_else_with_403(key, method, path):
    answer = getattr(key["client"], method)(path)

    assert answer.status_code == 403, (path, answer.content)
    assert answer.json()["code"] == "FORBIDDEN" and key["prefix"] in answer.json()["message"]
    assert not Execution.objects.exists()


def test_it_lets_the_key_read_only_the_runs_it_started(key):
    by_person = execution_start(workflow=Workflow.objects.get(workflow_id="hooked"), input={"repository": "a"})

    assert key["client"].get(f"/api/workflows/hooked/runs/{by_person.execution_id}").status_code == 404
    assert key["client"].get(f"/api/executions/{by_person.execution_id}").status_code == 403


def test_it_answers_429_with_retry_after_past_the_keys_rate(hooked, api):
    made = make_key(api, rate_per_minute=2)
    client = ApiClient(None, made["key"])
    answers = [client.post("/api/workflows/hooked/runs", {"input": {"repository": "a"}}) for _ in range(3)]

    assert [answer.status_code for answer in answers] in ([202, 202, 429], [202, 429, 202])  # a minute may turn
    limited = next(answer for answer in answers if answer.status_code == 429)
    assert 1 <= int(limited["Retry-After"]) <= 60
    assert limited.json()["code"] == "RATE_LIMITED"
    assert Execution.objects.count() == 2


def test_it_refuses_a_revoked_key_with_401_and_audits_the_revocation(key, api):
    answer = api.author.delete(f"/api/workflows/hooked/keys/{key['prefix']}")
    assert answer.status_code == 200 and answer.json()["revoked_at"]

    assert key["client"].post("/api/workflows/hooked/runs", {"input": {"repository": "a"}}).status_code == 401
    assert key["client"].get("/api/executions").status_code == 401
    assert not Execution.objects.exists()
    entry = AuditEntry.objects.get(action="workflow_key.revoke")
    assert entry.before["revoked_at"] is None and entry.after["revoked_at"]


def test_it_lets_an_authors_token_start_a_run_but_not_a_viewers(hooked, api):
    assert api.viewer.post("/api/workflows/hooked/runs", {"input": {"repository": "a"}}).status_code == 403
    answer = api.author.post("/api/workflows/hooked/runs", {"input": {"repository": "a"}})

    assert answer.status_code == 202, answer.content
    execution = Execution.objects.get()
    assert execution.created_by == api.author.user and not TriggeredRun.objects.exists()
    assert api.viewer.get(f"/api/workflows/hooked/runs/{execution.execution_id}").status_code == 200


def test_it_refuses_a_run_that_breaks_the_input_schema_starting_nothing(key):
    answer = key["client"].post("/api/workflows/hooked/runs", {"input": {}})

    assert answer.status_code == 422 and "repository" in answer.json()["message"]
    assert not Execution.objects.exists()
