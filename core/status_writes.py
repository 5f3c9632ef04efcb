"""The one place that changes a status, and the one that locks a row: conditional UPDATEs,
their SQL built once per shape of statement (the fast path of a node run).

Each model with a status declares its machine as `STATES` (core/state_machine.py). Every
change of the status of an existing row goes through this module:

- `transition`: one conditional UPDATE ... WHERE pk=<pk> AND status IN (<from>), for a
  caller that knows which statuses the row may be in (a worker storing its result);
- `transition_all`: the same for every row of a queryset (an execution's pending runs);
- `claim_row`: `transition` for one row that also reads it back in the same statement
  (UPDATE ... RETURNING), for the hot path of taking a node run;
- `transition_under`: `transition` of one row under the lock of another, taken by writing
  to it (`touch_row`) while that one is in a status: a worker storing a node run's result
  under its execution's lock, and asking, in the same statement, whether the execution
  has any other node run still to end;
- `change_status`: for a row in hand that must move from the status it was read in.

And every lock of a row is `lock_row`, which takes it by writing to the row (never SELECT …
FOR UPDATE). A machine's guard (core.state_machine.Guard) is written here too: a move of a
node run into or out of the statuses still to end writes its execution's row first, in the
same statement, which is what transition_under's `others` relies on.

Each asks the machine first, so an illegal move is an IllegalTransition naming the
machine, the from and the to rather than a silent overwrite; the WHERE on the status then
makes the move only if the row is still where the caller thinks, so two workers (or two
clicks) never both make it. Creating a row in its first status is not a change and is
left to the services. tests/core/test_status_writes.py fails when a status is written, or a row
locked, elsewhere.
"""
from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Any, Literal, NamedTuple, TypeVar, overload

from django.db import connection, models, transaction
from django.db.transaction import TransactionManagementError
from django.utils import timezone

from core.errors import IllegalTransition
from core.rows import (
    attach,
    attnames,
    column,
    columns,
    cursor,
    db_values,
    from_row,
    join_sql,
    quoted_pk,
    read_values,
    related_path,
)
from core.state_machine import Guard, StateMachine

Rows = type[models.Model] | models.QuerySet | models.Manager
M = TypeVar("M", bound=models.Model)


def machine_of(model: type[models.Model]) -> StateMachine:
    """The state machine `model` declares as `STATES` (core.state_machine): a class attribute
    the model's type does not know of, read here once instead of at each use."""
    machine = getattr(model, "STATES", None)
    if not isinstance(machine, StateMachine):
        raise TypeError(f"{model.__name__} declares no state machine: its status cannot be changed here")
    return machine


def transition(rows: Rows, pk: Any, from_statuses: str | Iterable[str], to_status: str, /, *,
               where: dict[str, Any] | None = None, **fields: Any) -> int:
    """Move the row `pk` of `rows` (a model, or a queryset narrowing it) to `to_status` if it
    is in one of `from_statuses` and has the values of `where` (e.g. the claim that runs it),
    writing `fields` in the same UPDATE. Returns the rows touched: 0 when the row has moved
    on (or is not in `rows`); a caller that needs exactly one checks it.

    Given a model and plain values, the UPDATE's SQL is built once per set of fields: a
    worker stores every node's result this way, and building it with the ORM each time cost
    more than running it."""
    where = where or {}
    if not isinstance(rows, type) or any(hasattr(value, "resolve_expression") for value in fields.values()):
        return transition_all(_manager(rows).filter(pk=pk, **where), from_statuses, to_status, **fields)
    guard = _guard(rows, from_statuses, to_status)
    if guard is None:
        with cursor() as moving:
            moving.execute(*_moving(rows, pk, from_statuses, to_status, where, fields))
            return moving.rowcount
    # The guard's row first, then this one, in one statement (see _guarded_sql).
    moving, params = _moving(rows, pk, from_statuses, to_status, where, fields, "1", "EXISTS (SELECT 1 FROM guarded)")
    with cursor() as both:
        both.execute(f"WITH guarded AS ({_guarded_sql(rows, guard.key)}), moved AS ({moving}) "
                     "SELECT COUNT(*) FROM moved", [pk, *params])
        return both.fetchone()[0]


def transition_all(rows: Rows, from_statuses: str | Iterable[str], to_status: str, **fields: Any) -> int:
    """`transition` for every row of `rows` in one of `from_statuses`, in one UPDATE."""
    rows = _manager(rows)
    model = rows.model
    from_statuses = _checked(model, from_statuses, to_status)
    fields = _stamped(model, fields)
    where = {"status": from_statuses[0]} if len(from_statuses) == 1 else {"status__in": from_statuses}
    _write_guard(rows.filter(**where), _guard(model, from_statuses, to_status))
    return rows.filter(**where).update(status=to_status, **fields)


def claim_row(model: type[M], pk: Any, from_status: str, to_status: str, /, *,
              select_related: str = "", synchronous: bool = True, **fields: Any) -> M | None:
    """`transition` for one row that returns it as it is after the move, or None when it was
    not in `from_status`. Moving and reading the row are one round trip (UPDATE ... RETURNING,
    which PostgreSQL and SQLite 3.35+ have): taking a node run is on every node's path.

    `select_related` ("execution__workflow") reads the rows the claimed one points to as
    well, attached to it: in the same statement on PostgreSQL (the UPDATE in a WITH), in a
    second one on SQLite, which allows no UPDATE there.

    `synchronous=False`, for a claim that is its own transaction (no atomic block): on
    PostgreSQL it commits without waiting for its WAL to reach the disk (synchronous_commit
    off for that one transaction). Other transactions see it at once, as any commit; only a
    crash of PostgreSQL itself within a fraction of a second can undo it, and then as if it
    had never been made, with nothing committed after it kept (the next durable commit
    flushes it)."""
    (from_status,) = _checked(model, from_status, to_status)
    machine = machine_of(model)
    if machine.guarded((from_status,), to_status) is not None:  # a claim keeps a run still to end
        raise IllegalTransition(f"{machine.name}: a claim cannot move a row from '{from_status}' to "
                                f"'{to_status}', across its guard: use transition")
    fields = _stamped(model, fields)
    synchronous = synchronous or connection.in_atomic_block
    path, sql, then = _claim_sql(model, connection.vendor, ("status", *fields), select_related, synchronous)
    with cursor() as claiming:
        claiming.execute(sql, [*db_values(model, {"status": to_status, **fields}), pk, from_status])
        row = claiming.fetchone()
        if row is None:
            return None
        claimed, related = from_row(model, row), row[len(attnames(model)):]
        if then:
            claiming.execute(then, [row[attnames(model).index(path[0][0].attname)]])
            related = claiming.fetchone() or ()
    attach(claimed, path, related)
    return claimed


class Touch(NamedTuple):
    """What touch_row writes to a row that must be in `status` (see transition_under)."""

    model: type[models.Model]
    pk: Any
    status: str
    add: dict[str, Any] = {}
    returning: tuple[str, ...] = ()
    fields: dict[str, Any] = {}


def touch_row(model: type[models.Model], pk: Any, status: str, /, *, add: dict[str, Any] | None = None,
              returning: tuple[str, ...] = (), **fields: Any) -> tuple | None:
    """Write `fields` (and add the amounts of `add` to their columns) to the row `pk` while it
    is in `status`, leaving its status as it is; returns the values of `returning` after the
    write, or None when the row is not in `status`. The UPDATE holds the row's lock until
    the transaction ends: a lock that also writes and reads, in one statement."""
    with cursor() as touching:
        touching.execute(*_touching(Touch(model, pk, status, add or {}, returning, fields)))
        row = touching.fetchone()
    return None if row is None else read_values(model, returning, row)


_PK = object()


@overload
def lock_row(model: type[M], pk: Any = ..., /, *, missing_ok: Literal[False] = ..., written: bool = ...,
             **where: Any) -> M: ...
@overload
def lock_row(model: type[M], pk: Any = ..., /, *, missing_ok: bool, written: bool = ..., **where: Any) -> M | None: ...
def lock_row(model: type[M], pk: Any = _PK, /, *, missing_ok: bool = False, written: bool = True,
             **where: Any) -> M | None:
    """The row `pk` (or the one row whose columns have the values of `where`) read under its
    lock, held until the transaction ends; DoesNotExist when there is no such row, or None
    with `missing_ok`. Every lock of a row in the project is taken here.

    The lock is taken by writing to the row, an UPDATE that changes no value (`SET pk = pk`,
    RETURNING the row), rather than by SELECT … FOR UPDATE: the write makes a new version of
    the row, which is how transition_under's `others` tells that another transaction changed
    what it asks about while it waited; a bare FOR UPDATE leaves no trace once it commits.
    `written=False` takes it that way all the same (SELECT … FOR UPDATE; on SQLite, whose
    writer locks the whole database, a read), for a lock that changes nothing such a
    question counts and must not send it the long way round: a model call's budget."""
    if pk is not _PK:
        where = {model._meta.pk.name: pk, **where}
    row = _locked(model, where, written, None, missing_ok=missing_ok)
    return None if row is None else from_row(model, row)


class Under(NamedTuple):
    """What transition_under did: what the touch returned (None: its row was not in its
    status, or had been written since the statement began, and nothing was done), the rows
    moved, and (asked with `others`) whether other rows were in those statuses."""

    touched: tuple | None
    moved: int
    others: bool | None = None


def transition_under(touch: Touch, model: type[models.Model], pk: Any, from_statuses: str | Iterable[str],
                     to_status: str, /, *, where: dict[str, Any] | None = None,
                     others: tuple[str, tuple[str, ...]] | None = None, **fields: Any) -> Under:
    """`touch_row(touch)`, then, only if it found its row in its status, `transition(model,
    pk, …)`. On PostgreSQL one statement, the transition's UPDATE waiting for the touch's
    (its WHERE reads the touch's result), so the touched row is locked first, as it would
    be in two; elsewhere two statements in one transaction.

    `others`, `(key, statuses)`: also whether any other row of `model` whose foreign key
    `key` points to the touched row is in one of `statuses`, as of when the touched row was
    locked. A statement sees the database as it was when it began, and the lock may have
    been waited for; so on PostgreSQL the touch then holds only if the touched row is still
    the version the statement began with (its `xmin`): had another transaction written it
    in between, nothing is done (touched None) and the caller asks again in a transaction
    of its own. That answer holds only if every transaction that changes the statuses of
    those rows writes the touched row: a touch, or `lock_row`; the moves of a machine with a
    guard (core.state_machine.Guard) write it here whoever makes them.

    A worker stores a node's result this way: the execution's row locked, the node run
    moved and, after a node that nothing follows, whether the run has any other node run
    still to end, in one round trip."""
    machine = machine_of(model)
    guard = machine.guarded(_checked(model, from_statuses, to_status), to_status)
    if guard is not None and model._meta.get_field(guard.key).related_model is not touch.model:
        raise IllegalTransition(f"{machine.name}: a move from {from_statuses!r} to '{to_status}' writes the "
                                f"row its '{guard.key}' points to, not a {touch.model._meta.object_name}")
    if connection.vendor != "postgresql":
        with transaction.atomic(savepoint=False):
            touched = touch_row(touch.model, touch.pk, touch.status, add=touch.add, returning=touch.returning,
                                **touch.fields)
            if touched is None:
                return Under(None, 0)
            moved = transition(model, pk, from_statuses, to_status, where=where, **fields)
            if others is None:
                return Under(touched, moved)
            key, statuses = others
            return Under(touched, moved, model._default_manager.filter(
                **{key: touch.pk, "status__in": statuses}).exclude(pk=pk).exists())
    touching, touch_params = _touching(touch, unchanged=others is not None)
    moving, move_params = _moving(model, pk, from_statuses, to_status, where or {}, fields, "1",
                                  "EXISTS (SELECT 1 FROM touched)")
    asked, asked_params = "", []
    if others is not None:
        key, statuses = others
        asked, asked_params = f", {_others_sql(model, key, len(statuses))}", [touch.pk, *statuses, pk]
    returned = "".join(f", touched.{column(touch.model, name)}" for name in touch.returning)
    with cursor() as both:
        both.execute(f"WITH touched AS ({touching}), moved AS ({moving}) "
                     f"SELECT (SELECT COUNT(*) FROM moved){asked}{returned} FROM touched",
                     [*touch_params, *move_params, *asked_params])
        row = both.fetchone()
    if row is None:
        return Under(None, 0)
    if others is None:
        return Under(read_values(touch.model, touch.returning, row[1:]), row[0])
    return Under(read_values(touch.model, touch.returning, row[2:]), row[0], row[1])


def _moving(model: type[models.Model], pk: Any, from_statuses: str | Iterable[str], to_status: str,
            where: dict[str, Any], fields: dict[str, Any], returning: str = "",
            condition: str = "") -> tuple[str, list]:
    """The UPDATE of a transition (see _update_sql) and its parameters."""
    from_statuses = _checked(model, from_statuses, to_status)
    fields = _stamped(model, fields)
    sql = _update_sql(model, connection.vendor, ("status", *fields), (), len(from_statuses), tuple(where), returning,
                      condition)
    return sql, [*db_values(model, {"status": to_status, **fields}), pk, *from_statuses, *db_values(model, where)]


def _touching(touch: Touch, unchanged: bool = False) -> tuple[str, list]:
    """The UPDATE of a touch (see _update_sql) and its parameters; `unchanged` (PostgreSQL):
    only if the row is the version the statement began with (see transition_under)."""
    model, fields = touch.model, _stamped(touch.model, touch.fields)
    returning = ", ".join(column(model, name) for name in touch.returning) or quoted_pk(model)
    table = connection.ops.quote_name(model._meta.db_table)
    condition = f"xmin = (SELECT xmin FROM {table} WHERE {quoted_pk(model)} = %s)" if unchanged else ""
    sql = _update_sql(model, connection.vendor, tuple(fields), tuple(touch.add), 1, (), returning, condition)
    return sql, [*db_values(model, fields), *db_values(model, touch.add), touch.pk, touch.status,
                 *([touch.pk] if unchanged else [])]


def change_status(instance: models.Model, machine: StateMachine, new: str, **fields: Any) -> None:
    """Move `instance` from the status it was read in to `new`, claiming the row; extra
    `fields` are written in the same UPDATE. Someone else moved it first: CONFLICT."""
    current = instance.status  # type: ignore[attr-defined]  # a model with a state machine has a status
    machine.check(current, new)
    _write_guard(type(instance)._default_manager.filter(pk=instance.pk), machine.guarded((current,), new))
    if "updated_at" in _field_names(type(instance)):
        fields.setdefault("updated_at", timezone.now())
    touched = type(instance)._default_manager.filter(pk=instance.pk, status=current).update(status=new, **fields)
    if touched != 1:
        raise IllegalTransition(
            f"{machine.name}: {instance} is no longer '{current}' (changed by someone else)",
            code="CONFLICT",
        )
    instance.status = new  # type: ignore[attr-defined]
    for name, value in fields.items():
        setattr(instance, name, value)


def _manager(rows: Rows) -> models.QuerySet | models.Manager:
    return rows._default_manager if isinstance(rows, type) else rows


def _checked(model: type[models.Model], from_statuses: str | Iterable[str], to_status: str) -> tuple[str, ...]:
    """The from statuses as a tuple, once the model's machine allows each of them → `to_status`."""
    from_statuses = (from_statuses,) if isinstance(from_statuses, str) else tuple(from_statuses)
    machine = machine_of(model)
    if not from_statuses:
        raise IllegalTransition(f"{machine.name}: no status to go from to '{to_status}'")
    for current in from_statuses:
        machine.check(current, to_status)
    return from_statuses


def _stamped(model: type[models.Model], fields: dict[str, Any]) -> dict[str, Any]:
    """`fields`, with `updated_at` now on models that have one and were not given it."""
    if "updated_at" in _field_names(model) and "updated_at" not in fields:
        return {**fields, "updated_at": timezone.now()}
    return fields


@cache
def _update_sql(model: type[models.Model], vendor: str, assigned: tuple[str, ...], added: tuple[str, ...],
                statuses: int, where: tuple[str, ...], returning: str, condition: str = "") -> str:
    """UPDATE of one row by primary key while its status is one of `statuses` values (and
    its `where` columns have theirs, and `condition` holds), setting `assigned` and adding to
    `added`; parameters in that order. Built once per shape (`vendor` keys the cache)."""
    sets = [f"{column(model, name)} = %s" for name in assigned]
    sets += [f"{column(model, name)} = {column(model, name)} + %s" for name in added]
    in_status = "= %s" if statuses == 1 else f"IN ({', '.join(['%s'] * statuses)})"
    conditions = [f"{quoted_pk(model)} = %s", f"{column(model, 'status')} {in_status}",
                  *(f"{column(model, name)} = %s" for name in where), *filter(None, [condition])]
    table = connection.ops.quote_name(model._meta.db_table)
    sql = f"UPDATE {table} SET {', '.join(sets)} WHERE {' AND '.join(conditions)}"
    return f"{sql} RETURNING {returning}" if returning else sql


@cache
def _others_sql(model: type[models.Model], key: str, statuses: int) -> str:
    """Whether a row of `model` other than one (the last parameter) points by `key` to a row
    (the first) with a status among `statuses` parameters (PostgreSQL's SQL, used there only)."""
    table = connection.ops.quote_name(model._meta.db_table)
    in_status = ", ".join(["%s"] * statuses)
    return (f"EXISTS (SELECT 1 FROM {table} WHERE {column(model, key)} = %s AND {column(model, 'status')} "
            f"IN ({in_status}) AND {quoted_pk(model)} <> %s)")


def lock_values(model: type[models.Model], pk: Any, names: tuple[str, ...], /, *, written: bool = True) -> tuple:
    """The values of the fields `names` of the row `pk`, read under its lock, taken as lock_row
    takes it: for a holder that needs a few columns, not the whole row (a run's `state`,
    `input` and `calls` can be large). DoesNotExist when there is no such row."""
    row = _locked(model, {model._meta.pk.name: pk}, written, names)
    assert row is not None, "a missing row raises DoesNotExist"
    return read_values(model, names, row)


def lock_rows(model: type[models.Model], pks: Iterable[Any], /) -> list[Any]:
    """Lock the rows `pks` until the transaction ends, in key order (so two holders never
    wait on each other), as lock_row does with `written=False` (SELECT … FOR UPDATE; on
    SQLite, whose writer locks the whole database, a read): the keys of those that exist."""
    if connection.get_autocommit():
        raise TransactionManagementError("rows cannot be locked outside of a transaction.")
    keys = sorted(pks)
    if not keys:
        return []
    rows = model._base_manager.filter(pk__in=keys).order_by("pk")
    if connection.features.has_select_for_update:
        rows = rows.select_for_update()
    return list(rows.values_list("pk", flat=True))


def _locked(model: type[models.Model], where: dict[str, Any], written: bool,
            returning: tuple[str, ...] | None, *, missing_ok: bool = False) -> tuple | None:
    """The row whose columns have the values of `where`, locked (see lock_row): the columns of
    `returning`, or every column (None). No such row: DoesNotExist, or None with `missing_ok`."""
    if connection.get_autocommit():  # as select_for_update: a lock outside a transaction would hold nothing
        raise TransactionManagementError("a row cannot be locked outside of a transaction.")
    if not where:
        raise TypeError("lock_row: name the row to lock, by its primary key or its columns' values")
    with cursor() as locking:
        locking.execute(_lock_sql(model, connection.vendor, tuple(where), written, returning), db_values(model, where))
        row: tuple | None = locking.fetchone()
    if row is None and not missing_ok:
        named = ", ".join(f"{name}={value!r}" for name, value in where.items())
        raise model.DoesNotExist(  # type: ignore[attr-defined]  # every concrete model has one
            f"{model._meta.object_name} matching {named} does not exist.")
    return row


@cache
def _lock_sql(model: type[models.Model], vendor: str, where: tuple[str, ...], written: bool = True,
              returning: tuple[str, ...] | None = None) -> str:
    """UPDATE of the row whose `where` columns have the values given that changes nothing,
    returning the row (the columns of `returning`, or all); not `written`, SELECT … FOR
    UPDATE of it (a plain SELECT on SQLite)."""
    table, pk = connection.ops.quote_name(model._meta.db_table), quoted_pk(model)
    conditions = " AND ".join(f"{column(model, name)} = %s" for name in where)
    read = columns(model, vendor) if returning is None else ", ".join(column(model, name) for name in returning)
    if not written:
        locking = " FOR UPDATE" if connection.features.has_select_for_update else ""
        return f"SELECT {read} FROM {table} WHERE {conditions}{locking}"
    return f"UPDATE {table} SET {pk} = {pk} WHERE {conditions} RETURNING {read}"


def _guard(rows: Rows, from_statuses: str | Iterable[str], to_status: str) -> Guard | None:
    """The guard a move of `rows` writes, on PostgreSQL (see Guard). SQLite lets one
    transaction write at a time, whatever the row: one that asks under a lock it took by
    writing sees every change committed before, and none can be committed after."""
    if connection.vendor != "postgresql":
        return None
    model = rows if isinstance(rows, type) else rows.model
    return machine_of(model).guarded(_checked(model, from_statuses, to_status), to_status)


def _write_guard(moving: models.QuerySet, guard: Guard | None) -> None:
    """Write the rows the guard points to from the rows about to move (before them, as
    every lock of the two is taken); `guard` None: nothing to write."""
    if guard is None:
        return
    parent = _guarded_model(moving.model, guard.key)
    pk = parent._meta.pk.name
    parent._default_manager.filter(pk__in=moving.values(guard.key)).update(**{pk: models.F(pk)})


def _guarded_model(model: type[models.Model], key: str) -> type[models.Model]:
    """The model a guard's foreign key `key` points to."""
    parent = model._meta.get_field(key).related_model
    if not isinstance(parent, type):
        raise TypeError(f"{model.__name__}.{key}, the key of a state machine's guard, is not a foreign key")
    return parent


@cache
def _guarded_sql(model: type[models.Model], key: str) -> str:
    """UPDATE that changes nothing of the row that row `pk` (the parameter) points to by `key`."""
    parent = _guarded_model(model, key)
    table, pk = connection.ops.quote_name(parent._meta.db_table), quoted_pk(parent)
    return (f"UPDATE {table} SET {pk} = {pk} WHERE {pk} = (SELECT {column(model, key)} FROM "
            f"{connection.ops.quote_name(model._meta.db_table)} WHERE {quoted_pk(model)} = %s) RETURNING 1")


@cache
def _claim_sql(model: type[models.Model], vendor: str, assigned: tuple[str, ...], select_related: str,
               synchronous: bool):
    """The path of `select_related`, the claim's statement and the one that reads the related
    rows after it (None when the claim's statement reads them too)."""
    path = tuple(related_path(model, select_related))
    sql = _update_sql(model, vendor, assigned, (), 1, (), columns(model, vendor))
    if vendor != "postgresql":
        return path, sql, f"{join_sql(path)} WHERE r0.{quoted_pk(path[0][1])} = %s" if path else None
    # set_config(…, true) lasts to the end of the statement's transaction, past its commit.
    asynchronous = "" if synchronous else ", set_config('synchronous_commit', 'off', true)"
    return path, f"WITH moved AS ({sql}) {join_sql(path, 'moved', model, asynchronous)}", None


@cache
def _field_names(model: type[models.Model]) -> frozenset[str]:
    return frozenset(field.name for field in model._meta.concrete_fields)
