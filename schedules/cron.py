"""Cron expressions (five fields) in a time zone: read, put in words, and the times they fire.

Each field is read by Celery's own crontab parser, so a schedule fires at exactly the times
the beat sends it (`celery.schedules.crontab`): minute 0-59, hour 0-23, day of month 1-31,
month 1-12 (or jan-dec), day of week 0-6 (Sunday 0, or sun-sat); `*`, lists, ranges and
steps. As in Celery, a day restricted by both its day of month and its day of week must
match both.

Times are wall-clock times in the schedule's zone (an IANA name), turned into instants one
by one, so a fire stays at 09:00 local across a change of daylight saving time. Two rules
for the hour such a change makes odd: a time the clock skips (02:30 when it jumps from 02:00
to 03:00) fires when the clock reads an hour later (03:30), once however many such times
map there; a time the clock passes twice (02:30 when it goes back from 03:00 to 02:00) fires
once, the first time.

Pure: no database, no Django; the services and the fire task call it with the times they hold.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from core.errors import echo

FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
FIELD_WORDS = {"minute": "minute", "hour": "hour", "day_of_month": "day of month", "month_of_year": "month",
               "day_of_week": "day of week"}
# How far a search for a matching day goes: the rarest expression that fires at all (a
# 29 February that is a given weekday) fires once in 28 years.
SEARCH_DAYS = 29 * 366
# A change of daylight saving time moves a wall-clock time by at most this much (Lord Howe's
# half hour, the usual hour, Antarctica's Troll two hours): searches look this far beyond.
SHIFT = timedelta(hours=3)
NUMERIC_ONLY = ("minute", "hour", "day_of_month")  # the others take names too: jan, mon
NUMERIC = re.compile(r"[0-9*,/-]+")


class CronError(ValueError):
    """What is wrong with a cron expression or a time zone, in words to show: `where` is the
    field (`cron` or `timezone`)."""

    def __init__(self, message: str, *, where: str):
        super().__init__(message)
        self.where = where


@dataclass(frozen=True)
class Cron:
    """A cron expression read: each field's values (day of week: Sunday 0)."""

    text: str
    minute: frozenset[int]
    hour: frozenset[int]
    day_of_month: frozenset[int]
    month_of_year: frozenset[int]
    day_of_week: frozenset[int]

    def fields(self) -> dict[str, str]:
        """The five fields as written, by Celery's names (a CrontabSchedule's columns)."""
        return dict(zip(FIELDS, self.text.split(), strict=True))

    def matches_day(self, day: date) -> bool:
        return (day.month in self.month_of_year and day.day in self.day_of_month
                and (day.weekday() + 1) % 7 in self.day_of_week)


@lru_cache(maxsize=1024)
def parse_cron(text: str) -> Cron:
    """`text` read as five fields, or CronError naming the field that is wrong and why; an
    expression that matches no date at all (31 February) is refused too."""
    from celery.schedules import crontab

    if not isinstance(text, str) or not text.strip():
        raise CronError("a cron expression is five fields: minute hour day-of-month month day-of-week, "
                        "e.g. '0 9 * * mon-fri'", where="cron")
    parts = text.split()
    if len(parts) != 5:
        raise CronError(f"a cron expression is five fields (minute hour day-of-month month day-of-week); "
                        f"'{echo(text)}' has {len(parts)}", where="cron")
    values = {}
    for name, part in zip(FIELDS, parts, strict=True):
        if name in NUMERIC_ONLY and not NUMERIC.fullmatch(part):
            raise CronError(f"its {FIELD_WORDS[name]} field '{echo(part)}' is not valid: it takes numbers, "
                            f"'*', lists (,), ranges (-) and steps (/)", where="cron")
        try:
            values[name] = frozenset(getattr(crontab(**{name: part}), name))
        except Exception as error:  # noqa: BLE001 - Celery's parser raises ValueError or its ParseException
            raise CronError(f"its {FIELD_WORDS[name]} field '{echo(part)}' is not valid: {error}",
                            where="cron") from None
    cron = Cron(" ".join(parts), **values)
    if not any(cron.matches_day(date(2000, 1, 1) + timedelta(days=n)) for n in range(SEARCH_DAYS)):
        raise CronError(f"'{cron.text}' matches no date: its day of month, month and day of week never meet",
                        where="cron")
    return cron


def time_zone(name: str) -> ZoneInfo:
    """The IANA time zone `name` (e.g. Europe/Berlin), or CronError naming `timezone`."""
    if not isinstance(name, str) or name not in _zone_names():
        raise CronError(f"'{echo(str(name))}' is not an IANA time zone name such as UTC or Europe/Berlin",
                        where="timezone")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CronError(f"'{echo(name)}' is not an IANA time zone name such as UTC or Europe/Berlin",
                        where="timezone") from None


@lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


def describe(text: str) -> str:
    """The expression in words (cron-descriptor), e.g. "At 09:00, Monday through Friday"."""
    from cron_descriptor import CasingTypeEnum, ExpressionDescriptor, Options

    options = Options()
    options.use_24hour_time_format = True
    options.casing_type = CasingTypeEnum.Sentence
    return ExpressionDescriptor(text, options).get_description()


def fires_after(cron: Cron, zone: ZoneInfo, after: datetime, count: int) -> list[datetime]:
    """The first `count` instants (in UTC) after `after` at which `cron` fires in `zone`."""
    found: set[datetime] = set()
    start = after.astimezone(zone).replace(tzinfo=None) - SHIFT
    horizon = None
    for local in _local_times(cron, start, forward=True):
        if horizon is not None and local > horizon:
            break
        instant = _instant(local, zone)
        if instant > after:
            found.add(instant)
            if len(found) >= count and horizon is None:  # earlier ones may still come within the shift
                horizon = local + SHIFT
    return sorted(found)[:count]


def latest_fire(cron: Cron, zone: ZoneInfo, now: datetime) -> datetime | None:
    """The last instant (in UTC) at or before `now` at which `cron` fires in `zone`."""
    best = None
    start = now.astimezone(zone).replace(tzinfo=None) + SHIFT
    horizon = None
    for local in _local_times(cron, start, forward=False):
        if horizon is not None and local < horizon:
            break
        instant = _instant(local, zone)
        if instant <= now:
            best = instant if best is None else max(best, instant)
            if horizon is None:
                horizon = local - SHIFT
    return best


def _instant(local: datetime, zone: ZoneInfo) -> datetime:
    """A wall-clock time in `zone` as an instant: a skipped time read with the offset before
    the change (an hour on), a repeated one as its first pass (fold 0)."""
    return local.replace(tzinfo=zone, fold=0).astimezone(UTC)


def _local_times(cron: Cron, start: datetime, *, forward: bool) -> Iterator[datetime]:
    """Wall-clock times `cron` matches from `start` on (or back), whole minutes, in order."""
    minutes = sorted(cron.minute, reverse=not forward)
    hours = sorted(cron.hour, reverse=not forward)
    step = timedelta(days=1 if forward else -1)
    day = start.date()
    for _ in range(SEARCH_DAYS):
        if cron.matches_day(day):
            for hour in hours:
                for minute in minutes:
                    local = datetime(day.year, day.month, day.day, hour, minute)
                    if (local >= start) if forward else (local <= start):
                        yield local
        day += step
