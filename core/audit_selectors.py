"""Reading the audit trail: one set of filters for the page, the API and `manage.py audit`."""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from core.errors import SwitchyardError
from core.models import AuditEntry

FILTERS = ("actor", "object_type", "object_id", "action", "since", "until")


class BadFilter(SwitchyardError):
    code = "VALIDATION_ERROR"


def parse_moment(text: str, *, where: str, end: bool = False) -> dt.datetime:
    """An ISO date or datetime (UTC when it gives no offset) as a moment in UTC: a date alone
    is the start of that day, or with `end` the start of the next (so that `until` a day
    takes it all). Refused naming `where` and what was given, as is a moment UTC cannot hold."""
    value = text.strip()
    shown = value if len(value) <= 40 else f"{value[:40]}…"
    try:
        if len(value) == 10:
            day = dt.date.fromisoformat(value)
            return dt.datetime.combine(day + dt.timedelta(days=1 if end else 0), dt.time(), tzinfo=dt.UTC)
        moment = dt.datetime.fromisoformat(value)
        return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment.astimezone(dt.UTC)
    except ValueError:
        problem = "is not an ISO date or datetime (e.g. 2026-11-28 or 2026-11-28T09:30:00Z)"
    except OverflowError:
        problem = "is out of range in UTC (years 1 to 9999)"
    raise BadFilter(f"{where}: '{shown}' {problem}", details=[{"where": where, "message": problem}])


@dataclass(frozen=True)
class AuditFilters:
    """Who (`actor`: a username), what object (`object_type`, `object_id`), what was done
    (`action`, e.g. `workflow.update`) and when (`since` inclusive, `until` exclusive)."""

    actor: str = ""
    object_type: str = ""
    object_id: str = ""
    action: str = ""
    since: dt.datetime | None = None
    until: dt.datetime | None = None

    @classmethod
    def parse(cls, values: dict[str, Any]) -> AuditFilters:
        """Filters from text (a query string, a command's options): blanks are no filter."""
        text = {name: str(values.get(name) or "").strip() for name in FILTERS}
        return cls(actor=text["actor"], object_type=text["object_type"], object_id=text["object_id"],
                   action=text["action"],
                   since=parse_moment(text["since"], where="since") if text["since"] else None,
                   until=parse_moment(text["until"], where="until", end=True) if text["until"] else None)

    def query(self) -> dict[str, str]:
        """The filters as text again, for a query string (blanks left out)."""
        shown = {"actor": self.actor, "object_type": self.object_type, "object_id": self.object_id,
                 "action": self.action, "since": self.since.isoformat() if self.since else "",
                 "until": self.until.isoformat() if self.until else ""}
        return {key: value for key, value in shown.items() if value}


def audit_entries(filters: AuditFilters, *, newest_first: bool = True) -> QuerySet[AuditEntry]:
    """The entries the filters keep, newest first (or oldest first): an indexed read."""
    entries = AuditEntry.objects.all()
    if filters.actor:
        entries = entries.filter(actor_name=filters.actor)
    if filters.object_type:
        entries = entries.filter(object_type=filters.object_type)
    if filters.object_id:
        entries = entries.filter(object_id=filters.object_id)
    if filters.action:
        entries = entries.filter(action=filters.action)
    if filters.since:
        entries = entries.filter(at__gte=filters.since)
    if filters.until:
        entries = entries.filter(at__lt=filters.until)
    return entries.order_by(*(("-at", "-id") if newest_first else ("at", "id")))


def entry_out(entry: AuditEntry) -> dict[str, Any]:
    """An entry as the API and `manage.py audit` give it."""
    return {"id": entry.pk, "at": entry.at, "actor": entry.actor_name or None, "actor_id": entry.actor_id,
            "via": entry.via, "via_detail": entry.via_detail, "action": entry.action,
            "object_type": entry.object_type, "object_id": entry.object_id, "before": entry.before,
            "after": entry.after}


def diff(before: Any, after: Any) -> list[dict[str, str]]:
    """Before and after as the page shows them: each key that differs, by name, its old and new
    values as JSON text ("—" where the key is absent; a side that is not an object is
    shown whole, under the key "")."""
    def text(side: dict[str, Any], key: str) -> str:
        return json.dumps(side[key], ensure_ascii=False, sort_keys=True) if key in side else "—"

    if before is None and isinstance(after, dict):
        before = {}
    elif after is None and isinstance(before, dict):
        after = {}
    if not isinstance(before, dict) or not isinstance(after, dict):
        return [] if before == after else [{"key": "", "before": text({"": before}, ""), "after": text({"": after}, "")}]
    keys = sorted({*before, *after})  # by name: PostgreSQL's JSON keeps no order of its own
    return [{"key": key, "before": text(before, key), "after": text(after, key)}
            for key in keys if key not in before or key not in after or before[key] != after[key]]
