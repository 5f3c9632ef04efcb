"""Deleting runs, or a successful run's details, in bounded batches: the one code the sweep
and `purge_runs` share.

A selection of top-level runs is read a chunk at a time in id order (`CHUNK` runs); each
run's tree (it and its sub-workflows' child runs, `parent_node_run`) is read with it, and a
tree stays whole when any of its runs must (`retention/references.py`). What goes is deleted
children before parents: the deepest runs' node runs first, at most `batch` per transaction
(the lowest ids of those runs first, up to an id read beforehand, so every DELETE is bounded
by an index range), then those runs' rows, then the level above; after each transaction
the pass rests `pause` times as long as it took. No statement locks a run
that is going on: only ended runs are deleted, and only those are locked. Each
transaction records one `retention.delete` (or `retention.details`) audit entry naming the
runs and counting the rows.

A dry run (`apply=False`) reads the same chunks and trees, decides the same, and counts
what would go instead of deleting it."""
from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, models, transaction
from django.db.models import Count, Q, QuerySet, Sum

from core import audit
from core.status_writes import lock_rows
from executions.models import Evaluation, Execution, NodeRun, ThoughtSearch
from experiments.models import ExperimentItem
from retention.models import RetainedSummary, RunDeletion
from retention.policy import DELETE
from retention.references import References, tree_reason

CHUNK = 200  # top-level runs read and decided at a time
RUN_FIELDS = ("pk", "execution_id", "status", "experiment")


@dataclass
class Report:
    """What a pass deleted (or, dry, would delete) and what it kept back, and why."""

    runs: Counter = field(default_factory=Counter)  # status → runs deleted (children counted)
    details: Counter = field(default_factory=Counter)  # status → runs whose details were removed
    node_runs: int = 0
    kept: Counter = field(default_factory=Counter)  # reason → top-level runs kept back
    batches: int = 0
    stopped: bool = False  # the pass reached its batch limit before the end of its selection

    def as_dict(self) -> dict[str, Any]:
        return {"runs": dict(self.runs), "runs_deleted": sum(self.runs.values()), "details_removed": dict(self.details),
                "node_runs": self.node_runs, "kept": dict(self.kept), "batches": self.batches,
                "stopped": self.stopped}


@dataclass
class Purge:
    """One pass over selections: `apply` or count, `batch` node runs per transaction,
    stopping after `max_batches` transactions (None: no bound)."""

    batch: int
    apply: bool = True
    max_batches: int | None = None
    # Seconds of rest after each transaction per second it took (RETENTION_PAUSE): 3 deletes
    # at a quarter of full speed, leaving the machine's cores and disk to the runs going on.
    pause: float = 0.0
    report: Report = field(default_factory=Report)

    def __post_init__(self) -> None:
        self.references = References()

    def run(self, what: str, runs: QuerySet[Execution]) -> Report:
        """Delete the selected runs (`DELETE`) or their details (`DETAILS`), a chunk at a time."""
        after = 0
        while not self.report.stopped:
            chunk = list(runs.filter(pk__gt=after).order_by("pk").values(*RUN_FIELDS)[:CHUNK])
            if not chunk:
                break
            after = chunk[-1]["pk"]
            self._chunk(what, chunk)
        return self.report

    def _chunk(self, what: str, roots: list[dict[str, Any]]) -> None:
        levels, root_of = _trees(roots)
        reasons = self.references.reasons([run for level in levels for run in level])
        trees: dict[int, list[int]] = {}
        for level in levels:
            for run in level:
                trees.setdefault(root_of[run["pk"]], []).append(run["pk"])
        going: set[int] = set()
        for root in roots:
            reason = tree_reason(reasons, trees[root["pk"]])
            if reason is None:
                going.update(trees[root["pk"]])
            else:
                self.report.kept[reason] += 1
        if what == DELETE:
            for level in reversed(levels):  # children before their parents
                self._delete_level([run for run in level if run["pk"] in going])
        else:
            stripped = [run for run in roots if run["pk"] in going]
            for level in reversed(levels[1:]):  # a stripped run's children are its details
                self._delete_level([run for run in level if run["pk"] in going], action="retention.details")
            self._strip(stripped)

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One of the pass's transactions, then its rest (`pause` times as long as it took)."""
        started = time.monotonic()
        with transaction.atomic():
            yield
        if self.pause:
            time.sleep(self.pause * (time.monotonic() - started))

    def _counting(self) -> bool:
        """Whether this pass may write one more transaction (else it stops, reporting so)."""
        if self.max_batches is not None and self.report.batches >= self.max_batches:
            self.report.stopped = True
        return not self.report.stopped

    def _delete_level(self, runs: list[dict[str, Any]], *, action: str = "retention.delete") -> None:
        """Delete these runs (one level of their trees: none is another's parent)."""
        if not runs:
            return
        pks = [run["pk"] for run in runs]
        if not self._delete_node_runs(pks, action):
            return
        if not self.apply:
            self.report.runs.update(run["status"] for run in runs)
            return
        if not self._counting():
            return
        with self._transaction():
            # The runs' rows, unless a re-run or an experiment's item came to need one meanwhile.
            deleted = list(Execution.objects.filter(pk__in=pks, reruns__isnull=True, experiment_item__isnull=True)
                           .values_list("pk", "execution_id", "status"))
            gone = [pk for pk, _, _ in deleted]
            Evaluation.objects.filter(execution_id__in=gone).delete()
            RetainedSummary.objects.filter(execution_id__in=gone).delete()
            _unlink_dependants(gone)  # a run's deletion marker with the rest
            _delete_rows(Execution, "id", gone)
            self.report.runs.update(status for _, _, status in deleted)
            self.report.batches += 1
            audit.record(action, object_type="execution", object_id=deleted[0][1] if deleted else "",
                         before={"executions": [execution_id for _, execution_id, _ in deleted]},
                         after={"executions_deleted": len(deleted)})

    def _delete_node_runs(self, pks: list[int], action: str) -> bool:
        """Delete the node runs of these runs, `batch` at a time, lowest ids first (or count
        them, dry); False once the pass stops. Each transaction first locks the runs and
        asks again which may still go (`_still_free`): a run re-run or made an experiment's
        item since the pass read it keeps its node runs."""
        if not self.apply:
            self.report.node_runs += NodeRun.objects.filter(execution_id__in=pks).count()
            return True
        while pks:
            ids = list(NodeRun.objects.filter(execution_id__in=pks).order_by("pk")
                       .values_list("pk", flat=True)[:self.batch])
            if not ids:
                return True
            if not self._counting():
                return False
            with self._transaction():
                pks = _still_free(pks, marking=action == "retention.delete")
                bounded = NodeRun.objects.filter(execution_id__in=pks, pk__lte=ids[-1])
                ThoughtSearch.objects.filter(node_run__in=bounded).delete()
                touched = dict(bounded.order_by().values_list("execution__execution_id").annotate(n=Count("pk")))
                deleted = _delete_node_run_rows(pks, ids[-1]) if pks else 0
                self.report.node_runs += deleted
                self.report.batches += 1
                audit.record(action, object_type="execution", object_id=min(touched, default=""),
                             before={"node_runs": touched}, after={"node_runs_deleted": deleted})
            if len(ids) < self.batch:
                return True
        return True

    def _strip(self, runs: list[dict[str, Any]]) -> None:
        """Remove these successful runs' details: their summaries stored, then their node
        runs deleted, then the summaries marked complete (a pass stopped between goes on
        with them next time)."""
        if not runs:
            return
        pks = [run["pk"] for run in runs]
        if self.apply:
            if not self._counting():
                return
            with transaction.atomic():
                pks = _still_free(pks, marking=False)
                runs = [run for run in runs if run["pk"] in pks]
                summaries = run_summaries(pks)
                RetainedSummary.objects.bulk_create(
                    [RetainedSummary(execution_id=pk, summary=summaries[pk]) for pk in pks], ignore_conflicts=True)
        if not self._delete_node_runs(pks, "retention.details"):
            return
        if self.apply:
            RetainedSummary.objects.filter(execution_id__in=pks).update(complete=True)
        self.report.details.update(run["status"] for run in runs)


def _still_free(pks: list[int], *, marking: bool) -> list[int]:
    """Of these ended runs, those nothing has come to need since the pass read them, asked
    under their rows' lock (`lock_rows`, in the caller's transaction): a re-run or an
    experiment's item referring to a run takes a key share of its row, so one made meanwhile
    is seen here (its transaction committed before the lock was granted) and one made after
    waits for this transaction, then finds the run marked (`RunDeletion`, with `marking`, or
    its `RetainedSummary`) and is refused (`executions/run_details.py`). SQLite, which has one
    writer at a time, needs no lock."""
    lock_rows(Execution, pks)
    free = list(Execution.objects.filter(pk__in=pks, reruns__isnull=True, experiment_item__isnull=True)
                .values_list("pk", flat=True))
    if marking and free:
        RunDeletion.objects.bulk_create([RunDeletion(execution_id=pk) for pk in free], ignore_conflicts=True)
    return free


def _trees(roots: list[dict[str, Any]]) -> tuple[list[list[dict[str, Any]]], dict[int, int]]:
    """The roots' trees by level (the roots, their children, theirs …) and each run's root."""
    levels = [roots]
    root_of = {run["pk"]: run["pk"] for run in roots}
    while True:
        children = list(Execution.objects.filter(parent_node_run__execution_id__in=[run["pk"] for run in levels[-1]])
                        .values(*RUN_FIELDS, "parent_node_run__execution_id"))
        if not children:
            return levels, root_of
        for child in children:
            root_of[child["pk"]] = root_of[child.pop("parent_node_run__execution_id")]
        levels.append(children)


def run_summaries(pks: list[int]) -> dict[int, dict[str, Any]]:
    """What each run's pages keep showing once its node runs are gone: its node runs by
    status, the nodes that ran, tokens and model calls (its cost stays on its own row); two
    grouped reads for all of them."""
    runs = NodeRun.objects.filter(execution_id__in=pks).order_by()
    summaries: dict[int, dict[str, Any]] = {pk: {"node_runs": {}, "total": 0, "nodes": 0, "tokens_in": 0,
                                                  "tokens_out": 0, "calls": 0} for pk in pks}
    for pk, status, n in runs.values_list("execution_id", "status").annotate(n=Count("pk")):
        summaries[pk]["node_runs"][status] = n
        summaries[pk]["total"] += n
    totals = runs.values_list("execution_id").annotate(tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out"),
                                                       calls=Sum("call_count"), nodes=Count("node_id", distinct=True))
    for pk, tokens_in, tokens_out, calls, nodes in totals:
        summaries[pk].update(tokens_in=tokens_in or 0, tokens_out=tokens_out or 0, calls=calls or 0, nodes=nodes)
    # What each agent's node runs cost, as the agents' cost pages add it up (copies a re-run
    # reused are the past run's, so left out): kept so those totals do not change.
    agents = (runs.exclude(kind__in=NodeRun.COPIES).filter(agent__isnull=False).values_list("execution_id", "agent_id")
              .annotate(cost=Sum("cost"), incomplete=Count("pk", filter=Q(cost_complete=False)),
                        tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out")))
    for pk, agent, cost, incomplete, tokens_in, tokens_out in agents:
        summaries[pk].setdefault("agents", {})[str(agent)] = {
            "cost": cost or 0, "incomplete": incomplete, "tokens_in": tokens_in or 0, "tokens_out": tokens_out or 0}
    return summaries


def _delete_node_run_rows(pks: list[int], up_to: int | None) -> int:
    """DELETE the node runs of these runs (with ids up to `up_to`, when given); the count."""
    table = connection.ops.quote_name(NodeRun._meta.db_table)
    marks = ", ".join(["%s"] * len(pks))
    sql = f"DELETE FROM {table} WHERE execution_id IN ({marks})"
    params: list[int] = list(pks)
    if up_to is not None:
        sql += " AND id <= %s"
        params.append(up_to)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


# The rows pointing at a run that the purge deletes itself, or that keep a run (a re-run's
# source, an experiment's item): any other app's rows are `_unlink_dependants`'.
_PURGED_HERE = {Execution, NodeRun, ThoughtSearch, Evaluation, RetainedSummary, ExperimentItem}


def _unlink_dependants(pks: list[int]) -> None:
    """What deleting these runs through the ORM would do to other apps' rows that point at
    them (a trigger's record of the run and its callbacks, a schedule's fire), done here
    because the runs go by a raw DELETE, which the database would refuse while they point
    at them: CASCADE rows deleted, SET_NULL ones unlinked."""
    if not pks:
        return
    for relation in Execution._meta.related_objects:
        if relation.related_model in _PURGED_HERE:
            continue
        rows = relation.related_model._base_manager.filter(**{f"{relation.field.name}__in": pks})
        if relation.on_delete is models.CASCADE:
            rows.delete()
        elif relation.on_delete is models.SET_NULL:
            rows.update(**{relation.field.name: None})


def _delete_rows(model, column: str, ids: list[int]) -> None:
    """DELETE these rows of `model` (whose dependants are deleted already) in one statement."""
    if not ids:
        return
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE {connection.ops.quote_name(column)} IN "
                       f"({', '.join(['%s'] * len(ids))})", ids)
