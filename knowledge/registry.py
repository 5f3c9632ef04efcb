"""The tables a `db_query` data reference may read (data-transfer-protocol §2.4).

Each table name maps to a queryset factory and its PUBLIC fields: the names a reference
may use in `conditions`, `select` and `order_by`, each mapped to an ORM lookup path.
Nothing else of the database is reachable: an unknown table or field is refused with
REF_PERMISSION_DENIED before any query is built.

`run_db_query` builds every query through the ORM (filters, `exclude`, `values`,
`order_by`, slicing), so the values of a reference are only ever bound parameters:
a value that looks like SQL is compared as text and matches what it matches.

Conditions are AND-ed and follow plain Python semantics:

- `eq`/`ne`/`in` compare values of the field's kind; a value of another kind (a number
  for a text field, a string for a number field, a bool for a number field…) equals
  nothing, so `eq`/`in` match no row and `ne` matches every row. A row whose field is
  NULL (None) is "not equal" to every non-null value, and `eq`/`in` with None match NULLs.
- `gt`/`gte`/`lt`/`lte` take a number or a string; they never match NULL, nor a value
  of another kind. Text compares by code point (as Python does, whatever the database
  collation); datetime fields take ISO 8601 strings.
- `contains` is a case-sensitive substring test on text fields (also on SQLite, whose
  LIKE ignores case).

Results are sorted by `order_by` (NULLs last in both directions) with the primary key as
the tie-breaker, limited by `limit` (default 100, at most 1000: a larger limit that leaves
rows out answers `CappedRows`, naming how many), and returned as JSON values keyed by
public field name (datetimes as ISO 8601 strings in UTC).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from django.db import OperationalError, connections, models, transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Collate, StrIndex

from core.jsonutil import iso
from engine.context import errors
from engine.context.errors import RefError
from engine.context.resolution import CappedRows

OPERATORS = ("eq", "ne", "in", "gt", "gte", "lt", "lte", "contains")
COMPARISONS = {"gt": "gt", "gte": "gte", "lt": "lt", "lte": "lte"}
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
DIRECTIONS = ("asc", "desc")
# PostgreSQL's SQLSTATE for "canceling statement due to statement timeout".
QUERY_CANCELED = "57014"
# The collation that orders text by code point, per database vendor (SQLite's default
# BINARY already does).
CODE_POINT_COLLATIONS = {"postgresql": "C"}

# Kinds of public field, derived from the model field a path ends at.
TEXT, INTEGER, NUMBER, BOOLEAN, DATETIME, JSON = "text", "integer", "number", "boolean", "datetime", "json"


@dataclass(frozen=True)
class Table:
    """One queryable table: where its rows come from and which fields it shows."""

    name: str
    queryset: Callable[[], models.QuerySet]
    fields: dict[str, str]  # public field name → ORM lookup path
    description: str = ""
    _columns: dict[str, tuple[str, models.Field]] = field(default_factory=dict, compare=False, repr=False)

    def column(self, public: str) -> tuple[str, models.Field]:
        """The kind of a public field and the model field its path ends at."""
        if public not in self._columns:
            target = target_field(self.queryset().model, self.fields[public])
            self._columns[public] = (field_kind(target), target)
        return self._columns[public]

    def kind(self, public: str) -> str:
        return self.column(public)[0]


_TABLES: dict[str, Table] = {}


def register(name: str, queryset: Callable[[], models.QuerySet], fields: dict[str, str], description: str = "") -> Table:
    """Make a table queryable under `name`; its fields are checked against the model now."""
    table = Table(name, queryset, dict(fields), description)
    for public in table.fields:
        table.kind(public)  # an unknown path fails here, at registration, not in a query
    _TABLES[name] = table
    return table


def tables() -> dict[str, Table]:
    """The registered tables by name."""
    return dict(_TABLES)


def get_table(name: Any) -> Table:
    if not isinstance(name, str) or not name:
        raise RefError(errors.REF_FORMAT_ERROR, "a db_query reference needs a `table` (a string)")
    try:
        return _TABLES[name]
    except KeyError:
        raise RefError(
            errors.REF_PERMISSION_DENIED,
            f"table {name!r} is not queryable; allowed tables: {', '.join(sorted(_TABLES))}",
        ) from None


def target_field(model: type[models.Model], path: str) -> models.Field:
    """The model field an ORM lookup path (`paper__paper_id`) ends at."""
    parts = path.split("__")
    for part in parts[:-1]:
        related = model._meta.get_field(part).related_model
        if not isinstance(related, type):
            raise ValueError(f"{model._meta.label}.{part} is not a relation")
        model = related
    target = model._meta.get_field(parts[-1])
    if target.is_relation:
        target = target.target_field  # type: ignore[union-attr]  # a relation's: its foreign key's target
    if not isinstance(target, models.Field):
        raise ValueError(f"{path} does not end at a field")
    return target


def field_kind(target: models.Field) -> str:
    if isinstance(target, models.BooleanField):
        return BOOLEAN
    if isinstance(target, (models.CharField, models.TextField)):
        return TEXT
    if isinstance(target, (models.IntegerField, models.AutoField, models.BigAutoField)):
        return INTEGER
    if isinstance(target, (models.FloatField, models.DecimalField)):
        return NUMBER
    if isinstance(target, models.DateTimeField):
        return DATETIME
    if isinstance(target, models.JSONField):
        return JSON
    raise ValueError(f"{target.model.__name__}.{target.name}: a {type(target).__name__} cannot be a public field")


# -- the query ---------------------------------------------------------------------------


def run_db_query(reference: dict, *, timeout_ms: int | None = None) -> list[dict] | CappedRows:
    """The rows a `db_query` reference selects, as JSON-ready dicts keyed by public field.

    A `limit` above MAX_LIMIT is cut to it; when that leaves rows out, the answer is a
    `CappedRows` saying how many, so the cut is on the record rather than silent.

    Raises RefError: REF_PERMISSION_DENIED for a table or field that is not public,
    REF_FILTER_ERROR for a bad condition, REF_FORMAT_ERROR for a malformed reference,
    REF_TIMEOUT when the database cancels the query after `timeout_ms` (PostgreSQL only).
    """
    if not isinstance(reference, dict):
        raise RefError(errors.REF_FORMAT_ERROR, "a db_query reference is a JSON object")
    if timeout_ms is not None and (isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 1):
        raise ValueError(f"timeout_ms must be a positive integer, not {timeout_ms!r}")
    table = get_table(reference.get("table"))
    selected = _selected_fields(table, reference.get("select"))
    ordering = _ordering(table, reference.get("order_by"))
    requested = _limit(reference.get("limit"))
    limit = min(requested, MAX_LIMIT)

    queryset = table.queryset()
    vendor = connections[queryset.db].vendor
    queryset = _apply_conditions(table, queryset, reference.get("conditions"), vendor)
    queryset = _apply_ordering(table, queryset, ordering, vendor)
    paths = list(dict.fromkeys(table.fields[name] for name in selected))

    found = _fetch(lambda: list(queryset.values(*paths)[:limit]), queryset.db, timeout_ms, reference["table"])
    rows = [{name: _jsonable(row[table.fields[name]]) for name in selected} for row in found]
    if requested > limit and len(rows) == limit:
        left_out = _fetch(queryset.count, queryset.db, timeout_ms, reference["table"]) - limit
        if left_out > 0:
            return CappedRows(rows, requested=requested, cap=limit, left_out=left_out)
    return rows


def _fetch(run: Callable[[], Any], alias: str, timeout_ms: int | None, table_name: str) -> Any:
    """`run()` (a query) on the database `alias`, cancelled after `timeout_ms` on PostgreSQL."""
    connection = connections[alias]
    if timeout_ms is None or connection.vendor != "postgresql":
        # SQLite has no statement timeout that a query could set for itself, so there
        # `timeout_ms` is ignored (its queries here are bounded by `limit` anyway).
        return run()
    try:
        with transaction.atomic(using=alias):
            with connection.cursor() as cursor:
                cursor.execute("SHOW statement_timeout")
                previous = cursor.fetchone()[0]
                # An int formatted here, never text from the reference.
                cursor.execute(f"SET LOCAL statement_timeout = {int(timeout_ms):d}")
            result = run()
            with connection.cursor() as cursor:
                # Inside an outer transaction (a savepoint here) SET LOCAL would outlive
                # this query; put the previous value back.
                cursor.execute("SELECT set_config('statement_timeout', %s, true)", [previous])
            return result
    except OperationalError as error:  # psycopg's QueryCanceled, as Django wraps it
        cause = error.__cause__
        if QUERY_CANCELED in (getattr(cause, "sqlstate", None), getattr(cause, "pgcode", None)):
            raise RefError(
                errors.REF_TIMEOUT, f"the query on {table_name!r} did not finish within {timeout_ms} ms"
            ) from None
        raise


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    return value


# -- checking the reference --------------------------------------------------------------


def _denied(table: Table, name: Any, where: str) -> RefError:
    return RefError(
        errors.REF_PERMISSION_DENIED,
        f"{where}: field {name!r} is not a public field of table {table.name!r}; "
        f"allowed fields: {', '.join(table.fields)}",
    )


def _public_field(table: Table, name: Any, where: str) -> str:
    if not isinstance(name, str) or name not in table.fields:
        raise _denied(table, name, where)
    return name


def _selected_fields(table: Table, select: Any) -> list[str]:
    if select is None:
        return list(table.fields)
    if not isinstance(select, list) or not select:
        raise RefError(errors.REF_FORMAT_ERROR, "select: a non-empty list of field names")
    return list(dict.fromkeys(_public_field(table, name, f"select[{i}]") for i, name in enumerate(select)))


def _ordering(table: Table, order_by: Any) -> tuple[str, str] | None:
    if order_by is None:
        return None
    if not isinstance(order_by, dict) or "field" not in order_by:
        raise RefError(errors.REF_FORMAT_ERROR, "order_by: an object with a `field` and an optional `direction`")
    name = _public_field(table, order_by["field"], "order_by")
    direction = order_by.get("direction", "asc")
    if direction not in DIRECTIONS:
        raise RefError(errors.REF_FORMAT_ERROR, f"order_by.direction: 'asc' or 'desc', not {direction!r}")
    if table.kind(name) == JSON:
        raise RefError(errors.REF_FORMAT_ERROR, f"order_by: {name!r} is a JSON field; it can be selected, not sorted by")
    return name, direction


def _limit(limit: Any) -> int:
    if limit is None:
        return DEFAULT_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise RefError(errors.REF_FORMAT_ERROR, f"limit: a positive integer, not {limit!r}")
    return limit


# -- conditions --------------------------------------------------------------------------


NOTHING, EVERY_VALUE = "nothing", "every value"
"""What a comparison can reduce to: no row, or every row whose field is not NULL."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _apply_conditions(table: Table, queryset: models.QuerySet, conditions: Any, vendor: str) -> models.QuerySet:
    if conditions is None:
        return queryset
    if not isinstance(conditions, list):
        raise RefError(errors.REF_FILTER_ERROR, "conditions: a list of {field, operator, value} objects")
    for index, condition in enumerate(conditions):
        queryset = _apply_condition(table, queryset, index, condition, vendor)
    return queryset


def _apply_condition(table: Table, queryset: models.QuerySet, index: int, condition: Any, vendor: str) -> models.QuerySet:
    where = f"conditions[{index}]"
    if not isinstance(condition, dict) or not {"field", "operator", "value"} <= condition.keys():
        raise RefError(errors.REF_FILTER_ERROR, f"{where}: a condition is an object with field, operator and value")
    name = _public_field(table, condition["field"], where)
    operator, value = condition["operator"], condition["value"]
    where = f"{where} ({name})"

    def bad(message: str) -> RefError:
        return RefError(errors.REF_FILTER_ERROR, f"{where}: {message}")

    if operator not in OPERATORS:
        raise bad(f"unknown operator {operator!r}; operators: {', '.join(OPERATORS)}")
    kind, target = table.column(name)
    if kind == JSON:
        raise bad(f"{name!r} is a JSON field; it can be selected, not filtered")
    path = table.fields[name]
    column = _Column(kind, connections[queryset.db].ops.integer_field_range(target.get_internal_type())
                     if kind == INTEGER else (None, None), bad)

    if operator == "contains":
        if not isinstance(value, str):
            raise bad(f"contains needs a string, not {type(value).__name__}")
        if kind != TEXT:
            raise bad(f"contains works on text fields; {name!r} is a {kind} field")
        # StrIndex (INSTR / STRPOS) is case-sensitive on every database, and takes % and _
        # literally; NULL never matches.
        position = f"_condition_{index}"
        return queryset.alias(**{position: StrIndex(path, Value(value))}).filter(**{f"{position}__gt": 0})

    if operator == "in":
        if not isinstance(value, list):
            raise bad(f"in needs a list, not {type(value).__name__}")
        wanted = [equal for item in value if item is not None for equal in column.equal_values(item)]
        match = Q(**{f"{path}__in": wanted}) if wanted else Q(pk__in=[])
        if None in value:
            match |= Q(**{f"{path}__isnull": True})
        return queryset.filter(match)

    if operator in ("eq", "ne"):
        if value is None:
            match = Q(**{f"{path}__isnull": True})
        else:
            equal = column.equal_values(value)
            if not equal:
                # Equal to nothing: eq matches no row, ne every row (NULLs too).
                return queryset.none() if operator == "eq" else queryset
            # A NULL is not equal to a value, so `ne` must keep NULL rows. Django's exclude
            # already negates `x = v AND x IS NOT NULL`; saying so explicitly keeps that
            # true whatever the join.
            match = Q(**{f"{path}__in": equal}) & Q(**{f"{path}__isnull": False})
        return queryset.filter(match) if operator == "eq" else queryset.exclude(match)

    # gt / gte / lt / lte: never true for NULL.
    if not (_is_number(value) or isinstance(value, str)):
        raise bad(f"{operator} needs a number or a string, not {type(value).__name__}")
    comparison = column.comparison(operator, value)
    if comparison == NOTHING:
        return queryset.none()
    if isinstance(comparison, str):  # EVERY_VALUE
        return queryset.filter(**{f"{path}__isnull": False})
    lookup, bound = comparison
    if kind == TEXT and vendor in CODE_POINT_COLLATIONS:
        compared = f"_condition_{index}"
        expression = Collate(F(path), CODE_POINT_COLLATIONS[vendor])
        return queryset.alias(**{compared: expression}).filter(**{f"{compared}__{lookup}": bound})
    return queryset.filter(**{f"{path}__{lookup}": bound})


@dataclass
class _Column:
    """How the values of a condition compare with one field.

    A value of another kind than the field (a number for text, a string or a bool for a
    number…) equals none of its values and orders against none of them. Integers
    compare exactly with fractional and out-of-range bounds, without Django truncating
    1.5 to 1 or dropping an overflowing comparison (which would let NULLs through).
    """

    kind: str
    integer_range: tuple[int | None, int | None]
    bad: Callable[[str], RefError]

    def equal_values(self, value: Any) -> list[Any]:
        """The database values equal to `value` ([] when the field can hold none)."""
        if self.kind == TEXT:
            return [value] if isinstance(value, str) else []
        if self.kind == BOOLEAN:
            return [value] if isinstance(value, bool) else []
        if self.kind == DATETIME:
            return [_datetime(value, self.bad)] if isinstance(value, str) else []
        if not _is_number(value):
            return []
        self._check_finite(value)
        if self.kind == NUMBER:
            number = self._float(value)
            return [number] if math.isfinite(number) else []
        if isinstance(value, float) and not value.is_integer():
            return []
        low, high = self.integer_range
        number = int(value)
        return [] if (low is not None and number < low) or (high is not None and number > high) else [number]

    def comparison(self, operator: str, value: Any) -> tuple[str, Any] | str:
        """The lookup and bound for `field <operator> value`, or NOTHING / EVERY_VALUE."""
        if self.kind in (TEXT, DATETIME):
            if not isinstance(value, str):
                return NOTHING
            return COMPARISONS[operator], (value if self.kind == TEXT else _datetime(value, self.bad))
        if self.kind == BOOLEAN or not _is_number(value):
            return NOTHING
        self._check_finite(value)
        if self.kind == NUMBER:
            number = self._float(value)
            if math.isinf(number):  # beyond every float: above or below all of them
                holds = (number > 0) == (operator in ("lt", "lte"))
                return EVERY_VALUE if holds else NOTHING
            return COMPARISONS[operator], number
        # Integers: n > v ⇔ n ≥ ⌊v⌋+1, n ≥ v ⇔ n ≥ ⌈v⌉, n < v ⇔ n ≤ ⌈v⌉−1, n ≤ v ⇔ n ≤ ⌊v⌋,
        # then clamped to what the column can hold.
        low, high = self.integer_range
        if operator in ("gt", "gte"):
            bound = math.floor(value) + 1 if operator == "gt" else math.ceil(value)
            if high is not None and bound > high:
                return NOTHING
            return EVERY_VALUE if low is not None and bound <= low else ("gte", bound)
        bound = math.ceil(value) - 1 if operator == "lt" else math.floor(value)
        if low is not None and bound < low:
            return NOTHING
        return EVERY_VALUE if high is not None and bound >= high else ("lte", bound)

    def _check_finite(self, value: int | float) -> None:
        if isinstance(value, float) and not math.isfinite(value):
            raise self.bad(f"{value!r} is not a finite number")

    @staticmethod
    def _float(value: int | float) -> float:
        try:
            return float(value)
        except OverflowError:  # an integer beyond the float range
            return math.inf if value > 0 else -math.inf


def _datetime(text: str, bad: Callable[[str], RefError]) -> datetime:
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise bad(f"{text!r} is not an ISO 8601 datetime (e.g. 2026-02-03T10:30:00Z)") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def _apply_ordering(table: Table, queryset: models.QuerySet, ordering: tuple[str, str] | None, vendor: str) -> models.QuerySet:
    if ordering is None:
        return queryset.order_by("pk")
    name, direction = ordering
    expression: Any = F(table.fields[name])
    if table.kind(name) == TEXT and vendor in CODE_POINT_COLLATIONS:
        expression = Collate(expression, CODE_POINT_COLLATIONS[vendor])
    expression = expression.desc(nulls_last=True) if direction == "desc" else expression.asc(nulls_last=True)
    return queryset.order_by(expression, "pk")


# -- the tables --------------------------------------------------------------------------


def _register_builtin_tables() -> None:
    from knowledge.models import KnowledgeAtom, Paper, QualityRecord, Relation

    register(
        "papers",
        lambda: Paper.objects.all(),
        {
            "paper_id": "paper_id",
            "title": "title",
            "authors": "authors",
            "year": "year",
            "venue": "venue",
            "domain": "domain",
            "abstract": "abstract",
            "created_at": "created_at",
        },
        "paper metadata",
    )
    register(
        "knowledge_atoms",
        lambda: KnowledgeAtom.objects.all(),
        {
            "atom_id": "atom_id",
            "paper_id": "paper__paper_id",
            "atom_type": "atom_type",
            "content": "content",
            "confidence": "confidence",
            "domain": "domain",
            "source_section": "source_section",
            "created_at": "created_at",
        },
        "knowledge atoms extracted from papers",
    )
    register(
        "relations",
        lambda: Relation.objects.all(),
        {
            "relation_id": "relation_id",
            "source_atom_id": "source__atom_id",
            "target_atom_id": "target__atom_id",
            "relation_type": "relation_type",
            "confidence": "confidence",
            "created_at": "created_at",
        },
        "relations between knowledge atoms",
    )
    register(
        "quality_records",
        lambda: QualityRecord.objects.all(),
        {
            "record_id": "record_id",
            "target_type": "target_type",
            "target_id": "target_id",
            "score": "score",
            "passed": "passed",
            "details": "details",
            "created_at": "created_at",
        },
        "quality evaluation records",
    )


_register_builtin_tables()
