"""What the beat reads of a schedule: django-celery-beat's `PeriodicTask` and `CrontabSchedule`,
one of each owned by each schedule and kept in step with it in the transaction that saves it.

The beat runs with `DatabaseScheduler`, which notices a change of any PeriodicTask (its
`PeriodicTasks` mark, moved by the model's own signals) within seconds and reads the
schedule again: a schedule made, changed, paused or deleted needs no restart. The fire is
sent as `schedules.fire` with the schedule's id; the task decides which fire time that is
(schedules/firing.py), so a fire the beat sends twice starts one run.
"""
from __future__ import annotations

import json

from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from schedules.cron import parse_cron
from schedules.models import Schedule

FIRE_TASK = "schedules.fire"


def task_name(schedule: Schedule) -> str:
    """The PeriodicTask's name, unique among the beat's entries (the sweeps have theirs)."""
    return f"schedule {schedule.pk}"


def periodic_task_sync(schedule: Schedule, *, restart: bool) -> PeriodicTask:
    """Make or update the schedule's PeriodicTask and CrontabSchedule as the schedule now is.
    `restart`: its timing changed or it was resumed, so the beat counts from now; else a
    fire missed under the old timing, or while paused, would be sent at once."""
    fields = parse_cron(schedule.cron).fields()
    task = schedule.periodic_task
    if task is None or task.crontab_id is None:
        crontab = CrontabSchedule.objects.create(timezone=schedule.timezone, **fields)
        task = PeriodicTask(name=task_name(schedule), task=FIRE_TASK, crontab=crontab)
    else:
        crontab = task.crontab
        for name, value in {**fields, "timezone": schedule.timezone}.items():
            setattr(crontab, name, value)
        crontab.save()
    task.args = json.dumps([schedule.pk])
    task.enabled = schedule.enabled
    task.description = f"Starts a run of {schedule.workflow.workflow_id} ({schedule.name})"[:200]
    if restart or task.pk is None:
        task.last_run_at = timezone.now()
    task.save()
    if schedule.periodic_task_id != task.pk:
        schedule.periodic_task = task
        Schedule.objects.filter(pk=schedule.pk).update(periodic_task=task)
    return task


def periodic_task_delete(schedule: Schedule) -> None:
    """Delete the schedule's PeriodicTask and CrontabSchedule: the beat sends it no more. Called
    as a schedule is deleted, by itself or with its workflow (SchedulesConfig.ready)."""
    task = PeriodicTask.objects.filter(pk=schedule.periodic_task_id).first() if schedule.periodic_task_id else None
    if task is None:
        return
    crontab_id = task.crontab_id
    task.delete()
    CrontabSchedule.objects.filter(pk=crontab_id).delete()
