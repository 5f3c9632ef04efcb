"""Rows a fixture writes, written the slow way once per test process and replayed after.

Loading the demo goes through the documents' import, as a person's import does (shapes
checked, versions frozen, lineage derived): a few tenths of a second, in some five hundred
tests of each pass. `replayed(name, write)` runs `write` the first time a process asks for
`name` and notes every row it added (when every table it wrote to was empty before, so that
the rows are all of what it writes). Each later time it inserts those rows again, in one
transaction (the foreign keys are checked at its end): the same ids and values, their times
moved on by the time since the first writing ended (as if just written: a cache keyed by a
row's id and time sees a new row), and the tables' id sequences moved past them. Where the
rows cannot go in as they were (a test wrote some of them already), it runs `write` again,
as the first time.

The tests of the import and of `load_demo` themselves call them directly, never this.
"""
from __future__ import annotations

import copy
import io
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from django.apps import apps
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import IntegrityError, connection, transaction
from django.db.models import DateTimeField, Max, Model
from django.utils import timezone

from demo.services import demo_workspace_write

# By name: when the first writing ended, and each model it added rows to with those rows' field values.
_WRITTEN: dict[str, tuple[datetime, list[tuple[type[Model], list[dict]]]]] = {}


def replayed(name: str, write: Callable[[], object]) -> None:
    """Write what `write` writes: by calling it the first time in this process, by
    inserting the rows it added every time after."""
    written = _WRITTEN.get(name)
    if written is not None:
        try:
            with transaction.atomic():
                _insert(*written)
            return
        except IntegrityError:  # some of them are there already: write them as the first time
            write()
            return
    before = _last_ids()
    write()
    ended, added = timezone.now(), _added_since(before)
    if all(before[model] == 0 for model, _ in added):  # written on empty tables
        _WRITTEN[name] = (ended, added)


def load_demo(workspace: Path) -> None:
    """The demo's documents and knowledge rows (replayed), and its files in `workspace`."""
    replayed("demo", lambda: call_command("load_demo", stdout=io.StringIO()))
    demo_workspace_write(workspace=workspace)


def _models() -> list[type[Model]]:
    """The tables a writing is noted in. The audit trail's is not: no test reads the entries of
    the demo's import, and the entries a fixture wrote before it (its users) would otherwise
    keep the demo from being replayed."""
    return [model for model in apps.get_models(include_auto_created=True)
            if model._meta.managed and model._meta.label != "core.AuditEntry"]


def _last_ids() -> dict[type[Model], int]:
    return {model: model._base_manager.aggregate(last=Max("pk"))["last"] or 0 for model in _models()}


def _added_since(before: dict[type[Model], int]) -> list[tuple[type[Model], list[dict]]]:
    added = []
    for model, last in before.items():
        fields = [field for field in model._meta.concrete_fields if not field.generated]
        rows = [{field.attname: getattr(row, field.attname) for field in fields}
                for row in model._base_manager.filter(pk__gt=last).order_by("pk")]
        if rows:
            added.append((model, rows))
    return added


def _insert(ended: datetime, written: list[tuple[type[Model], list[dict]]]) -> None:
    later = timezone.now() - ended
    for model, rows in written:
        times = [field.attname for field in model._meta.concrete_fields if isinstance(field, DateTimeField)]
        copies = [copy.deepcopy(row) for row in rows]
        for row in copies:
            row.update({name: row[name] + later for name in times if row[name] is not None})
        model._base_manager.bulk_create([model(**row) for row in copies])
    statements = connection.ops.sequence_reset_sql(no_style(), [model for model, _ in written])
    if statements:
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
