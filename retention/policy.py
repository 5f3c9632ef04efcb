"""Which runs retention acts on: the global rule (settings), each workflow's own, and the
selections of runs they make at a given time.

Ages count from a run's `created_at` (indexed with `id`, so a selection is an index range).
Only a top-level run is selected: a sub-workflow's child run goes, or stays, with its
parent (`retention/sweep.py` treats a run and its children as one tree)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q, QuerySet

from executions.models import Execution
from retention.models import WorkflowRetention

DELETE, DETAILS = "delete", "details"  # what a selection's runs are for: deleted whole, or their node runs only


@dataclass(frozen=True)
class Rule:
    """Days, each 0 for "for ever": `days` for ended runs, `failed_days` for failed ones
    (0: as `days`, and never fewer), `success_detail_days` before a successful run keeps
    only its summary."""

    days: int
    failed_days: int
    success_detail_days: int

    def deletes(self, now: datetime) -> Q | None:
        """The runs this rule deletes at `now` (None: none)."""
        if not self.days:
            return None
        before = now - timedelta(days=self.days)
        failed_before = now - timedelta(days=max(self.days, self.failed_days))
        return Q(created_at__lt=before) & (~Q(status=Execution.Status.FAILED) | Q(created_at__lt=failed_before))

    def strips(self, now: datetime) -> Q | None:
        """The successful runs whose details this rule removes at `now` (None: none)."""
        if not self.success_detail_days or (self.days and self.success_detail_days >= self.days):
            return None
        return Q(status=Execution.Status.SUCCESS, created_at__lt=now - timedelta(days=self.success_detail_days))


def global_rule() -> Rule:
    return Rule(days=settings.RETENTION_DAYS, failed_days=settings.RETENTION_FAILED_DAYS,
                success_detail_days=settings.RETENTION_SUCCESS_DETAIL_DAYS)


def workflow_rule(own: WorkflowRetention | None) -> Rule:
    """A workflow's rule: its own fields where set, the global ones elsewhere."""
    base = global_rule()
    if own is None:
        return base
    return Rule(days=base.days if own.days is None else own.days,
                failed_days=base.failed_days if own.failed_days is None else own.failed_days,
                success_detail_days=base.success_detail_days if own.success_detail_days is None
                else own.success_detail_days)


def top_level_runs() -> QuerySet[Execution]:
    return Execution.objects.filter(parent_node_run__isnull=True)


def selections(now: datetime) -> list[tuple[str, QuerySet[Execution]]]:
    """What the rules select at `now`, as (DELETE | DETAILS, top-level runs): the global
    rule over workflows without their own, then each workflow's rule over its runs. Runs
    still going are selected too (their age says so), to be counted as kept."""
    own = list(WorkflowRetention.objects.select_related("workflow"))
    found: list[tuple[str, QuerySet[Execution]]] = []
    scopes = [(top_level_runs().exclude(workflow_id__in=[rule.workflow_id for rule in own]), global_rule())]
    scopes += [(top_level_runs().filter(workflow_id=rule.workflow_id), workflow_rule(rule)) for rule in own]
    for runs, rule in scopes:
        deletes, strips = rule.deletes(now), rule.strips(now)
        if deletes is not None:
            found.append((DELETE, runs.filter(deletes)))
        if strips is not None:
            # A run the same rule deletes is not stripped first.
            stripped = runs.filter(strips).exclude(retained_summary__complete=True)
            found.append((DETAILS, stripped.exclude(deletes) if deletes is not None else stripped))
    return found


def purge_selection(before: datetime, workflow_pk: int | None = None) -> QuerySet[Execution]:
    """`purge_runs`' selection: top-level runs created before `before`, of one workflow or all."""
    runs = top_level_runs().filter(created_at__lt=before)
    return runs.filter(workflow_id=workflow_pk) if workflow_pk is not None else runs
