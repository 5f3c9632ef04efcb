"""The reads of schedules: lists, one, its fires (with their runs), its next fire times and its
cron in words, and which runs a schedule started (for executions' pages)."""
from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone

from core.errors import NotFound
from executions.run_origins import RunOrigin
from schedules.cron import describe, fires_after, parse_cron, time_zone
from schedules.models import Schedule, ScheduleFire

NEXT_FIRES = 5


def schedule_list(*, workflow_id: str = "") -> QuerySet[Schedule]:
    schedules = Schedule.objects.select_related("workflow", "created_by").order_by("name", "pk")
    return schedules.filter(workflow__workflow_id=workflow_id) if workflow_id else schedules


def schedule_get(schedule_id: int) -> Schedule:
    schedule = schedule_list().filter(pk=schedule_id).first() if 0 < schedule_id < 2**63 else None
    if schedule is None:
        raise NotFound(f"no schedule {schedule_id}", details={"schedule_id": schedule_id})
    return schedule


def schedule_by_name(name: str) -> Schedule:
    schedule = schedule_list().filter(name=name).first()
    if schedule is None:
        raise NotFound(f"no schedule named '{name}'", details={"name": name})
    return schedule


def next_fires(schedule: Schedule, *, count: int = NEXT_FIRES, now: datetime | None = None) -> list[datetime]:
    """The schedule's next `count` fire times, in its zone (none while it is paused)."""
    if not schedule.enabled:
        return []
    zone = time_zone(schedule.timezone)
    return [instant.astimezone(zone) for instant in
            fires_after(parse_cron(schedule.cron), zone, now or timezone.now(), count)]


def cron_words(schedule: Schedule) -> str:
    return describe(schedule.cron)


def schedule_fires(schedule: Schedule) -> QuerySet[ScheduleFire]:
    """Its fires, newest first, each with its run's id and status."""
    return (schedule.fires.select_related("execution").order_by("-fire_time", "-pk")
            .only("fire_time", "outcome", "error", "created_at", "execution__execution_id", "execution__status"))


def schedule_origins(execution_pks: list[int]) -> dict[int, RunOrigin]:
    """The schedule that started each of these runs (executions.run_origins' reader)."""
    rows = (ScheduleFire.objects.filter(execution_id__in=execution_pks)
            .values_list("execution_id", "schedule_id", "schedule_name", "fire_time"))
    return {execution: RunOrigin(kind="schedule", label=name,
                                 url=reverse("schedules:detail", args=[schedule]) if schedule else "",
                                 detail=f"fire time {timezone.localtime(fire_time):%Y-%m-%d %H:%M %Z}")
            for execution, schedule, name, fire_time in rows}
