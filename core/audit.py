"""The audit trail: every change of consequence, recorded append-only with who, when, from
where, what, and the values before and after.

A change records itself with `record(...)` inside the transaction that makes it, so an
entry exists exactly when the change does. Where a request or command came from is set
once at its door with `acting(via, detail)` — the pages and the API's session (`page`),
an API token (`api_token`, its prefix), a workflow key, a webhook or schedule, a
`manage.py` command (`command`, its name) — and read here; work with no door (a worker's
sweep) is `system`.

Entries are never changed or deleted through the product: the model refuses a second
save and a delete, its queryset refuses update() and delete(), and the admin, the page,
the API and `manage.py audit` only read them."""
from __future__ import annotations

import contextvars
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder

VIAS = ("page", "api_token", "workflow_key", "webhook", "schedule", "command", "system")

_via: contextvars.ContextVar[tuple[str, str]] = contextvars.ContextVar("audit_via", default=("system", ""))


@contextmanager
def acting(via: str, detail: str = "") -> Iterator[None]:
    """Changes made inside come from `via` (one of VIAS), `detail` saying which (a token's
    prefix, a command's name, an address)."""
    if via not in VIAS:
        raise ValueError(f"unknown audit source {via!r}: one of {', '.join(VIAS)}")
    token = _via.set((via, detail[:200]))
    try:
        yield
    finally:
        _via.reset(token)


def set_via(via: str, detail: str = "") -> None:
    """As `acting`, for a door that cannot wrap what follows (an API authenticator): the
    request's own `acting` block restores what was there before when it ends."""
    if via not in VIAS:
        raise ValueError(f"unknown audit source {via!r}: one of {', '.join(VIAS)}")
    _via.set((via, detail[:200]))


def current_via() -> tuple[str, str]:
    return _via.get()


def jsonable(value: Any) -> Any:
    """`value` as JSON keeps it (datetimes, UUIDs and decimals as their text)."""
    return None if value is None else json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def record(action: str, *, actor=None, object_type: str, object_id: Any, before: Any = None, after: Any = None,
           via: tuple[str, str] | None = None):
    """Add one entry: `actor` (a user, or None for the product itself) did `action` (e.g.
    `workflow.save`) to the object `object_type` / `object_id`, which was `before` and is
    `after` (JSON, None where there was or is nothing)."""
    from core.models import AuditEntry

    source, detail = via or _via.get()
    user = actor if getattr(actor, "pk", None) else None
    return AuditEntry.objects.create(
        action=action, actor_id=user.pk if user else None, actor_name=getattr(user, "username", "") or "",
        via=source, via_detail=detail, object_type=object_type, object_id=str(object_id)[:200],
        before=jsonable(before), after=jsonable(after))
