"""/api/schedules: anyone signed in reads, authors write; each refusal names its field; the
runs a schedule started are listed with it, and named on executions' pages."""
from datetime import UTC, datetime

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core.models import AuditEntry
from schedules.models import Schedule, ScheduleFire
from schedules.services import schedule_fire
from tests.pages.conftest import signed_in

BODY = {"workflow_id": "parallel_analysis", "name": "weekday mornings", "cron": "0 9 * * mon-fri",
        "timezone": "Europe/Berlin", "input": {"repository": "acme"}}


def test_authors_create_change_pause_resume_and_delete_and_viewers_only_read(api, workflow):
    assert api.viewer.post("/api/schedules", BODY).status_code == 403
    created = api.author.post("/api/schedules", BODY)
    assert created.status_code == 201, created.content
    schedule = created.json()
    assert schedule["cron_description"] == "At 09:00, Monday through Friday"
    assert len(schedule["next_fires"]) == 5 and all(time.endswith(("+01:00", "+02:00")) for time in schedule["next_fires"])
    assert all(datetime.fromisoformat(time).hour == 9 for time in schedule["next_fires"])
    assert schedule["created_by"] == "author-user" and schedule["version"] is None and schedule["missed"] == "skip"

    listed = api.viewer.get("/api/schedules", workflow="parallel_analysis").json()
    assert [each["name"] for each in listed["items"]] == ["weekday mornings"]
    assert api.viewer.get("/api/schedules", workflow="other").json()["count"] == 0
    path = f"/api/schedules/{schedule['id']}"
    assert api.viewer.patch(path, {"cron": "0 8 * * *"}).status_code == 403
    for action in ("pause", "resume"):
        assert api.viewer.post(f"{path}/{action}").status_code == 403
    assert api.viewer.delete(path).status_code == 403

    changed = api.author.patch(path, {"cron": "0 8 * * *", "missed": "catch_up"}).json()
    assert (changed["cron"], changed["missed"], changed["name"]) == ("0 8 * * *", "catch_up", "weekday mornings")
    paused = api.author.post(f"{path}/pause").json()
    assert (paused["enabled"], paused["next_fires"]) == (False, [])
    assert api.author.post(f"{path}/resume").json()["enabled"] is True
    assert api.author.delete(path).status_code == 204
    assert api.viewer.get(path).status_code == 404
    assert list(AuditEntry.objects.filter(object_type="schedule").order_by("pk").values_list("action", "via")) == [
        ("schedule.create", "api_token"), ("schedule.update", "api_token"), ("schedule.pause", "api_token"),
        ("schedule.resume", "api_token"), ("schedule.delete", "api_token")]


@pytest.mark.parametrize(("change", "where", "said"), [
    ({"cron": "0 9 * *"}, "cron", "five fields"),
    ({"cron": "0 25 * * *"}, "cron", "its hour field '25' is not valid"),
    ({"timezone": "Moon/Base"}, "timezone", "'Moon/Base' is not an IANA time zone name"),
    ({"input": {}}, "input.repository", "is required by the workflow"),
])
def test_a_bad_cron_zone_or_input_is_422_naming_the_field(api, workflow, change, where, said):
    refused = api.author.post("/api/schedules", {**BODY, **change})
    assert refused.status_code == 422
    body = refused.json()
    assert body["details"][0]["where"] == where and said in body["message"] and body["message"].startswith(f"{where}: ")
    created = api.author.post("/api/schedules", BODY).json()
    refused = api.author.patch(f"/api/schedules/{created['id']}", change)
    assert refused.status_code == 422 and refused.json()["details"][0]["where"] == where
    assert api.author.get(f"/api/schedules/{created['id']}").json()["cron"] == BODY["cron"]  # nothing changed


def test_the_openapi_schema_declares_the_schedules_operations(api, workflow):
    schema = api.viewer.get("/api/openapi.json").json()
    assert {"/api/schedules", "/api/schedules/{schedule_id}", "/api/schedules/{schedule_id}/pause",
            "/api/schedules/{schedule_id}/resume", "/api/schedules/{schedule_id}/fires"} <= set(schema["paths"])
    assert {"ScheduleIn", "SchedulePatch", "ScheduleOut", "FireOut"} <= set(schema["components"]["schemas"])


def test_a_run_a_schedule_started_is_listed_with_it_and_named_on_the_runs_pages(api, workflow):
    created = api.author.post("/api/schedules", {**BODY, "cron": "0 * * * *"}).json()
    Schedule.objects.filter(pk=created["id"]).update(active_since=datetime(2026, 5, 1, tzinfo=UTC))
    schedule_fire(schedule_id=created["id"], now=datetime(2026, 5, 1, 10, 0, 2, tzinfo=UTC))
    run = ScheduleFire.objects.get().execution
    fires = api.viewer.get(f"/api/schedules/{created['id']}/fires").json()
    assert fires["items"] == [{"fire_time": "2026-05-01T10:00:00Z", "outcome": "started", "error": "",
                               "execution_id": run.execution_id, "execution_status": run.status}]
    browser = signed_in(api.viewer.user)
    page = browser.get(f"/schedules/{created['id']}/").content.decode()
    assert run.execution_id in page and "Every hour" in page
    assert f'href="/schedules/{created["id"]}/">weekday mornings</a>' in browser.get("/executions/").content.decode()
    detail = browser.get(f"/executions/{run.execution_id}/").content.decode()
    assert 'id="run-origin"' in detail and "weekday mornings" in detail


def test_the_command_adds_lists_pauses_resumes_and_deletes_with_clear_errors(workflow, capsys):
    call_command("schedules", "add", "parallel_analysis", "nightly", "--cron", "30 2 * * *", "--timezone",
                 "Europe/Berlin", "--input", '{"repository": "acme"}', "--catch-up")
    assert "nightly added: At 02:30, in Europe/Berlin" in capsys.readouterr().out
    call_command("schedules", "list")
    listed = capsys.readouterr().out
    assert "nightly\tparallel_analysis\t30 2 * * *\tEurope/Berlin\tenabled" in listed and listed.count("\tnext ") == 5
    call_command("schedules", "pause", "nightly")
    call_command("schedules", "resume", "nightly")
    call_command("schedules", "delete", "nightly")
    assert not Schedule.objects.exists()
    assert list(AuditEntry.objects.filter(object_type="schedule").values_list("action", flat=True).order_by("pk")) == [
        "schedule.create", "schedule.pause", "schedule.resume", "schedule.delete"]
    for argv, said in ((["add", "parallel_analysis", "x", "--cron", "0 0 * * 9"], "cron: its day of week field '9'"),
                       (["add", "parallel_analysis", "x", "--cron", "0 0 * * *", "--timezone", "Nowhere"],
                        "timezone: 'Nowhere' is not an IANA time zone name"),
                       (["add", "parallel_analysis", "x", "--cron", "0 0 * * *", "--input", "{"], "--input:"),
                       (["pause", "nope"], "no schedule named 'nope'")):
        with pytest.raises(CommandError, match=said.replace("*", r"\*")):
            call_command("schedules", *argv)
