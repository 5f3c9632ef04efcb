"""Which fire a `schedules.fire` message is for, and what to do with it: a pure decision,
given the schedule's timing and the time the message is handled.

The beat sends a schedule's fire at each of its cron times; once after it was down across
some, it sends one (Celery's beat finds the entry past due, once). The message carries the
schedule's id only, so the worker works the fire time out itself:

1. the fire time is the latest cron time at or before now, in the schedule's zone;
2. one before `active_since` (the schedule was made, resumed or re-timed after it) is not
   the schedule's: nothing is due;
3. reached within `missed_after` of its time, it is on time: start a run;
4. later, it is a missed one (the beat was down): a schedule that catches up starts one run
   for it, the latest missed; one that skips starts none, and its next fire on time runs.

The service records the fire time in a row unique on (schedule, fire time) in the
transaction that starts the run, so whatever sends a fire twice, one run starts.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from schedules.cron import latest_fire, parse_cron, time_zone


class Action(Enum):
    NOTHING = "nothing"  # no fire time of the schedule's own is due
    START = "start"
    SKIP = "skip"


@dataclass(frozen=True)
class FireDecision:
    action: Action
    fire_time: datetime | None
    late: bool  # reached more than `missed_after` after its time


def fire_decision(*, cron: str, zone: str, now: datetime, active_since: datetime, catch_up: bool,
                  missed_after: timedelta) -> FireDecision:
    """What a fire message handled at `now` does (the numbered rule in the module's docstring)."""
    fire_time = latest_fire(parse_cron(cron), time_zone(zone), now)
    if fire_time is None or fire_time < active_since:
        return FireDecision(Action.NOTHING, None, late=False)
    late = now - fire_time > missed_after
    if late and not catch_up:
        return FireDecision(Action.SKIP, fire_time, late=True)
    return FireDecision(Action.START, fire_time, late=late)
