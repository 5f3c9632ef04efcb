"""Reading the audit trail: the page, `GET /api/audit` and `manage.py audit` with one set of
filters, for admins only; the admin site shows entries and changes none."""
import json
from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from core.audit import acting, record
from core.models import AuditEntry

pytestmark = pytest.mark.django_db


@pytest.fixture
def entries(api):
    """Three entries of the test's own, by two people, each from a token of its own (after the
    entries of the `api` users' making)."""
    made = []
    for day, (action, actor, object_id, before, after) in enumerate([
            ("workflow.update", api.author.user, "paper_review", {"version": 1, "name": "Old"},
             {"version": 2, "name": "<b>New</b>"}),
            ("gate.decide", api.approver.user, "exec_1", {"status": "waiting"}, {"decision": "approve"}),
            ("workflow.delete", api.author.user, "paper_review", {"name": "<b>New</b>"}, None)], start=1):
        with acting("api_token", f"prefix{day}"):
            entry = record(action, actor=actor, object_type="workflow" if "workflow" in action else "execution",
                           object_id=object_id, before=before, after=after)
        made.append(entry)
    return made


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def ids(answer) -> list[int]:
    return [item["id"] for item in answer.json()["items"]]


# --- the API ---------------------------------------------------------------------------

def test_the_api_gives_admins_the_entries_newest_first_filtered_and_paginated(api, entries):
    update, decide, delete = entries

    everything = api.admin.get("/api/audit", limit=2)
    assert everything.status_code == 200, everything.json()
    assert ids(everything) == [delete.pk, decide.pk] and everything.json()["limit"] == 2
    assert everything.json()["count"] == AuditEntry.objects.count()
    item = api.admin.get("/api/audit", action="workflow.update").json()["items"][0]
    assert item == {"id": update.pk, "at": item["at"], "actor": "author-user", "actor_id": api.author.user.pk,
                    "via": "api_token", "via_detail": "prefix1", "action": "workflow.update",
                    "object_type": "workflow", "object_id": "paper_review",
                    "before": {"version": 1, "name": "Old"}, "after": {"version": 2, "name": "<b>New</b>"}}

    assert ids(api.admin.get("/api/audit", actor="author-user", object_type="workflow")) == [delete.pk, update.pk]
    assert ids(api.admin.get("/api/audit", object_type="execution", object_id="exec_1")) == [decide.pk]
    today = decide.at.date().isoformat()
    assert set(ids(api.admin.get("/api/audit", since=today, until=today, object_id="paper_review"))) == {
        update.pk, delete.pk}
    assert ids(api.admin.get("/api/audit", until="2000-01-01")) == []


def test_the_api_refuses_a_bad_time_naming_it(api, entries):
    answer = api.admin.get("/api/audit", since="yesterday")
    assert answer.status_code == 422
    assert answer.json()["code"] == "VALIDATION_ERROR" and answer.json()["message"].startswith(
        "since: 'yesterday' is not an ISO date or datetime")


def test_the_api_refuses_the_trail_to_everyone_but_admins_and_changes_nothing(api, entries):
    for client in (api.viewer, api.author, api.approver):
        answer = client.get("/api/audit")
        assert answer.status_code == 403 and answer.json()["code"] == "FORBIDDEN"
    assert api.anonymous.get("/api/audit").status_code == 401
    for method in ("post", "put", "patch", "delete"):
        assert getattr(api.admin, method)("/api/audit").status_code == 405
    assert AuditEntry.objects.filter(pk__in=[entry.pk for entry in entries]).count() == 3


def test_the_api_schema_describes_the_entries_and_the_filters(api):
    schema = api.admin.get("/api/openapi.json").json()
    operation = schema["paths"]["/api/audit"]
    assert set(operation) == {"get"}
    names = {parameter["name"] for parameter in operation["get"]["parameters"]}
    assert names >= {"actor", "object_type", "object_id", "action", "since", "until", "limit", "offset"}
    assert set(schema["components"]["schemas"]["AuditEntryOut"]["properties"]) == {
        "id", "at", "actor", "actor_id", "via", "via_detail", "action", "object_type", "object_id", "before", "after"}


# --- manage.py audit -------------------------------------------------------------------

def audit(*args) -> list[dict]:
    from io import StringIO

    out = StringIO()
    call_command("audit", *args, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_the_command_prints_json_lines_oldest_first_filtered(api, entries):
    update, decide, delete = entries

    printed = audit("--object-id", "paper_review")
    assert [line["id"] for line in printed] == [update.pk, delete.pk]
    assert printed[0]["after"] == {"version": 2, "name": "<b>New</b>"} and printed[1]["after"] is None
    assert [line["id"] for line in audit("--object-id", "paper_review", "--newest-first")] == [delete.pk, update.pk]
    assert [line["id"] for line in audit("--actor", "approver-user")] == [decide.pk]
    assert [line["id"] for line in audit("--action", "workflow.delete", "--object-type", "workflow")] == [delete.pk]
    moment = decide.at.isoformat()
    assert [line["id"] for line in audit("--since", moment, "--object-id", "exec_1")] == [decide.pk]
    assert audit("--until", moment, "--object-id", "exec_1") == []


def test_the_command_reads_the_trail_a_chunk_at_a_time(api, entries, monkeypatch):
    from django.db.models import QuerySet

    chunks = []
    iterate = QuerySet.iterator

    def watched(queryset, chunk_size=None):
        chunks.append(chunk_size)
        return iterate(queryset, chunk_size=chunk_size)

    monkeypatch.setattr(QuerySet, "iterator", watched)
    assert len(audit("--object-id", "paper_review")) == 2
    assert chunks == [2000]


@pytest.mark.parametrize("option", ["--since", "--until"])
def test_the_command_names_a_bad_time(option):
    with pytest.raises(CommandError, match=f"^{option}: '28/11/2026' is not an ISO date or datetime"):
        call_command("audit", option, "28/11/2026")


# --- the page --------------------------------------------------------------------------

def test_the_page_shows_admins_each_change_escaped_with_its_object_linked(api, entries):
    page = signed_in(api.admin.user).get("/audit/", {"object_id": "paper_review"})

    assert page.status_code == 200
    html = page.content.decode()
    assert html.index("workflow.delete") < html.index("workflow.update")  # newest first
    assert '<a class="mono" href="/workflows/paper_review/">paper_review</a>' in html
    assert "&lt;b&gt;New&lt;/b&gt;" in html and "<b>New</b>" not in html
    assert "api_token · <span class=\"mono\">prefix1</span>" in html
    assert "exec_1" not in html
    rows = page.context["rows"]
    assert [change["key"] for change in rows[1]["changes"]] == ["name", "version"]
    assert rows[1]["changes"][0] == {"key": "name", "before": '"Old"', "after": '"<b>New</b>"'}
    assert rows[0]["changes"] == [{"key": "name", "before": '"<b>New</b>"', "after": "—"}]


def test_the_page_filters_by_person_action_and_time_in_its_query_string(api, entries):
    admin = signed_in(api.admin.user)
    shown = admin.get("/audit/", {"actor": "approver-user", "action": "gate.decide"})
    assert [row["entry"].pk for row in shown.context["rows"]] == [entries[1].pk]
    assert '<a class="mono" href="/executions/exec_1/">exec_1</a>' in shown.content.decode()
    assert admin.get("/audit/", {"until": "2000-01-01"}).context["rows"] == []

    refused = admin.get("/audit/", {"since": "soon"})
    assert refused.status_code == 400
    assert "since: &#x27;soon&#x27; is not an ISO date or datetime" in refused.content.decode()


def test_the_page_and_its_link_are_for_admins_only(api):
    for user in (api.viewer.user, api.author.user, api.approver.user):
        client = signed_in(user)
        refused = client.get("/audit/")
        assert refused.status_code == 403
        assert "Only a user with the <strong>admin</strong> role may read the audit trail" in refused.content.decode()
        assert 'href="/audit/"' not in client.get("/").content.decode()
    assert 'href="/audit/"' in signed_in(api.admin.user).get("/").content.decode()
    assert Client().get("/audit/").status_code == 302  # to the sign-in page


# --- the admin site --------------------------------------------------------------------

def test_the_admin_site_shows_entries_to_a_superuser_and_lets_no_one_change_or_delete_one(entries):
    root = signed_in(User.objects.create_superuser("root", password="a long password"))
    entry = entries[0]

    assert root.get("/admin/core/auditentry/").status_code == 200
    assert root.get(f"/admin/core/auditentry/{entry.pk}/change/").status_code == 200  # shown, read-only
    assert root.get("/admin/core/auditentry/add/").status_code == 403
    assert root.post(f"/admin/core/auditentry/{entry.pk}/change/", {"action": "x"}).status_code == 403
    assert root.post(f"/admin/core/auditentry/{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    assert root.post("/admin/core/auditentry/", {"action": "delete_selected", "_selected_action": [entry.pk],
                                                 "post": "yes"}).status_code in (200, 302)
    entry.refresh_from_db()
    assert entry.action == "workflow.update"
    assert AuditEntry.objects.filter(pk__in=[made.pk for made in entries]).count() == 3


def test_a_moment_without_an_offset_is_utc():
    from core.audit_selectors import BadFilter, parse_moment

    assert parse_moment("2026-11-28T09:30", where="since") == datetime(2026, 11, 28, 9, 30, tzinfo=UTC)
    assert parse_moment("2026-11-28", where="until", end=True) == datetime(2026, 11, 29, tzinfo=UTC)
    assert parse_moment("2026-11-28T10:30+01:00", where="since") == datetime(2026, 11, 28, 9, 30, tzinfo=UTC)
    for text in ("9999-12-31", "0001-01-01T00:00:00+12:00"):
        with pytest.raises(BadFilter, match=r"is out of range in UTC \(years 1 to 9999\)"):
            parse_moment(text, where="until", end=True)
