"""A run read in bounded time however many node runs it made: each node summarised, its
node runs a page at a time, and its timeline a window at a time.

A long state-machine loop or a wide DAG makes tens of thousands of node runs. Nothing here
reads them all as records: the summary groups them in the database (one scan of the run's
entries in an index, no per-row subquery) and reads the latest run of each node by its
sequence number; the node runs come a page at a time, light unless asked for in full; the
timeline counts a window's node runs in buckets per node, and hands over the runs
themselves only when few enough fall in the window to be drawn one by one.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import BooleanField, Count, ExpressionWrapper, FloatField, Func, Max, Min, Q, QuerySet, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Floor
from django.utils import timezone

from agents.backends.metering import usd
from core.api_support import Rendered
from core.errors import DocumentError
from core.jsonutil import iso
from executions.documents import node_run_record
from executions.models import Execution, NodeRun

# What a light node run is read with: what a table row, a timeline bar or an attempt's
# heading shows. The rest (prompt, context record, inputs, output …): `full=true`, or the
# node run by its id.
LIGHT_COLUMNS = ("id", "sequence", "node_id", "agent__agent_id", "agent_version__version", "kind", "attempt",
                 "status", "error_code", "error", "worker", "backend", "model", "started_at", "completed_at",
                 "duration_ms", "tokens_in", "tokens_out", "dispatches", "cost", "cost_complete", "reused_from_id",
                 "decide_by")
# What the summary reads of each node's latest run besides: what the page shows of a gate
# that waits, of a failure (BUDGET_EXCEEDED's figures) and of the transition it took, and
# its output (the node's §5 result).
LATEST_COLUMNS = (*LIGHT_COLUMNS, "error_details", "gate", "decision", "output")
TIMELINE_BUCKETS = 120  # the buckets a timeline window is counted in, unless asked otherwise
MAX_TIMELINE_BUCKETS = 1000
TIMELINE_RUNS = 400  # up to this many node runs in a window, the timeline gets them one by one


class Epoch(Func):
    """A datetime as seconds since 1970 (a float), on PostgreSQL and SQLite alike."""

    output_field = FloatField()

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="EXTRACT(EPOCH FROM %(expressions)s)", **extra)

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="((julianday(%(expressions)s) - 2440587.5) * 86400.0)",
                           **extra)


def _called() -> Q:
    """A node run that called a model: a gate, a copy or a run not yet done has not."""
    return ~Q(calls=[])


def _light(runs: QuerySet[NodeRun]) -> QuerySet:
    """`runs` as rows of LIGHT_COLUMNS and whether each called a model."""
    return runs.annotate(called=ExpressionWrapper(_called(), output_field=BooleanField())).values(*LIGHT_COLUMNS, "called")


def light_record(row: dict[str, Any]) -> dict[str, Any]:
    """A node run's light record, from a row of LIGHT_COLUMNS and `called`."""
    return {
        "node_run_id": row["id"], "sequence": row["sequence"], "node_id": row["node_id"],
        "agent_ref": row["agent__agent_id"], "agent_version": row["agent_version__version"], "kind": row["kind"],
        "attempt": row["attempt"], "status": row["status"], "error_code": row["error_code"], "error": row["error"],
        "worker": row["worker"], "backend": row["backend"], "model": row["model"],
        "started_at": iso(row["started_at"]), "completed_at": iso(row["completed_at"]),
        "duration_ms": row["duration_ms"], "tokens_in": row["tokens_in"], "tokens_out": row["tokens_out"],
        "dispatches": row["dispatches"], "called": row["called"], "cost": usd(row["cost"]),
        "cost_complete": row["cost_complete"], "reused_from": row["reused_from_id"], "decide_by": iso(row["decide_by"]),
    }


def node_summary(execution: Execution) -> dict[str, Any]:
    """The run's node runs counted, by status; and for each node that ran, in the order it
    first ran: its runs by status, what they cost, the tokens they took, the nodes its runs'
    transitions chose (`next`: a state machine's), and its latest run, light, with its
    output, error details, gate and decision. Three queries whatever the number of node
    runs: one grouped read of the run's index entries, the latest runs by their sequence
    numbers, and the transitions taken."""
    runs = NodeRun.objects.filter(execution=execution).order_by()
    groups = (runs.values_list("node_id", "status")
              .annotate(n=Count("id"), first=Min("sequence"), last=Max("sequence"), cost=Sum("cost"),
                        unpriced=Count("id", filter=Q(cost_complete=False)), called=Count("id", filter=_called()),
                        tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out")))
    counts = dict.fromkeys(NodeRun.Status.values, 0)
    nodes: dict[str, dict[str, Any]] = {}
    for node_id, status, n, first, last, cost, unpriced, called, tokens_in, tokens_out in groups:
        node = nodes.setdefault(node_id, {"node_id": node_id, "runs": 0, "counts": {}, "cost": 0, "cost_complete": True,
                                          "called": False, "tokens_in": 0, "tokens_out": 0, "next": [],
                                          "first": first, "last": last})
        node["runs"] += n
        node["counts"][status] = n
        node["cost"] += cost or 0
        node["cost_complete"] = node["cost_complete"] and not unpriced
        node["called"] = node["called"] or bool(called)
        node["tokens_in"] += tokens_in or 0
        node["tokens_out"] += tokens_out or 0
        node["first"], node["last"] = min(node["first"], first), max(node["last"], last)
        counts[status] += n
    latest: dict[str, dict[str, Any]] = {}
    if nodes:
        wanted = {(node_id, node["last"]) for node_id, node in nodes.items()}
        rows = (runs.filter(sequence__in={last for _, last in wanted})
                .annotate(called=ExpressionWrapper(_called(), output_field=BooleanField()))
                .values(*LATEST_COLUMNS, "called"))
        latest = {row["node_id"]: row for row in rows if (row["node_id"], row["sequence"]) in wanted}
        taken = (runs.filter(status=NodeRun.Status.SUCCESS, decision__isnull=False)
                 .values_list("node_id", KeyTextTransform("node_id", "decision")).distinct())
        for node_id, target in taken:
            if target and node_id in nodes:
                nodes[node_id]["next"].append(target)
    summary = []
    for node in sorted(nodes.values(), key=lambda node: node["first"]):
        row = latest[node["node_id"]]
        del node["first"], node["last"]
        node["cost"] = usd(node["cost"])
        node["next"].sort()
        node["latest"] = {**light_record(row), "error_details": row["error_details"], "gate": row["gate"],
                          "decision": row["decision"], "output": row["output"]}
        summary.append(node)
    return {"total": sum(counts.values()), "counts": counts, "nodes": summary}


def node_runs_page(execution: Execution, *, node: str = "", status: str = "", kind: str = "",
                   since: datetime | None = None, until: datetime | None = None, newest_first: bool = False,
                   full: bool = False):
    """The run's node runs in the order they were made (newest first if asked), filtered by
    node, status, kind and a window of time (the runs that were going at some moment of
    it), as a queryset `Rendered` pages: light records, or whole ones when `full`."""
    runs = NodeRun.objects.filter(execution=execution)
    if node:
        runs = runs.filter(node_id=node)
    if status:
        runs = runs.filter(status=status)
    if kind:
        runs = runs.filter(kind=kind)
    runs = _in_window(runs, since, until)
    runs = runs.order_by(*(("-sequence", "-id") if newest_first else ("sequence", "id")))
    if full:
        return Rendered(runs.select_related("agent", "agent_version"),
                        lambda page: [node_run_record(run, with_id=True) for run in page], counted=runs)
    return Rendered(_light(runs), lambda page: [light_record(row) for row in page], counted=runs)


def _in_window(runs: QuerySet[NodeRun], since: datetime | None, until: datetime | None) -> QuerySet[NodeRun]:
    """The node runs that were going at some moment of [since, until): started before its
    end and not completed before its start (one still going has not completed)."""
    if since is not None and until is not None and until <= since:
        raise DocumentError(f"until ({iso(until)}) must come after since ({iso(since)})", where="until")
    if until is not None:
        runs = runs.filter(started_at__lt=until)
    if since is not None:
        runs = runs.filter(Q(completed_at__gte=since) | Q(completed_at__isnull=True), started_at__isnull=False)
    return runs


def run_span(execution: Execution) -> tuple[datetime | None, datetime | None]:
    """When the run's first node run started and its last one completed (now, while one is
    going): two reads of an index, the first and the last entry."""
    runs = NodeRun.objects.filter(execution=execution, started_at__isnull=False)
    first = runs.order_by("started_at").values_list("started_at", flat=True).first()
    if first is None:
        return None, None
    going = execution.status in (Execution.Status.PENDING, Execution.Status.RUNNING, Execution.Status.WAITING)
    last = (timezone.now() if going else
            runs.filter(completed_at__isnull=False).order_by("-completed_at").values_list("completed_at", flat=True)
            .first())
    return first, max(first, last or first)


def timeline(execution: Execution, *, since: datetime | None = None, until: datetime | None = None,
             buckets: int = TIMELINE_BUCKETS) -> dict[str, Any]:
    """What the timeline draws of a window of the run (the whole run by default): each
    node's lane with its runs in the window counted in `buckets` equal slices of time, by
    status (a run counts in the slice it started in, or the first if it started before the
    window); and, when no more than TIMELINE_RUNS runs fall in the window, those runs
    themselves (light), to draw one by one. Bounded whatever the run's size: a grouped
    count over an index range, then at most TIMELINE_RUNS rows."""
    if not 1 <= buckets <= MAX_TIMELINE_BUCKETS:
        raise DocumentError(f"buckets must be between 1 and {MAX_TIMELINE_BUCKETS}, not {buckets}", where="buckets")
    start, end = run_span(execution)
    window = {"start": iso(start), "end": iso(end), "since": None, "until": None, "buckets": buckets, "bucket_ms": None,
              "total": 0, "lanes": [], "node_runs": []}
    if start is None:
        return window
    since = since or start
    until = until or max(end, since + timedelta(milliseconds=1))
    width = (until - since).total_seconds() / buckets
    runs = _in_window(NodeRun.objects.filter(execution=execution), since, until).order_by()
    grouped = (runs.annotate(bucket=Floor((Epoch("started_at") - since.timestamp()) / width))
               .values_list("node_id", "status", "bucket").annotate(n=Count("id")))
    lanes: dict[str, dict[str, Any]] = {}
    for node_id, status, bucket, n in grouped:
        lane = lanes.setdefault(node_id, {"node_id": node_id, "runs": 0, "buckets": {}})
        slot = lane["buckets"].setdefault(min(buckets - 1, max(0, int(bucket))), {})
        slot[status] = slot.get(status, 0) + n
        lane["runs"] += n
    total = sum(lane["runs"] for lane in lanes.values())
    window.update({"since": iso(since), "until": iso(until), "bucket_ms": width * 1000, "total": total,
                   "lanes": [{**lane, "buckets": [[index, counts] for index, counts in sorted(lane["buckets"].items())]}
                             for lane in lanes.values()],
                   "node_runs": ([light_record(row) for row in _light(runs.order_by("sequence", "id"))]
                                 if total <= TIMELINE_RUNS else None)})
    return window
