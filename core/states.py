"""Explicit state machines for status fields, and the one place that changes a status.

Each model with a status declares its machine as `STATES`. Every change of the status
of an existing row goes through this module:

- `transition`: one conditional UPDATE ... WHERE pk=<pk> AND status IN (<from>), for a
  caller that knows which statuses the row may be in (a worker storing its result);
- `transition_all`: the same for every row of a queryset (an execution's pending runs);
- `claim_row`: `transition` for one row that also reads it back in the same statement
  (UPDATE ... RETURNING), for the hot path of taking a node run;
- `change_status`: for a row in hand that must move from the status it was read in.

Each asks the machine first, so an illegal move is an IllegalTransition naming the
machine, the from and the to rather than a silent overwrite; the WHERE on the status then
makes the move only if the row is still where the caller thinks, so two workers (or two
clicks) never both make it. Creating a row in its first status is not a change and is
left to the services. tests/core/test_states.py fails when a status is written elsewhere.
"""
from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from django.db import connection, models
from django.utils import timezone

from core.errors import IllegalTransition


class StateMachine:
    def __init__(self, name: str, transitions: dict[str, set[str]]):
        self.name = name
        self.transitions = transitions
        self.states = set(transitions) | {s for targets in transitions.values() for s in targets}

    def allows(self, current: str, new: str) -> bool:
        return new in self.transitions.get(current, set())

    def check(self, current: str, new: str) -> None:
        if new not in self.states:
            raise IllegalTransition(f"{self.name}: unknown status '{new}'")
        if not self.allows(current, new):
            allowed = ", ".join(sorted(self.transitions.get(current, set()))) or "none (final)"
            raise IllegalTransition(
                f"{self.name}: cannot go from '{current}' to '{new}' (allowed from '{current}': {allowed})"
            )


Rows = type[models.Model] | models.QuerySet | models.Manager


def transition(rows: Rows, pk: Any, from_statuses: str | Iterable[str], to_status: str, **fields: Any) -> int:
    """Move the row `pk` of `rows` (a model, or a queryset narrowing it, e.g. to one worker's
    claim) to `to_status` if it is in one of `from_statuses`, writing `fields` in the same
    UPDATE. Returns the rows touched: 0 when the row has moved on (or is not in `rows`);
    a caller that needs exactly one checks it."""
    return transition_all(_manager(rows).filter(pk=pk), from_statuses, to_status, **fields)


def transition_all(rows: Rows, from_statuses: str | Iterable[str], to_status: str, **fields: Any) -> int:
    """`transition` for every row of `rows` in one of `from_statuses`, in one UPDATE."""
    rows = _manager(rows)
    model = rows.model
    from_statuses = _checked(model, from_statuses, to_status)
    if "updated_at" in _field_names(model):
        fields.setdefault("updated_at", timezone.now())
    where = {"status": from_statuses[0]} if len(from_statuses) == 1 else {"status__in": from_statuses}
    return rows.filter(**where).update(status=to_status, **fields)


def claim_row(model: type[models.Model], pk: Any, from_status: str, to_status: str, **fields: Any) -> models.Model | None:
    """`transition` for one row that returns it as it is after the move, or None when it was
    not in `from_status`. Moving and reading the row are one round trip (UPDATE ... RETURNING,
    which PostgreSQL and SQLite 3.35+ have): taking a node run is on every node's path."""
    (from_status,) = _checked(model, from_status, to_status)
    if "updated_at" in _field_names(model):
        fields.setdefault("updated_at", timezone.now())
    quote = connection.ops.quote_name
    status = quote(model._meta.get_field("status").column)
    assignments, values = [f"{status} = %s"], [to_status]
    for name, value in fields.items():
        field = model._meta.get_field(name)
        assignments.append(f"{quote(field.column)} = %s")
        values.append(field.get_db_prep_save(value, connection))
    claimed = list(model._default_manager.raw(
        f"UPDATE {quote(model._meta.db_table)} SET {', '.join(assignments)} "
        f"WHERE {quote(model._meta.pk.column)} = %s AND {status} = %s RETURNING {_columns(model, connection.vendor)}",
        [*values, pk, from_status],
    ))
    return claimed[0] if claimed else None


def change_status(instance: models.Model, machine: StateMachine, new: str, **fields: Any) -> None:
    """Move `instance` from the status it was read in to `new`, claiming the row; extra
    `fields` are written in the same UPDATE. Someone else moved it first: CONFLICT."""
    current = instance.status
    machine.check(current, new)
    if "updated_at" in _field_names(type(instance)):
        fields.setdefault("updated_at", timezone.now())
    touched = type(instance)._default_manager.filter(pk=instance.pk, status=current).update(status=new, **fields)
    if touched != 1:
        raise IllegalTransition(
            f"{machine.name}: {instance} is no longer '{current}' (changed by someone else)",
            code="CONFLICT",
        )
    instance.status = new
    for name, value in fields.items():
        setattr(instance, name, value)


def _manager(rows: Rows) -> models.QuerySet | models.Manager:
    return rows._default_manager if isinstance(rows, type) else rows


def _checked(model: type[models.Model], from_statuses: str | Iterable[str], to_status: str) -> tuple[str, ...]:
    """The from statuses as a tuple, once the model's machine allows each of them → `to_status`."""
    from_statuses = (from_statuses,) if isinstance(from_statuses, str) else tuple(from_statuses)
    if not from_statuses:
        raise IllegalTransition(f"{model.STATES.name}: no status to go from to '{to_status}'")
    for current in from_statuses:
        model.STATES.check(current, to_status)
    return from_statuses


@lru_cache(maxsize=None)
def _field_names(model: type[models.Model]) -> frozenset[str]:
    return frozenset(field.name for field in model._meta.concrete_fields)


@lru_cache(maxsize=None)
def _columns(model: type[models.Model], vendor: str) -> str:
    """Every column of the model, quoted for the database (`vendor` keys the cache)."""
    return ", ".join(connection.ops.quote_name(field.column) for field in model._meta.concrete_fields)
