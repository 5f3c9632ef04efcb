"""Database functions Django does not have, written for PostgreSQL and SQLite alike."""
from __future__ import annotations

from django.db.models import FloatField, Func, IntegerField


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
