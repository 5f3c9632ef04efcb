"""The writes of schedules: create, change, pause, resume, delete — each checked whole first
(errors name the field), saved with its beat entry kept in step and its audit entry in one
transaction — and a fire: at most one run per fire time."""
from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.audit import acting, record
from core.errors import DocumentError, NotFound, SwitchyardError, echo
from core.jsonutil import check_storable
from core.status_writes import lock_row
from executions.run_graphs import run_graph
from executions.services import execution_start
from executions.services.start import input_checked
from schedules.beat import periodic_task_sync
from schedules.cron import CronError, parse_cron, time_zone
from schedules.firing import Action, fire_decision
from schedules.models import Schedule, ScheduleFire
from workflows.models import Workflow

logger = logging.getLogger(__name__)

NAME_LIMIT: int = Schedule._meta.get_field("name").max_length or 200
# What a change of these fields changes in when the schedule fires: the beat counts from now.
TIMING = ("cron", "timezone")


def schedule_state(schedule: Schedule) -> dict[str, Any]:
    """A schedule as the audit trail keeps it, before and after a change."""
    return {"name": schedule.name, "workflow_id": schedule.workflow.workflow_id, "version": schedule.version,
            "input": schedule.input, "cron": schedule.cron, "timezone": schedule.timezone,
            "enabled": schedule.enabled, "missed": schedule.missed}


def schedule_create(*, workflow_id: str, name: str, cron: str, timezone_name: str = "UTC",
                    input: Any = None, version: int | None = None, missed: str = Schedule.Missed.SKIP,
                    enabled: bool = True, actor=None) -> Schedule:
    """A new schedule of the workflow `workflow_id`, checked whole (each refusal names its
    field: `workflow_id`, `name`, `cron`, `timezone`, `version`, `input…`, `missed`), with its
    beat entry; audited as `schedule.create`."""
    workflow = Workflow.objects.filter(workflow_id=workflow_id).first() if isinstance(workflow_id, str) else None
    if workflow is None:
        raise _refused("workflow_id", f"workflow '{echo(str(workflow_id))}' does not exist")
    schedule = Schedule(workflow=workflow, name=name, cron=cron, timezone=timezone_name,
                        input={} if input is None else input, version=version, missed=missed, enabled=enabled,
                        created_by=actor if getattr(actor, "pk", None) else None)
    _check(schedule)
    with transaction.atomic():
        _save(schedule)
        periodic_task_sync(schedule, restart=True)
        record("schedule.create", actor=actor, object_type="schedule", object_id=schedule.pk,
               after=schedule_state(schedule))
    return schedule


def schedule_update(*, schedule: Schedule, actor=None, **changes: Any) -> Schedule:
    """Change some of a schedule's `name`, `cron`, `timezone`, `input`, `version` (None: the
    latest), `missed` and `enabled`; checked whole as a new one is, audited as `schedule.update`
    with the schedule before and after. A change of timing, or a resume, counts from now:
    fires of the old timing, or while paused, are not caught up."""
    unknown = set(changes) - {"name", "cron", "timezone", "input", "version", "missed", "enabled"}
    if unknown:
        raise DocumentError(f"a schedule has no field '{sorted(unknown)[0]}'", where=sorted(unknown)[0])
    with transaction.atomic():
        schedule = _locked(schedule.pk)
        before = schedule_state(schedule)
        for field, value in changes.items():
            setattr(schedule, field, value if field != "input" or value is not None else {})
        _check(schedule)
        after = schedule_state(schedule)
        if after == before:
            return schedule
        restart = any(before[field] != after[field] for field in TIMING) or (after["enabled"] and not before["enabled"])
        if restart:
            schedule.active_since = timezone.now()
        schedule.updated_at = timezone.now()
        _save(schedule)
        periodic_task_sync(schedule, restart=restart)
        changed = {field for field in after if after[field] != before[field]}
        action = ("schedule.resume" if after["enabled"] else "schedule.pause") if changed == {"enabled"} \
            else "schedule.update"
        record(action, actor=actor, object_type="schedule", object_id=schedule.pk, before=before, after=after)
    return schedule


def schedule_pause(*, schedule: Schedule, actor=None) -> Schedule:
    """Stop a schedule firing (the beat sends it no more; a fire already sent does nothing)."""
    return schedule_update(schedule=schedule, actor=actor, enabled=False)


def schedule_resume(*, schedule: Schedule, actor=None) -> Schedule:
    """Let a paused schedule fire again, from its next fire time on."""
    return schedule_update(schedule=schedule, actor=actor, enabled=True)


def schedule_delete(*, schedule: Schedule, actor=None) -> None:
    """Delete a schedule and its beat entry; the runs it started stay, and still name it."""
    with transaction.atomic():
        schedule = _locked(schedule.pk)
        before = schedule_state(schedule)
        pk = schedule.pk
        schedule.delete()  # its PeriodicTask goes with it (SchedulesConfig.ready)
        record("schedule.delete", actor=actor, object_type="schedule", object_id=pk, before=before)


def schedule_fire(*, schedule_id: int, now: datetime | None = None) -> str:
    """Handle one fire message of the schedule `schedule_id` (firing.py decides what it is
    for): start its run, record a skipped missed fire, or nothing. The fire time's row and the
    run are written in one transaction; a second message for the same fire time finds the row
    and starts nothing. What it did, in a word, for the task's result and the log."""
    now = now or timezone.now()
    schedule = Schedule.objects.select_related("workflow", "created_by").filter(pk=schedule_id).first()
    if schedule is None:
        return "gone"
    if not schedule.enabled:
        return "paused"
    decision = fire_decision(cron=schedule.cron, zone=schedule.timezone, now=now,
                             active_since=schedule.active_since, catch_up=schedule.missed == Schedule.Missed.CATCH_UP,
                             missed_after=timedelta(seconds=settings.SCHEDULE_MISSED_AFTER_SECONDS))
    if decision.action is Action.NOTHING:
        return "nothing due"
    assert decision.fire_time is not None
    with acting("schedule", schedule.name):
        try:
            with transaction.atomic():
                fire = _fire_row(schedule, decision.fire_time, ScheduleFire.Outcome.STARTED
                                 if decision.action is Action.START else ScheduleFire.Outcome.SKIPPED)
                if decision.action is Action.START:
                    fire.execution = execution_start(workflow=schedule.workflow, input=schedule.input,
                                                     actor=schedule.created_by, version=schedule.version)
                    fire.save(update_fields=["execution"])
                _record_fire(schedule, fire, late=decision.late)
        except IntegrityError:
            return "already fired"
        except SwitchyardError as error:  # the workflow or its inputs changed under the schedule
            return _fire_failed(schedule, decision.fire_time, error)
    return fire.outcome


def _fire_row(schedule: Schedule, fire_time: datetime, outcome: str) -> ScheduleFire:
    """The fire time's row, first in the transaction: a second message for it waits for this
    one's commit at the unique index, then fails there (IntegrityError) and starts nothing."""
    return ScheduleFire.objects.create(schedule=schedule, schedule_name=schedule.name, fire_time=fire_time,
                                       outcome=outcome)


def _fire_failed(schedule: Schedule, fire_time: datetime, error: SwitchyardError) -> str:
    logger.warning("schedule %s (%s) could not start its run for %s: %s", schedule.pk, schedule.name,
                   fire_time.isoformat(), error.message)
    try:
        with transaction.atomic():
            fire = ScheduleFire.objects.create(schedule=schedule, schedule_name=schedule.name, fire_time=fire_time,
                                               outcome=ScheduleFire.Outcome.FAILED, error=error.message[:2000])
            _record_fire(schedule, fire, late=False)
    except IntegrityError:
        return "already fired"
    return fire.outcome


def _record_fire(schedule: Schedule, fire: ScheduleFire, *, late: bool) -> None:
    record(f"schedule.fire.{fire.outcome}", object_type="schedule", object_id=schedule.pk,
           after={"fire_time": fire.fire_time, "late": late, "error": fire.error or None,
                  "execution_id": fire.execution.execution_id if fire.execution else None})


def _check(schedule: Schedule) -> None:
    """Refuse a schedule that is wrong anywhere, naming the field: its name, cron, zone, what
    to do with missed fires, its version, and its input against that version's input schema
    (as a run's input is checked)."""
    name = schedule.name.strip() if isinstance(schedule.name, str) else ""
    if not name:
        raise _refused("name", "a schedule needs a name")
    if len(name) > NAME_LIMIT:
        raise _refused("name", f"a name is at most {NAME_LIMIT} characters; this one has {len(name)}")
    schedule.name = name
    try:
        schedule.cron = parse_cron(schedule.cron if isinstance(schedule.cron, str) else "").text
        time_zone(schedule.timezone)
    except CronError as error:
        raise _refused(error.where, str(error)) from None
    if schedule.missed not in Schedule.Missed.values:
        raise _refused("missed", f"'{echo(str(schedule.missed))}' is not one of {', '.join(Schedule.Missed.values)}")
    if schedule.version is not None and (not isinstance(schedule.version, int) or isinstance(schedule.version, bool)):
        raise _refused("version", "a version is a number, or null for the latest")
    if not isinstance(schedule.input, dict):
        raise _refused("input", "the input of a run is a JSON object")
    check_storable(schedule.input, where="input")
    _, graph = _graph(schedule)
    try:
        input_checked(graph, schedule.input)
    except DocumentError as error:  # each input that breaks the workflow's input schema, at its field
        problems = (error.details or {}).get("problems") or [{"where": error.where, "message": error.problem}]
        raise DocumentError.at_fields([(problem["where"], problem["message"]) for problem in problems]) from None


def _graph(schedule: Schedule):
    try:
        return run_graph(schedule.workflow, schedule.version)
    except DocumentError as error:  # run_graph names the run's field; a schedule's is `version`
        raise _refused("version", error.problem) from None


def _save(schedule: Schedule) -> None:
    taken = Schedule.objects.filter(name=schedule.name).exclude(pk=schedule.pk).exists()
    if taken:
        raise _refused("name", f"a schedule named '{echo(schedule.name)}' exists already")
    schedule.save()


def _locked(pk: int) -> Schedule:
    schedule = lock_row(Schedule, pk, missing_ok=True)
    if schedule is None:
        raise NotFound(f"no schedule {pk}", details={"schedule_id": pk})
    return Schedule.objects.select_related("workflow", "periodic_task__crontab").get(pk=schedule.pk)


def _refused(where: str, message: str) -> DocumentError:
    """The refusal of a schedule at one field: the API answers it 422 naming `where`."""
    return DocumentError.at_fields([(where, message)])
