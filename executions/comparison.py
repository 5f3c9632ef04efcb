"""Two runs of one workflow compared: what the API's `GET /api/executions/compare`, the
command `compare_executions` and the compare page show.

Two runs of 100,000 node runs cannot be compared whole in one answer: their outputs and
context records weigh hundreds of MB. So the comparison is made in two halves:

1. The light half (`runs_aligned`): every node run of both runs is read with its light
   fields only — node, kind, attempt, status, error, duration, tokens, agent and agent
   version, and `compared_digest`, the md5 the database keeps of the JSON text of its
   output and context decisions — in one query, from one index on PostgreSQL
   (`noderun_sequence`, which includes them). Then
   `engine.comparison.align_runs` pairs them and judges each pair on those fields. Every
   count, every node's verdict, and the filters (`verdict`, `node`) come from this half, so
   they are the same whichever page is shown.
2. The heavy half (`comparison_page`): only the pairs shown — a page of the pairs the
   filters keep — are compared in full: their node runs' heavy fields are read by id and
   `engine.comparison.compare_aligned` gives the output's JSON diff, the context
   decisions and the tool calls side by side. The answer says which pairs those are (`page`).

A pair whose light fields are the same but whose digests are not cannot be judged by the
light half: its heavy fields may be one JSON value written two ways (1 and 1.0; keys in
another order, as SQLite keeps the text as written) or differ only where nothing is
compared (a resolution failure's message). The first SETTLE_LIMIT such pairs, in the
pairs' order, are compared in full to settle their verdict; any after them are counted
`unverified`, never guessed. The command compares every pair (`comparison_in_full`),
reading the heavy fields a chunk at a time and writing each pair as it goes.

Every answer takes a fixed number of queries whatever the number of node runs: both runs,
their node runs' light fields, the agents and agent versions they name, their
evaluations, the workflow's graph (two queries per version drawn), and the heavy fields of
at most SETTLE_LIMIT pairs and a page (the API allows 500 pairs) in chunks of CHUNK node
runs.
"""
from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from agents.models import Agent, AgentVersion
from core.errors import DocumentError, NotFound
from core.jsonutil import iso
from engine.comparison import HEAVY_FIELDS, align_runs, compare_aligned, settled_verdict, summarise
from executions.models import Evaluation, Execution, NodeRun
from executions.page_selectors import workflow_graph
from executions.run_details import refuse_marked, with_marks

# Pairs compared in full in one answer, unless asked for another number.
PAGE_SIZE = 50
# Pairs the light half could not judge that one answer compares in full to settle them.
SETTLE_LIMIT = 1000
# Node runs whose heavy fields one query reads.
CHUNK = 500
# The `verdict` filter's values besides the verdicts themselves: every pair not the same.
NOT_SAME = "not_same"

# What the light half reads of each node run, as the engine names it (`agent` and
# `agent_version` are read as ids, then named from one query each).
LIGHT_COLUMNS = {
    "id": "pk", "node_id": "node_id", "kind": "kind", "attempt": "attempt", "status": "status",
    "error_code": "error_code", "duration_ms": "duration_ms", "tokens_in": "tokens_in", "tokens_out": "tokens_out",
    "agent": "agent_id", "agent_version": "agent_version_id", "digest": "compared_digest",
}
SCORE_FIELDS = ("evaluation_id", "accuracy", "completeness", "efficiency", "overall_score", "passed")


def executions_for_comparison(a_id: str, b_id: str) -> tuple[Execution, Execution]:
    """Both runs in one query, with their workflow and the run each was re-run from; NotFound
    names the one that does not exist (`where` "a" or "b", the parameter that named it)."""
    found = {execution.execution_id: execution for execution in
             with_marks(Execution.objects.select_related("workflow", "rerun_of")).filter(execution_id__in={a_id, b_id})}
    for where, execution_id in (("a", a_id), ("b", b_id)):
        if execution_id not in found:
            raise NotFound(f"execution '{execution_id}' does not exist", details={"where": where})
    for execution_id in (a_id, b_id):  # a run whose node runs retention removed: 409 DETAILS_REMOVED
        refuse_marked(found[execution_id], operation="compared")
    return found[a_id], found[b_id]


@dataclass
class Aligned:
    """The light half of a comparison: `head` (each run's summary, the workflow, the graphs
    to draw), the pairs of `engine.comparison.align_runs` (their runs hold the light fields
    only) with their verdicts, and each node's verdict and the counts (`summary`, once the
    verdicts are settled)."""

    head: dict[str, Any]
    pairs: list[dict[str, Any]]
    summary: dict[str, Any]

    def matching(self, *, verdict: str | None = None, node: str | None = None) -> list[dict[str, Any]]:
        """The pairs the filters keep, in order: `verdict` one of the verdicts or NOT_SAME,
        `node` a node id; None keeps every pair."""
        return [pair for pair in self.pairs
                if (node is None or pair["node_id"] == node)
                and (verdict is None or (pair["verdict"] != "same" if verdict == NOT_SAME else pair["verdict"] == verdict))]


def runs_aligned(a: Execution, b: Execution, *, settle: bool = True) -> Aligned:
    """The light half of comparing runs a and b of one workflow (trials too); runs of two
    workflows are refused: their nodes are not the same nodes. With `settle`, the first
    SETTLE_LIMIT pairs the light fields cannot judge are compared in full and the others
    are `unverified`; without, their verdict is left None (for `comparison_in_full`, which
    compares every pair)."""
    if a.workflow_id != b.workflow_id:
        raise DocumentError(
            f"execution '{a.execution_id}' is a run of workflow '{a.workflow.workflow_id}' and execution "
            f"'{b.execution_id}' of workflow '{b.workflow.workflow_id}': only runs of one workflow can be compared",
            where="b")
    with _collector_paused():
        runs = _light_runs(a, b)
        pairs = align_runs(runs[a.pk], runs[b.pk])
    scores = {row.pop("execution_id"): row for row in
              Evaluation.objects.filter(execution_id__in=runs, method=Evaluation.Method.COMPUTED,
                                        target_type=Evaluation.TargetType.EXECUTION)
              .values("execution_id", *SCORE_FIELDS)}
    head = {
        "a": _summary(a, runs[a.pk], scores.get(a.pk)),
        "b": _summary(b, runs[b.pk], scores.get(b.pk)),
        "workflow": {"workflow_id": a.workflow.workflow_id, "name": a.workflow.name, "topology": a.workflow.topology},
        # Each run drawn as the version it ran (two queries; two more when their versions differ).
        "graphs": {"a": (graph_a := workflow_graph(a.workflow, a.workflow_version_id)),
                   "b": graph_a if b.workflow_version_id == a.workflow_version_id
                   else workflow_graph(b.workflow, b.workflow_version_id)},
    }
    if settle:
        _settle([pair for pair in pairs if pair["verdict"] is None])
    return Aligned(head=head, pairs=pairs, summary=summarise(pairs) if settle else {})


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused: the light half makes a few objects per node
    run, hundreds of thousands for two runs of 100,000, none in a reference cycle, and the
    collector would walk them again and again as they pile up (a third of the time,
    measured). They are freed by reference counting as ever."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _light_runs(a: Execution, b: Execution) -> dict[int, list[dict[str, Any]]]:
    """Both runs' node runs, light fields only, in the order they were made (one query, and
    one each for the agents and agent versions they name, read once however many runs name
    them)."""
    names = ("execution", *LIGHT_COLUMNS)
    runs: dict[int, list[dict[str, Any]]] = {a.pk: [], b.pk: []}
    rows = (NodeRun.objects.filter(execution_id__in=runs).order_by("execution_id", "sequence", "id")
            .values_list("execution_id", *LIGHT_COLUMNS.values()))
    shared: dict[Any, Any] = {}  # one string object for each repeated text: 200,000 runs name a few nodes
    for row in rows:
        run = dict(zip(names, row, strict=True))
        for name in ("node_id", "kind", "status", "error_code"):
            run[name] = shared.setdefault(run[name], run[name])
        runs[run.pop("execution")].append(run)
    every = [run for side in runs.values() for run in side]
    agents = dict(Agent.objects.filter(pk__in={run["agent"] for run in every}).values_list("pk", "agent_id"))
    version_ids = {run["agent_version"] for run in every} - {None}
    versions = dict(AgentVersion.objects.filter(pk__in=version_ids).values_list("pk", "version")) if version_ids else {}
    for run in every:
        run["agent"] = agents[run["agent"]]
        run["agent_version"] = versions.get(run["agent_version"])
    return runs


def _chunks(items: Sequence, size: int) -> Iterator[Sequence]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _heavy(pairs: Sequence[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The heavy fields of both runs of each pair, by node run id, CHUNK node runs a query."""
    ids = sorted({pair[side]["id"] for pair in pairs for side in ("a", "b") if pair[side] is not None})
    heavy: dict[int, dict[str, Any]] = {}
    for chunk in _chunks(ids, CHUNK):
        for pk, *values in NodeRun.objects.filter(pk__in=chunk).order_by().values_list("pk", *HEAVY_FIELDS):
            heavy[pk] = dict(zip(HEAVY_FIELDS, values, strict=True))
    return heavy


def _sides(pair: dict[str, Any], heavy: dict[int, dict[str, Any]]) -> tuple[dict | None, dict | None]:
    a, b = (None if pair[side] is None else heavy[pair[side]["id"]] for side in ("a", "b"))
    return a, b


def _settle(open_pairs: list[dict[str, Any]]) -> None:
    """Settle the verdict of the first SETTLE_LIMIT pairs from their heavy fields; mark the
    rest `unverified`."""
    settled = open_pairs[:SETTLE_LIMIT]
    heavy = _heavy(settled)
    for pair in settled:
        pair["verdict"] = settled_verdict(pair, *_sides(pair, heavy))
    for pair in open_pairs[SETTLE_LIMIT:]:
        pair["verdict"] = "unverified"


def comparison_page(aligned: Aligned, *, offset: int = 0, limit: int = PAGE_SIZE, verdict: str | None = None,
                    node: str | None = None) -> dict[str, Any]:
    """The comparison as the API and the page give it: `head`, each node's verdict and the
    counts over all pairs (from the light half), and `pairs`: the `limit` pairs from
    `offset` among those the filters keep, each compared in full. `page` says which those
    are: {offset, limit, count (the pairs the filters keep), verdict, node}; each pair's
    `index` is its place among all pairs."""
    matching = aligned.matching(verdict=verdict, node=node)
    shown = matching[offset:offset + limit]
    heavy = _heavy(shown)
    return {
        **aligned.head,
        **aligned.summary,
        "page": {"offset": offset, "limit": limit, "count": len(matching), "verdict": verdict, "node": node},
        "pairs": [compare_aligned(pair, *_sides(pair, heavy)) for pair in shown],
    }


def execution_comparison(a: Execution, b: Execution, **page: Any) -> dict[str, Any]:
    """Runs a and b compared: `runs_aligned`, then `comparison_page` with `page`'s offset,
    limit and filters."""
    return comparison_page(runs_aligned(a, b), **page)


def comparison_in_full(a: Execution, b: Execution) -> Iterator[tuple[str, Any]]:
    """The whole comparison, every pair compared in full, as (member, value) in the order to
    write them: the head's members, then `pairs` — an iterator that reads the heavy fields
    CHUNK node runs at a time, so that memory holds one chunk whatever the runs' size —
    then `nodes` and `counts`, known once every pair is settled (so a writer must exhaust
    `pairs` before asking for the next member), then `page` (every pair, no filter)."""
    aligned = runs_aligned(a, b, settle=False)
    yield from aligned.head.items()

    def pairs() -> Iterator[dict[str, Any]]:
        for chunk in _chunks(aligned.pairs, CHUNK // 2):
            heavy = _heavy(chunk)
            for pair in chunk:
                compared = compare_aligned(pair, *_sides(pair, heavy))
                pair["verdict"] = compared["verdict"]
                yield compared

    yield "pairs", pairs()
    yield from summarise(aligned.pairs).items()
    count = len(aligned.pairs)
    yield "page", {"offset": 0, "limit": count, "count": count, "verdict": None, "node": None}


def _summary(execution: Execution, runs: list[dict[str, Any]], evaluation: dict[str, Any] | None) -> dict[str, Any]:
    started, completed = execution.started_at, execution.completed_at
    rerun = execution.rerun if isinstance(execution.rerun, dict) else {}
    return {
        "execution_id": execution.execution_id,
        "workflow_id": execution.workflow.workflow_id,
        "status": execution.status,
        "trial": execution.trial,
        "started_at": iso(started),
        "completed_at": iso(completed),
        "duration_ms": round((completed - started).total_seconds() * 1000) if started and completed else None,
        "node_runs": len(runs),
        "tokens_in": sum(run["tokens_in"] or 0 for run in runs),
        "tokens_out": sum(run["tokens_out"] or 0 for run in runs),
        "rerun_of": execution.rerun_of.execution_id if execution.rerun_of is not None else None,
        "rerun_from_node": rerun.get("from_node") if execution.rerun_of_id else None,
        "evaluation": evaluation,
    }
