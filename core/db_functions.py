"""Database functions Django does not have, written for PostgreSQL and SQLite alike."""
from __future__ import annotations

from django.db.models import FloatField, Func, IntegerField, JSONField


class Epoch(Func):
    """A datetime as seconds since 1970, a float."""

    output_field = FloatField()

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="date_part('epoch', %(expressions)s)", **extra)

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="((julianday(%(expressions)s) - 2440587.5) * 86400.0)",
                           **extra)


class JSONArrayLength(Func):
    """The number of items of a JSON array (of a column that holds one)."""

    output_field = IntegerField()

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, function="jsonb_array_length", **extra)

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, function="json_array_length", **extra)


class ToolCallMarks(Func):
    """Of a JSON array of tool calls (a node run's `tool_calls`), what a timeline marks of each,
    in order: [{name, status, started_at, duration_ms}] — a few short values, read without
    the arguments and results the array also holds."""

    output_field = JSONField()
    KEYS = ("name", "status", "started_at", "duration_ms")

    def as_postgresql(self, compiler, connection, **extra):
        pairs = ", ".join(f"'{key}', call->'{key}'" for key in self.KEYS)
        template = (f"(SELECT coalesce(jsonb_agg(jsonb_build_object({pairs}) ORDER BY n), '[]'::jsonb) "
                    "FROM jsonb_array_elements(%(expressions)s) WITH ORDINALITY AS calls(call, n))")
        return self.as_sql(compiler, connection, template=template, **extra)

    def as_sqlite(self, compiler, connection, **extra):
        pairs = ", ".join(f"'{key}', json_extract(value, '$.{key}')" for key in self.KEYS)
        template = (f"(SELECT coalesce(json_group_array(json_object({pairs})), '[]') "
                    "FROM (SELECT value FROM json_each(%(expressions)s) ORDER BY key))")
        return self.as_sql(compiler, connection, template=template, **extra)
