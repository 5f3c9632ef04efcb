"""What the schedules router reads and answers."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema

CRON = "five fields: minute hour day-of-month month day-of-week, e.g. `0 9 * * mon-fri` (Celery's crontab)"
MISSED = ("a fire missed while the beat was down: `catch_up` starts one run for the latest missed fire when it is "
          "back, `skip` starts none (the next fire on time runs)")


class ScheduleIn(Schema):
    workflow_id: str = Field(..., min_length=1, max_length=100)
    name: str = Field(..., min_length=1, max_length=200)
    cron: str = Field(..., max_length=200, description=CRON)
    timezone: str = Field("UTC", max_length=64, description="an IANA time zone, e.g. Europe/Berlin")
    version: int | None = Field(None, ge=1, le=2**31 - 1, description="the workflow version each run runs; none: "
                                                                        "the latest at each fire")
    input: dict[str, Any] = Field({}, description="the run's input, checked against the workflow's input schema")
    missed: Literal["catch_up", "skip"] = Field("skip", description=MISSED)
    enabled: bool = True


class SchedulePatch(Schema):
    """Only the fields sent change; `version: null` runs the latest."""

    name: str | None = Field(None, min_length=1, max_length=200)
    cron: str | None = Field(None, max_length=200, description=CRON)
    timezone: str | None = Field(None, max_length=64)
    version: int | None = Field(None, ge=1, le=2**31 - 1)
    input: dict[str, Any] | None = None
    missed: Literal["catch_up", "skip"] | None = None
    enabled: bool | None = None


class FireOut(Schema):
    fire_time: datetime
    outcome: str = Field(..., description="started, skipped (a missed fire of a schedule that skips them) or failed")
    execution_id: str | None
    execution_status: str | None
    error: str


class ScheduleOut(Schema):
    id: int
    name: str
    workflow_id: str
    version: int | None = Field(..., description="none: the latest at each fire")
    input: dict[str, Any]
    cron: str
    cron_description: str = Field(..., description="the cron expression in words")
    timezone: str
    enabled: bool
    missed: str = Field(..., description=MISSED)
    next_fires: list[datetime] = Field(..., description="the next five fire times, in the schedule's zone (none "
                                                        "while paused)")
    created_by: str | None
    created_at: datetime
    updated_at: datetime
