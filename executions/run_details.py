"""Whether a run still has its details (its node runs): the one check every operation that
reads them makes before it does (a re-run, a comparison, a node tried from a past run).

Retention, a layer above, removes a successful run's details to a stored summary
(`retained_summary`) and marks a run it has begun to delete (`retention_deletion`); both are
reverse one-to-ones of the run, read here by name. Such a run is refused with
`DetailsRemoved` (409) naming it, when and why, instead of being answered from what is left.
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import F, Q, QuerySet

from core.errors import DetailsRemoved
from executions.models import Execution

REMOVED = "its details (node runs, outputs, prompts, context records) were removed by retention"
DELETING = "it is being deleted by retention"


# What a query of runs annotates to tell, without a query more, whether each still has its
# details (`with_marks`, then `refuse_marked`).
MARKS = {"details_removed_at": F("retained_summary__removed_at"), "deleting_since": F("retention_deletion__started_at")}


def refuse_without_details(executions: Iterable[Execution], *, operation: str) -> None:
    """Raise DetailsRemoved for the first of these runs whose details retention removed or is
    deleting (one query for all of them); `operation` says what was asked ("re-run")."""
    runs = {execution.pk: execution for execution in executions}
    marked = (Execution.objects.filter(pk__in=runs)
              .filter(Q(retained_summary__isnull=False) | Q(retention_deletion__isnull=False))
              .values_list("pk", "retained_summary__removed_at", "retention_deletion__started_at"))
    for pk, removed_at, deleting_since in sorted(marked):
        _refuse(runs[pk].execution_id, removed_at, deleting_since, operation)


def with_marks(executions: QuerySet[Execution]) -> QuerySet[Execution]:
    """These runs, each read with what `refuse_marked` asks (two outer joins, no query more)."""
    return executions.annotate(**MARKS)


def refuse_marked(execution: Execution, *, operation: str) -> None:
    """As `refuse_without_details`, for a run read `with_marks`."""
    _refuse(execution.execution_id, getattr(execution, "details_removed_at", None),
            getattr(execution, "deleting_since", None), operation)


def _refuse(execution_id: str, removed_at: datetime | None, deleting_since: datetime | None, operation: str) -> None:
    when = removed_at or deleting_since
    if when is not None:
        raise DetailsRemoved(execution_id, operation=operation, removed_at=f"{when:%Y-%m-%d %H:%M} UTC",
                             why=REMOVED if removed_at else DELETING)
