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
import hashlib
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


LONGEST_VALUE = 2_000  # characters of JSON a value keeps in an entry; a longer one is summarised


def compact(value: Any) -> Any:
    """`value` as an entry keeps it: as JSON, unless its JSON is longer than LONGEST_VALUE,
    when it becomes what it was (`{"omitted": "a list of 40 items, 9,210 characters of JSON",
    "sha256": …}`), so that two such values still tell whether they differ."""
    value = jsonable(value)
    text = json.dumps(value, sort_keys=True)
    if len(text) <= LONGEST_VALUE:
        return value
    shape = f"a list of {len(value)} items" if isinstance(value, list) else \
        f"an object of {len(value)} keys" if isinstance(value, dict) else "a text"
    return {"omitted": f"{shape}, {len(text):,} characters of JSON", "sha256": hashlib.sha256(text.encode()).hexdigest()[:16]}


def changes(before: dict[str, Any] | None, after: dict[str, Any] | None, *,
            always: tuple[str, ...] = ()) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The keys of two snapshots of an object that differ, each side's values `compact`, and
    the keys in `always` (a version) whether or not they changed: what an entry keeps of a
    save. A side that is None (nothing before a create, nothing after a delete) stays None
    and the other keeps every key."""
    if before is None or after is None:
        return (None if before is None else {key: compact(value) for key, value in before.items()},
                None if after is None else {key: compact(value) for key, value in after.items()})
    before, after = jsonable(before), jsonable(after)
    keys = [key for key in dict.fromkeys([*before, *after]) if key in always or before.get(key) != after.get(key)]
    return ({key: compact(before[key]) for key in keys if key in before},
            {key: compact(after[key]) for key in keys if key in after})


def record(action: str, *, actor=None, object_type: str, object_id: Any, before: Any = None, after: Any = None,
           via: tuple[str, str] | None = None):
    """Add one entry: `actor` (a user, a username, or None for the product itself) did
    `action` (e.g. `workflow.save`) to the object `object_type` / `object_id`, which was
    `before` and is `after` (JSON, None where there was or is nothing).

    A username is how the import services know who acts (the name they write on a version);
    it is kept as given, with the user's id when such a user exists."""
    from django.contrib.auth import get_user_model

    from core.models import AuditEntry

    source, detail = via or _via.get()
    if isinstance(actor, str):
        actor_id = get_user_model().objects.filter(username=actor).values_list("pk", flat=True).first() if actor else None
        actor_name = actor
    else:
        user = actor if getattr(actor, "pk", None) else None
        actor_id, actor_name = (user.pk if user else None), getattr(user, "username", "") or ""
    return AuditEntry.objects.create(
        action=action, actor_id=actor_id, actor_name=actor_name[:150],
        via=source, via_detail=detail, object_type=object_type, object_id=str(object_id)[:200],
        before=jsonable(before), after=jsonable(after))
