"""Schedules made, changed, paused, resumed and deleted — checked whole, their beat entry kept
in step, audited — and fired: at most one run per fire time, missed fires caught up once or
skipped, nothing from a paused schedule."""
import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from core.errors import DocumentError
from core.models import AuditEntry
from executions.models import Execution
from schedules.models import Schedule, ScheduleFire
from schedules.services import (
    schedule_create,
    schedule_delete,
    schedule_fire,
    schedule_pause,
    schedule_resume,
    schedule_update,
)

pytestmark = pytest.mark.django_db

HOURLY = "0 * * * *"


def make(workflow, **fields):
    given = {"workflow_id": workflow.workflow_id, "name": "hourly", "cron": HOURLY, "timezone_name": "Europe/Berlin",
             "input": {"repository": "acme"}, **fields}
    return schedule_create(**given)


def since(schedule, when):
    Schedule.objects.filter(pk=schedule.pk).update(active_since=when)
    schedule.refresh_from_db()


def test_it_keeps_the_beat_entry_in_step_on_create_edit_pause_resume_and_delete(workflow):
    author = User.objects.create_user("ada")
    schedule = make(workflow, actor=author)
    task = PeriodicTask.objects.get(pk=schedule.periodic_task_id)
    assert (task.task, json.loads(task.args), task.enabled) == ("schedules.fire", [schedule.pk], True)
    crontab = task.crontab
    assert (crontab.minute, crontab.hour, crontab.day_of_week, str(crontab.timezone)) == ("0", "*", "*", "Europe/Berlin")

    schedule_update(schedule=schedule, cron="30 9 * * mon-fri", timezone="America/New_York", actor=author)
    crontab.refresh_from_db()
    assert (crontab.minute, crontab.hour, crontab.day_of_week, str(crontab.timezone)) == (
        "30", "9", "mon-fri", "America/New_York")
    schedule_pause(schedule=schedule, actor=author)
    assert PeriodicTask.objects.get(pk=task.pk).enabled is False
    schedule_resume(schedule=schedule, actor=author)
    assert PeriodicTask.objects.get(pk=task.pk).enabled is True
    schedule_delete(schedule=schedule, actor=author)
    assert not PeriodicTask.objects.filter(pk=task.pk).exists()
    assert not CrontabSchedule.objects.filter(pk=crontab.pk).exists()

    entries = list(AuditEntry.objects.filter(object_type="schedule").order_by("pk"))
    assert [entry.action for entry in entries] == ["schedule.create", "schedule.update", "schedule.pause",
                                                   "schedule.resume", "schedule.delete"]
    assert all(entry.actor_name == "ada" for entry in entries)
    assert entries[0].before is None and entries[0].after["cron"] == HOURLY
    assert (entries[1].before["cron"], entries[1].after["cron"]) == (HOURLY, "30 9 * * mon-fri")
    assert (entries[2].before["enabled"], entries[2].after["enabled"]) == (True, False)
    assert entries[4].before["name"] == "hourly" and entries[4].after is None


def test_a_resume_or_a_new_timing_counts_from_now_so_the_beat_sends_nothing_missed_before(workflow):
    schedule = make(workflow)
    long_ago = datetime(2026, 1, 1, tzinfo=UTC)
    PeriodicTask.objects.filter(pk=schedule.periodic_task_id).update(last_run_at=long_ago)
    since(schedule, long_ago)
    schedule_pause(schedule=schedule)
    schedule_resume(schedule=schedule)
    schedule.refresh_from_db()
    assert schedule.active_since > long_ago
    assert PeriodicTask.objects.get(pk=schedule.periodic_task_id).last_run_at > long_ago


@pytest.mark.parametrize(("fields", "where", "said"), [
    ({"cron": "61 * * * *"}, "cron", "its minute field '61' is not valid"),
    ({"cron": "* * *"}, "cron", "five fields"),
    ({"timezone_name": "Europe/Atlantis"}, "timezone", "is not an IANA time zone name"),
    ({"input": {}}, "input.repository", "is required by the workflow (the repository)"),
    ({"input": {"repository": 7}}, "input.repository", "7 is not of type 'string'"),
    ({"version": 9}, "version", "version 9"),
    ({"name": "  "}, "name", "a schedule needs a name"),
    ({"missed": "twice"}, "missed", "'twice' is not one of catch_up, skip"),
    ({"workflow_id": "nope"}, "workflow_id", "workflow 'nope' does not exist"),
])
def test_it_refuses_a_schedule_wrong_anywhere_naming_the_field_and_writes_nothing(workflow, fields, where, said):
    with pytest.raises(DocumentError, match=re.escape(said)) as refused:
        make(workflow, **fields)
    assert refused.value.where == where
    assert not Schedule.objects.exists() and not PeriodicTask.objects.filter(task="schedules.fire").exists()
    assert not AuditEntry.objects.filter(object_type="schedule").exists()


def test_it_refuses_a_second_schedule_of_the_same_name(workflow):
    make(workflow)
    with pytest.raises(DocumentError, match="a schedule named 'hourly' exists already") as refused:
        make(workflow, cron="0 9 * * *")
    assert refused.value.where == "name"


def test_the_same_fire_twice_starts_one_run_from_the_schedule_on_the_audit_trail(workflow):
    author = User.objects.create_user("ada")
    schedule = make(workflow, actor=author)
    since(schedule, datetime(2026, 5, 1, tzinfo=UTC))
    now = datetime(2026, 5, 1, 10, 0, 3, tzinfo=UTC)
    assert schedule_fire(schedule_id=schedule.pk, now=now) == "started"
    assert schedule_fire(schedule_id=schedule.pk, now=now + timedelta(seconds=20)) == "already fired"
    fire = ScheduleFire.objects.get()
    assert (fire.fire_time, fire.outcome) == (datetime(2026, 5, 1, 10, tzinfo=UTC), "started")
    run = Execution.objects.get()
    assert fire.execution == run and run.input == {"repository": "acme"} and run.created_by == author
    entry = AuditEntry.objects.get(action="schedule.fire.started")
    assert (entry.via, entry.via_detail, entry.after["execution_id"]) == ("schedule", "hourly", run.execution_id)


def test_after_a_gap_catch_up_starts_one_run_for_the_latest_missed_fire_and_skip_none(workflow):
    catching = make(workflow, name="catching", missed="catch_up")
    skipping = make(workflow, name="skipping", missed="skip")
    for schedule in (catching, skipping):
        since(schedule, datetime(2026, 5, 1, tzinfo=UTC))
    recovered = datetime(2026, 5, 1, 10, 40, tzinfo=UTC)  # the beat was down from 06:30: 07:00 to 10:00 missed
    for _ in range(2):  # a second beat, or the message again
        schedule_fire(schedule_id=catching.pk, now=recovered)
        schedule_fire(schedule_id=skipping.pk, now=recovered)
    assert list(ScheduleFire.objects.order_by("schedule_name").values_list("schedule_name", "fire_time", "outcome")) == [
        ("catching", datetime(2026, 5, 1, 10, tzinfo=UTC), "started"),
        ("skipping", datetime(2026, 5, 1, 10, tzinfo=UTC), "skipped")]
    assert Execution.objects.count() == 1
    assert schedule_fire(schedule_id=skipping.pk, now=datetime(2026, 5, 1, 11, 0, 1, tzinfo=UTC)) == "started"
    assert Execution.objects.count() == 2


def test_a_paused_or_deleted_schedule_fires_nothing(workflow):
    schedule = make(workflow)
    since(schedule, datetime(2026, 5, 1, tzinfo=UTC))
    schedule_pause(schedule=schedule)
    assert schedule_fire(schedule_id=schedule.pk, now=datetime(2026, 5, 1, 10, 0, 1, tzinfo=UTC)) == "paused"
    schedule_delete(schedule=schedule)
    assert schedule_fire(schedule_id=schedule.pk, now=datetime(2026, 5, 1, 11, 0, 1, tzinfo=UTC)) == "gone"
    assert not ScheduleFire.objects.exists() and not Execution.objects.exists()


def test_a_fire_that_cannot_start_its_run_is_recorded_with_why_once(workflow):
    schedule = make(workflow)
    since(schedule, datetime(2026, 5, 1, tzinfo=UTC))
    Schedule.objects.filter(pk=schedule.pk).update(input={})  # as if the workflow's inputs changed since
    now = datetime(2026, 5, 1, 10, 0, 1, tzinfo=UTC)
    assert schedule_fire(schedule_id=schedule.pk, now=now) == "failed"
    assert schedule_fire(schedule_id=schedule.pk, now=now) == "already fired"
    fire = ScheduleFire.objects.get()
    assert fire.error == "input.repository: is required by the workflow (the repository)" and fire.execution is None
    assert not Execution.objects.exists()
