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

from django.db.models import Count, Max, Min, Q, QuerySet, Sum
from django.db.models.functions import Floor
from django.utils import timezone

from agents.backends.metering import usd
from core.api_support import Rendered
from core.db_functions import Epoch, ToolCallMarks
from core.errors import DocumentError
from core.jsonutil import iso
from executions.documents import node_run_record
from executions.models import Execution, NodeRun

# What a light node run is read with: what a table row, a timeline bar or an attempt's
# heading shows. The rest (prompt, context record, inputs, output …): `full=true`, or the
# node run by its id.
LIGHT_COLUMNS = ("id", "sequence", "node_id", "agent__agent_id", "agent_version__version", "kind", "round", "attempt",
                 "status", "error_code", "error", "worker", "backend", "model", "started_at", "completed_at",
                 "duration_ms", "tokens_in", "tokens_out", "dispatches", "call_count", "cost", "cost_complete",
                 "reused_from_id", "decide_by")
# What the summary reads of each node's latest run besides: what the page shows of a gate
# that waits, of a failure (BUDGET_EXCEEDED's figures) and of the transition it took, and
# its output (the node's §5 result).
LATEST_COLUMNS = (*LIGHT_COLUMNS, "error_details", "gate", "decision", "output")
TIMELINE_BUCKETS = 120  # the buckets a timeline window is counted in, unless asked otherwise
MAX_TIMELINE_BUCKETS = 1000
TIMELINE_RUNS = 400  # up to this many node runs in a window, the timeline gets them one by one


def _light(runs: QuerySet[NodeRun]) -> QuerySet:
    """`runs` as rows of LIGHT_COLUMNS."""
    return runs.values(*LIGHT_COLUMNS)


def light_record(row: dict[str, Any]) -> dict[str, Any]:
    """A node run's light record, from a row of LIGHT_COLUMNS."""
    return {
        "node_run_id": row["id"], "sequence": row["sequence"], "node_id": row["node_id"],
        "agent_ref": row["agent__agent_id"], "agent_version": row["agent_version__version"], "kind": row["kind"],
        "round": row["round"], "attempt": row["attempt"], "status": row["status"], "error_code": row["error_code"], "error": row["error"],
        "worker": row["worker"], "backend": row["backend"], "model": row["model"],
        "started_at": iso(row["started_at"]), "completed_at": iso(row["completed_at"]),
        "duration_ms": row["duration_ms"], "tokens_in": row["tokens_in"], "tokens_out": row["tokens_out"],
        "dispatches": row["dispatches"], "called": row["call_count"] > 0, "cost": usd(row["cost"]),
        "cost_complete": row["cost_complete"], "reused_from": row["reused_from_id"], "decide_by": iso(row["decide_by"]),
    }


def node_summary(execution: Execution) -> dict[str, Any]:
    """The run's node runs counted, by status; and for each node that ran, in the order it
    first ran: its runs by status, what they cost, the tokens they took, the nodes its runs'
    transitions chose (`next`: a state machine's), and its latest run, light, with its
    output, error details, gate and decision. Two queries whatever the number of node runs:
    one grouped read of the run's entries in an index (`noderun_node_status`, which holds
    every column it reads on PostgreSQL), and the latest runs by their sequence numbers."""
    runs = NodeRun.objects.filter(execution=execution).order_by()
    groups = (runs.values_list("node_id", "status", "next_node")
              .annotate(n=Count("*"), first=Min("sequence"), last=Max("sequence"), cost=Sum("cost"),
                        unpriced=Count("sequence", filter=Q(cost_complete=False)),
                        called=Count("sequence", filter=Q(call_count__gt=0)),
                        tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out")))
    counts = dict.fromkeys(NodeRun.Status.values, 0)
    nodes: dict[str, dict[str, Any]] = {}
    for node_id, status, next_node, n, first, last, cost, unpriced, called, tokens_in, tokens_out in groups:
        node = nodes.setdefault(node_id, {"node_id": node_id, "runs": 0, "counts": {}, "cost": 0, "cost_complete": True,
                                          "called": False, "tokens_in": 0, "tokens_out": 0, "next": set(),
                                          "first": first, "last": last})
        node["runs"] += n
        node["counts"][status] = node["counts"].get(status, 0) + n
        node["cost"] += cost or 0
        node["cost_complete"] = node["cost_complete"] and not unpriced
        node["called"] = node["called"] or bool(called)
        node["tokens_in"] += tokens_in or 0
        node["tokens_out"] += tokens_out or 0
        node["first"], node["last"] = min(node["first"], first), max(node["last"], last)
        if next_node and status == NodeRun.Status.SUCCESS:
            node["next"].add(next_node)
        counts[status] += n
    latest: dict[str, dict[str, Any]] = {}
    if nodes:
        wanted = {(node_id, node["last"]) for node_id, node in nodes.items()}
        rows = runs.filter(sequence__in={last for _, last in wanted}).values(*LATEST_COLUMNS)
        latest = {row["node_id"]: row for row in rows if (row["node_id"], row["sequence"]) in wanted}
    summary = []
    for node in sorted(nodes.values(), key=lambda node: node["first"]):
        row = latest[node["node_id"]]
        del node["first"], node["last"]
        node["cost"] = usd(node["cost"])
        node["next"] = sorted(node["next"])
        node["latest"] = {**light_record(row), "error_details": row["error_details"], "gate": row["gate"],
                          "decision": row["decision"], "output": row["output"]}
        summary.append(node)
    return {"total": sum(counts.values()), "counts": counts, "nodes": summary}


def node_runs_page(execution: Execution, *, node: str = "", status: str = "", kind: str = "",
                   since: datetime | None = None, until: datetime | None = None, newest_first: bool = False,
                   full: bool = False):
    """The run's node runs in the order they were made (newest first if asked), filtered by
    node, status, kind and a window of time (the runs that were going at some moment of
    it), for `Page` to slice and count: light records, or whole ones when `full`. A page is
    two queries: its ids, then its rows."""
    runs = NodeRun.objects.filter(execution=execution)
    if node:
        runs = runs.filter(node_id=node)
    if status:
        runs = runs.filter(status=status)
    if kind:
        runs = runs.filter(kind=kind)
    runs = _in_window(runs, since, until)
    runs = runs.order_by(*(("-sequence", "-id") if newest_first else ("sequence", "id")))
    return Rendered(runs.values_list("id", flat=True), lambda ids: _node_runs_by_id(ids, full))


def _node_runs_by_id(ids: list[int], full: bool) -> list[dict[str, Any]]:
    """The node runs of a page, in the page's order, read by their ids: a page far into a
    large run skips the runs before it in an index, not in the table."""
    runs = NodeRun.objects.filter(pk__in=ids)
    if full:
        found = {run.pk: node_run_record(run, with_id=True) for run in runs.select_related("agent", "agent_version")}
    else:
        found = {row["id"]: light_record(row) for row in _light(runs)}
    return [found[pk] for pk in ids if pk in found]


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
    themselves (light, with a mark for each tool call: `ToolCallMarks`), to draw one by one. Bounded whatever the run's size: a grouped
    count over an index range, then at most TIMELINE_RUNS rows."""
    if not 1 <= buckets <= MAX_TIMELINE_BUCKETS:
        raise DocumentError(f"buckets must be between 1 and {MAX_TIMELINE_BUCKETS}, not {buckets}", where="buckets")
    start, end = run_span(execution)
    window: dict[str, Any] = {"start": iso(start), "end": iso(end), "since": None, "until": None, "buckets": buckets, "bucket_ms": None,
              "total": 0, "lanes": [], "node_runs": []}
    if start is None or end is None:  # (run_span gives both or neither)
        return window
    since = since or start
    # The window is half-open: it ends just after the last run, so that a run that starts as
    # the last ends (a copy takes no time) is in it.
    if until is None:
        try:
            until = max(end, since) + timedelta(milliseconds=1)
        except OverflowError:  # `since` is the calendar's last millisecond: no window fits after it
            raise DocumentError(f"a window from {iso(since)} would end after the year 9999: give an earlier since",
                                where="since") from None
    width = (until - since).total_seconds() / buckets
    runs = _in_window(NodeRun.objects.filter(execution=execution), since, until).order_by()
    grouped = (runs.annotate(bucket=Floor((Epoch("started_at") - since.timestamp()) / width))
               .values_list("node_id", "status", "bucket").annotate(n=Count("*")))
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
                   "node_runs": ([{**light_record(row), "tool_call_marks": row["tool_call_marks"]} for row in
                                  _light(runs.order_by("sequence", "id")).annotate(
                                      tool_call_marks=ToolCallMarks("tool_calls"))]
                                 if total <= TIMELINE_RUNS else None)})
    return window
