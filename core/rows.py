"""Rows written and read with SQL built once per shape of statement, for the statements on
every node's path: building them with the ORM each time cost more than running them.
What they read is converted as the ORM converts it (JSON decoded, datetimes made aware),
into model instances as a queryset makes them.

On PostgreSQL these statements go through `cursor()`, which binds parameters on the server
and prepares each statement once per connection, so that PostgreSQL parses and plans it
once instead of on every node: a fifth of a node's time on a 2-core machine. The rest of
the project keeps Django's client-side binding, under which any query Django builds works."""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache, lru_cache
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections, models

M = TypeVar("M", bound=models.Model)


@contextmanager
def cursor():
    """A cursor on the default database whose parameters PostgreSQL binds, preparing each
    statement the second time a connection runs it (settings: `prepare_threshold`; Django's
    own cursors bind on the client and never prepare); elsewhere Django's own. Wrapped as
    Django wraps its cursors: errors translated, queries logged when Django logs them."""
    db = _database()
    if db.vendor != "postgresql":
        with db.cursor() as plain:
            yield plain
        return
    from django.db.backends.postgresql.base import ServerBindingCursor

    db.ensure_connection()
    db.validate_thread_sharing()
    with db.wrap_database_errors:
        raw = ServerBindingCursor(db.connection)
    wrapped = db.make_debug_cursor(raw) if db.queries_logged else db.make_cursor(raw)
    with wrapped:
        yield wrapped


def insert_rows(objs: Iterable[M]) -> list[M]:
    """INSERT new instances of one model, setting their primary keys (RETURNING); as
    bulk_create does, with no signals sent. Several on PostgreSQL in one statement whatever
    their number, each column's values in one array (INSERT … SELECT FROM UNNEST, as Django's
    own bulk_create does), so the statement is the same for any number of rows; elsewhere as
    many rows to a statement as the database takes parameters."""
    objs = list(objs)
    if not objs:
        return objs
    model, db = type(objs[0]), _database()
    fields = _inserted_fields(model)
    unnest = db.vendor == "postgresql" and len(objs) > 1  # for one row, VALUES is quicker
    batch = len(objs) if unnest else max(db.ops.bulk_batch_size(fields, objs), 1)
    for start in range(0, len(objs), batch):
        chunk = objs[start:start + batch]
        rows = [[field.get_db_prep_save(field.pre_save(obj, True), db) for field in fields] for obj in chunk]
        with cursor() as inserting:
            if unnest:
                inserting.execute(_insert_sql(model, db.vendor, 0), [list(values) for values in zip(*rows, strict=True)])
            else:
                inserting.execute(_insert_sql(model, db.vendor, len(chunk)), [v for row in rows for v in row])
            keys = [row[0] for row in inserting.fetchall()]
        for obj, key in zip(chunk, keys, strict=True):
            obj.pk = key
            obj._state.adding, obj._state.db = False, db.alias
    return objs


def copy_rows(model: type[models.Model], keys: list[int], *, copied: Iterable[str],
              sql: dict[str, tuple[str, list]] | None = None, values: dict[str, Any] | None = None) -> int:
    """Copies of the rows of `model` whose primary keys are `keys`, made by the database in
    one INSERT … SELECT (the rows never come to Python), inserted in the order of `keys`.
    Each field of a copy is an SQL expression (`sql`: its text and parameters) over the row,
    `r`, and its position in `keys`, `k.position` (from 1); else the row's own (`copied`);
    else a value (`values`); else its default. Returns how many rows were copied."""
    if not keys:
        return 0
    db, quote = _database(), connection.ops.quote_name
    copied, sql, values = set(copied), sql or {}, values or {}
    columns, expressions, params = [], [], []
    for field in _inserted_fields(model):
        columns.append(quote(field.column))
        if field.name in sql:
            text, given = sql[field.name]
            expressions.append(text)
            params.extend(given)
        elif field.name in copied:
            expressions.append(f"r.{quote(field.column)}")
        else:
            expressions.append("%s")
            params.append(field.get_db_prep_save(values[field.name] if field.name in values else field.get_default(),
                                                 db))
    if db.vendor == "postgresql":
        positions, key = "UNNEST(%s::bigint[]) WITH ORDINALITY AS k(id, position)", "k.id"
        params.append(list(keys))
    else:  # SQLite: the keys as one JSON array, whose items json_each numbers from 0
        positions, key = "(SELECT value AS id, key + 1 AS position FROM json_each(%s)) AS k", "k.id"
        params.append(json.dumps(list(keys)))
    # The keys drive the join (CROSS JOIN keeps them the outer loop on SQLite): each row is
    # found by its primary key, whatever the size of the table.
    statement = (f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(columns)}) "
                 f"SELECT {', '.join(expressions)} FROM {positions} CROSS JOIN {quote(model._meta.db_table)} r "
                 f"WHERE r.{quoted_pk(model)} = {key} ORDER BY k.position")
    with db.cursor() as copying:
        copying.execute(statement, params)
        return copying.rowcount


@cache
def _inserted_fields(model: type[models.Model]) -> tuple:
    return tuple(field for field in model._meta.concrete_fields
                 if not field.generated and field is not model._meta.auto_field)


@lru_cache(maxsize=64)
def _insert_sql(model: type[models.Model], vendor: str, count: int) -> str:
    """The INSERT of `count` rows (0: of arrays, one per column, that UNNEST makes rows of).
    The arrays' types leave out their lengths, so that no value is cut to fit."""
    quote = connection.ops.quote_name
    fields = _inserted_fields(model)
    head = f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(quote(f.column) for f in fields)})"
    if not count:
        arrays = ", ".join(f"%s::{field.db_type(connection).split('(')[0]}[]" for field in fields)
        return f"{head} SELECT * FROM UNNEST({arrays}) RETURNING {quoted_pk(model)}"
    row = f"({', '.join(['%s'] * len(fields))})"
    return f"{head} VALUES {', '.join([row] * count)} RETURNING {quoted_pk(model)}"


def db_values(model: type[models.Model], values: dict[str, Any]) -> list:
    """`values` as the database stores them (JSON adapted, datetimes made aware, …)."""
    db = _database()
    return [column_field(model, name).get_db_prep_save(value, db) for name, value in values.items()]


def column_field(model: type[models.Model], name: str) -> models.Field[Any, Any]:
    """The field of `model` named `name` that has a column (a reverse relation has none)."""
    field = model._meta.get_field(name)
    if not isinstance(field, models.Field) or field.column is None:
        raise TypeError(f"{model._meta.label}.{name} has no column")
    return field


def related_path(model: type[models.Model], select_related: str) -> Iterator[tuple[Any, type[models.Model]]]:
    """The foreign key followed at each step of `select_related`, with the model it leads to."""
    for name in filter(None, select_related.split("__")):
        field = column_field(model, name)
        related = field.related_model
        if not isinstance(related, type):  # None, or "self" not yet resolved
            raise TypeError(f"{model._meta.label}.{name} is not a foreign key")
        yield field, related
        model = related


def join_sql(path: tuple, source: str = "", source_model: type[models.Model] | None = None, also: str = "") -> str:
    """SELECT of the rows along `path`, aliased r0, r1, …, each LEFT JOINed to the one
    before: after the columns of `source` (rows of `source_model`), joined to it, when there
    is one; else from r0; then `also` (", more, columns"). Columns are named, never `*`: a
    prepared statement must not change shape."""
    quote = connection.ops.quote_name
    columns = [", ".join(f"{source}.{quote(_column(f))}" for f in source_model._meta.concrete_fields)
               ] if source and source_model is not None else []
    tables = []
    for index, (key, related) in enumerate(path):
        alias = f"r{index}"
        columns.append(", ".join(f"{alias}.{quote(_column(f))}" for f in related._meta.concrete_fields))
        table = f"{quote(related._meta.db_table)} {alias}"
        before = f"r{index - 1}" if index else source
        tables.append(f"LEFT JOIN {table} ON {alias}.{quoted_pk(related)} = {before}.{quote(_column(key))}"
                      if before else table)
    return f"SELECT {', '.join(columns)}{also} FROM {' '.join([source, *tables] if source else tables)}"


def attach(instance: models.Model, path: tuple, values: tuple) -> None:
    """Attach the rows of `path` read as `values` (one after another) to `instance`, as
    select_related would; a step whose row is missing (NULL) ends the chain."""
    for key, related in path:
        count = len(attnames(related))
        row, values = values[:count], values[count:]
        if not row or row[attnames(related).index(related._meta.pk.attname)] is None:
            return
        child = from_row(related, row)
        setattr(instance, key.name, child)
        instance = child


def from_row(model: type[M], row: tuple) -> M:
    """A model instance from the first columns of `row`, converted as the ORM would."""
    db = _database()
    # Not strict: a claim's row goes on with the columns of the rows it joined (core.status_writes).
    return model.from_db(db.alias, attnames(model),
                         [_read(value, reader, db) for value, reader in zip(row, _readers(model, db.vendor), strict=False)])


def read_values(model: type[models.Model], names: tuple[str, ...], row: tuple) -> tuple:
    """The columns of the fields `names` read as `row`, converted as the ORM would."""
    db = _database()
    readers = dict(zip(attnames(model), _readers(model, db.vendor), strict=True))
    # Not strict: with no `names` the UPDATE still returns the primary key (see core.status_writes).
    return tuple(_read(value, readers[column_field(model, name).attname], db)
                 for value, name in zip(row, names, strict=False))


def _read(value: Any, reader: tuple, db) -> Any:
    expression, converters = reader
    for converter in converters:
        value = converter(value, expression, db)
    return value


def _database():
    """The default database's connection itself, for the loops over a row's or a layer's
    values: `django.db.connection` looks the connection up again on every attribute read,
    a cost as large as the conversion in a layer of thousands of rows."""
    return connections[DEFAULT_DB_ALIAS]


@cache
def _readers(model: type[models.Model], vendor: str) -> list[tuple]:
    """Each concrete field's column expression with the converters that read it."""
    found = []
    for field in model._meta.concrete_fields:
        expression = field.get_col(model._meta.db_table)
        converters = connection.ops.get_db_converters(expression) + expression.get_db_converters(connection)
        found.append((expression, converters))
    return found


@cache
def attnames(model: type[models.Model]) -> list[str]:
    return [field.attname for field in model._meta.concrete_fields]


def column(model: type[models.Model], name: str) -> str:
    return connection.ops.quote_name(_column(column_field(model, name)))


def quoted_pk(model: type[models.Model]) -> str:
    return connection.ops.quote_name(_column(model._meta.pk))


@cache
def columns(model: type[models.Model], vendor: str) -> str:
    """Every column of the model, quoted for the database (`vendor` keys the cache)."""
    return ", ".join(connection.ops.quote_name(_column(field)) for field in model._meta.concrete_fields)


def _column(field: Any) -> str:
    """A concrete field's column name (Django types it as optional: a field may have none)."""
    name: str | None = field.column
    if name is None:
        raise TypeError(f"{field} has no column")
    return name
