"""Reads for executions, node runs, thought trees and evaluations, in the seeds' shapes.

Every read is a bounded number of queries, whatever the number of executions on a page or
of node runs in an execution: lists render a page at a time (`Rendered`), a run's record
summarises its node runs (`run_summary`), and its whole record is streamed a chunk at a time.
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth import get_user_model
from django.db.models import Count, Q, QuerySet, Sum
from django.urls import reverse

from agents.backends.metering import usd
from core.api_support import Rendered
from core.errors import NotFound
from core.jsonutil import iso
from core.snapshots import read_snapshot
from executions.documents import (
    child_of,
    evaluation_document,
    execution_head,
    node_run_record,
    node_run_result,
    thought_tree_document,
)
from executions.models import Evaluation, Execution, NodeRun, ThoughtSearch
from executions.run_summary import node_summary

STREAM_CHUNK = 500  # node runs read at a time when the whole record is streamed
EVALUATED = (Execution.Status.SUCCESS, Execution.Status.FAILED)  # the statuses a run is evaluated in


# -- executions ---------------------------------------------------------------------------


def executions_list(*, workflow: str | None = None, status: str | None = None,
                    started_after: datetime | None = None, started_before: datetime | None = None,
                    experiment: str | None = None, with_experiments: bool = False) -> Rendered:
    """Execution summaries, newest first: the §5 head, why the run ended, and its node runs
    counted by status (one grouped query per page, not one per execution). The times are
    aware (the API reads them as `UtcDatetime`). Experiments' runs only when asked for."""
    executions = listed_runs(Execution.objects.filter(trial=False), experiment=experiment,
                             with_experiments=with_experiments)
    if workflow:
        executions = executions.filter(workflow__workflow_id=workflow)
    if status:
        executions = executions.filter(status=status)
    if started_after:
        executions = executions.filter(started_at__gte=started_after)
    if started_before:
        executions = executions.filter(started_at__lt=started_before)
    rows = executions.values("pk", "execution_id", "workflow__workflow_id", "status", "started_at", "completed_at",
                             "ended_reason", "created_at", "created_by__username", "cost", "cost_complete")
    return Rendered(rows, _summaries)


def listed_runs(executions: QuerySet[Execution], *, experiment: str | None = None,
                with_experiments: bool = False) -> QuerySet[Execution]:
    """The runs a list shows: people's and the API's; one experiment's items (`experiment`), or
    all of them with the experiments' too (`with_experiments`)."""
    if experiment:
        return executions.filter(experiment=experiment)
    return executions if with_experiments else executions.filter(experiment="")


def node_run_counts(execution_pks: list[int]) -> dict[int, dict[str, int]]:
    """The node runs of a page of runs counted by status, in one grouped query."""
    counts: dict[int, dict[str, int]] = defaultdict(lambda: dict.fromkeys(NodeRun.Status.values, 0))
    if execution_pks:
        grouped = (NodeRun.objects.filter(execution_id__in=execution_pks).order_by()
                   .values_list("execution_id", "status").annotate(n=Count("id")))
        for execution_pk, status, n in grouped:
            counts[execution_pk][status] = n
    return counts


def listed_counts(execution_pks: list[int]) -> tuple[dict[int, dict[str, int]], set[int]]:
    """A page of runs' node runs by status, and which of them had their details removed by
    retention: those runs show the counts their stored summary keeps (`retained_summary`,
    retention's, read here by name), not the none that are left. One grouped query, and one
    more only when some run on the page has no node runs."""
    counts = node_run_counts(execution_pks)
    empty = [pk for pk in execution_pks if not any(counts[pk].values())]
    removed: set[int] = set()
    if empty:
        kept = (Execution.objects.filter(pk__in=empty, retained_summary__isnull=False)
                .values_list("pk", "retained_summary__summary"))
        for pk, summary in kept:
            counts[pk].update((summary or {}).get("node_runs", {}))
            removed.add(pk)
    return counts, removed


def _summaries(rows: list[dict]) -> list[dict[str, Any]]:
    counts, removed = listed_counts([row["pk"] for row in rows])
    return [
        {
            "execution_id": row["execution_id"],
            "workflow_ref": row["workflow__workflow_id"],
            "status": row["status"],
            "started_at": iso(row["started_at"]),
            "completed_at": iso(row["completed_at"]),
            "ended_reason": row["ended_reason"],
            "created_at": iso(row["created_at"]),
            "created_by": row["created_by__username"],
            "cost": usd(row["cost"]),
            "cost_complete": row["cost_complete"],
            "node_runs": counts[row["pk"]],
            "details_removed": row["pk"] in removed,
        }
        for row in rows
    ]


def execution_get(execution_id: str) -> Execution:
    execution = (Execution.objects.select_related("workflow", "rerun_of", "workflow_version",
                                                  "parent_node_run__execution")
                 .defer("workflow_version__document").filter(execution_id=execution_id).first())
    if execution is None:
        raise NotFound(f"execution '{execution_id}' does not exist", details={"where": "execution_id"})
    return execution


def execution_detail(execution: Execution) -> dict[str, Any]:
    """The run's record with its node runs summarised (`run_summary.node_summary`): its
    §5 `results` are each node's latest run. A bounded read and answer, whatever the run's
    size."""
    summary = node_summary(execution)
    return {**execution_head(execution, [node["latest"] for node in summary["nodes"]]),
            "node_runs_summary": {**summary, "url": reverse("api:node_runs_list", args=[execution.execution_id])},
            "details_removed": details_removed(execution, node_runs=summary["total"])}


def details_removed(execution: Execution, *, node_runs: int) -> dict[str, Any] | None:
    """What is left of a run whose details retention removed (its node runs, their outputs
    and context records): when, and its node runs, tokens and calls as they were; None for a
    run with its details. The retention app, a layer above, keeps them on the run's reverse
    one-to-one `retained_summary`, read here by name as the run page reads its experiment's
    item; only for a run with no node runs (`node_runs`, counted already), so that a run with
    its details costs no query more (one whose deletion is under way shows what is left)."""
    if node_runs:
        return None
    kept = getattr(execution, "retained_summary", None)
    if kept is None:
        return None
    summary = kept.summary
    return {"removed_at": iso(kept.removed_at), "complete": kept.complete,
            "node_runs": summary.get("node_runs", {}), "total": summary.get("total", 0),
            "nodes": summary.get("nodes", 0), "tokens_in": summary.get("tokens_in", 0),
            "tokens_out": summary.get("tokens_out", 0), "calls": summary.get("calls", 0),
            "message": f"The details of this run (its {summary.get('total', 0)} node runs, their outputs, prompts "
                       f"and context records) were removed by retention on {kept.removed_at:%Y-%m-%d}; its "
                       f"status, times, input, state, cost and evaluation are kept."}


def execution_record_stream(execution: Execution) -> Iterator[str]:
    """The record whole as JSON text, a piece at a time (`?node_runs=all`): the head, then
    every node run's §5 result, then every node run in full with its id, each read a chunk
    at a time. Both passes read one snapshot of the run (`read_snapshot`), so `results` and
    `node_runs` agree while it goes on; a slow reader holds no write lock meanwhile."""
    with read_snapshot():
        head = execution_head(execution, [])
        del head["results"]
        yield json.dumps(head, ensure_ascii=False)[:-1] + ', "results": ['
        runs = execution.node_runs.select_related("agent", "agent_version").order_by("sequence", "id")
        for index, run in enumerate(runs.iterator(chunk_size=STREAM_CHUNK)):
            yield ("," if index else "") + json.dumps(node_run_result(run), ensure_ascii=False)
        yield '], "node_runs": ['
        for index, run in enumerate(runs.iterator(chunk_size=STREAM_CHUNK)):
            yield ("," if index else "") + json.dumps(node_run_record(run, with_id=True), ensure_ascii=False)
        yield "]}"


def node_run_get(execution: Execution, node_run_id: int) -> dict[str, Any]:
    run = execution.node_runs.select_related("agent", "agent_version").filter(pk=node_run_id).first()
    if run is None:
        raise NotFound(f"execution '{execution.execution_id}' has no node run {node_run_id}",
                       details={"where": "node_run_id"})
    return {**node_run_record(run, with_id=True), "child_run": child_of(run)}


def thought_tree_get(execution: Execution, node_run_id: int) -> dict[str, Any]:
    """The ThoughtTree a node run's Tree-of-Thoughts search grew, whole, in the seed's shape."""
    search = ThoughtSearch.objects.filter(execution=execution, node_run_id=node_run_id).only("tree").first()
    if search is None:
        raise NotFound(f"execution '{execution.execution_id}' has no thought search for node run {node_run_id}",
                       details={"where": "node_run_id"})
    return thought_tree_document(search)


# -- evaluations --------------------------------------------------------------------------


def run_evaluation(execution: Execution):
    """The evaluation computed from a run when it ended, as a query (empty until a worker made it)."""
    return Evaluation.objects.filter(execution=execution, method=Evaluation.Method.COMPUTED,
                                     target_type=Evaluation.TargetType.EXECUTION)


def evaluation_out(evaluation: Evaluation) -> dict[str, Any]:
    """§7, plus when and by whom it was recorded."""
    return {**evaluation_document(evaluation), "method": evaluation.method,
            "execution_id": evaluation.execution.execution_id if evaluation.execution is not None else None,
            "details": evaluation.details, "created_at": iso(evaluation.created_at),
            "updated_at": iso(evaluation.updated_at), "created_by": evaluation.created_by}


def evaluations_list(*, target_type: str | None = None, target_id: str | None = None,
                     passed: bool | None = None, method: str | None = None) -> Rendered:
    evaluations = Evaluation.objects.select_related("execution")
    if target_type:
        evaluations = evaluations.filter(target_type=target_type)
    if target_id:
        evaluations = evaluations.filter(target_id=target_id)
    if passed is not None:
        evaluations = evaluations.filter(passed=passed)
    if method:
        evaluations = evaluations.filter(method=method)
    return Rendered(evaluations, lambda page: [evaluation_out(evaluation) for evaluation in page])


def evaluation_get(evaluation_id: str) -> dict[str, Any]:
    evaluation = Evaluation.objects.select_related("execution").filter(evaluation_id=evaluation_id).first()
    if evaluation is None:
        raise NotFound(f"evaluation '{evaluation_id}' does not exist", details={"where": "evaluation_id"})
    return evaluation_out(evaluation)


def pending_gates(ids: list[int]) -> list[dict[str, Any]]:
    """A page of waiting gates (node run ids, in the page's order) as the API lists them."""
    runs = NodeRun.objects.select_related("execution__workflow").in_bulk(ids)
    return [pending_gate(runs[pk]) for pk in ids if pk in runs]


def pending_gate(run: NodeRun) -> dict[str, Any]:
    """A waiting gate as the API lists it (`run` comes with its execution and workflow)."""
    gate: dict[str, Any] = run.gate or {}  # a waiting gate's node run always has its gate
    return {"execution_id": run.execution.execution_id, "workflow_ref": run.execution.workflow.workflow_id,
            "node_id": run.node_id, "node_run_id": run.pk, "prompt": gate["prompt"], "decisions": gate["decisions"],
            "deciders": gate["deciders"], "shown": gate["shown"], "missing": gate["missing"],
            "opened_at": iso(run.started_at), "decide_by": iso(run.decide_by), "on_timeout": gate["on_timeout"],
            "url": gate_url(run)}


def gate_url(run: NodeRun) -> str:
    """Where a person decides a gate: its run's page, at the form in the gate's panel (the page
    scrolls to it and focuses it)."""
    return (reverse("executions:detail", args=[run.execution.execution_id])
            + "?" + urlencode({"node": run.node_id, "run": run.pk}) + f"#decide-{run.pk}")


def user_get(username: str):
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise NotFound(f"user '{username}' does not exist", details={"where": "user"})
    return user


COST_HISTORY = 30  # runs a cost history shows by default


def cost_history(*, workflow=None, agent=None, limit: int = COST_HISTORY) -> list[dict[str, Any]]:
    """What the last `limit` runs of a workflow cost, or what an agent's node runs cost in each
    of its last `limit` runs (copies a re-run reused are the past run's), oldest first, each
    with its tokens, its calls not priced, and when it started. One query for a workflow's
    (its runs' rows, which retention's removal of details leaves); two for an agent's (its
    node runs, and the stored summaries of runs whose details were removed)."""
    if workflow is not None:
        rows = (Execution.objects.filter(workflow=workflow, trial=False, experiment="").order_by("-created_at", "-id")
                .values("execution_id", "started_at", "status", "cost", "cost_complete")[:limit])
        return [{"execution_id": row["execution_id"], "started_at": iso(row["started_at"]), "status": row["status"],
                 "cost": usd(row["cost"]), "cost_complete": row["cost_complete"]} for row in reversed(rows)]
    runs = (NodeRun.objects.filter(agent=agent, execution__trial=False, execution__experiment="").exclude(kind__in=NodeRun.COPIES)
            .exclude(execution__retained_summary__isnull=False)
            .values("execution__execution_id", "execution__started_at", "execution__status")
            .annotate(cost=Sum("cost"), incomplete=Count("id", filter=Q(cost_complete=False)),
                      tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out"))
            .order_by("-execution__started_at", "-execution__execution_id")[:limit])
    merged: list[dict[str, Any]] = [
        {"execution_id": row["execution__execution_id"], "started_at": row["execution__started_at"],
         "status": row["execution__status"], "cost": row["cost"] or 0, "incomplete": row["incomplete"],
         "tokens_in": row["tokens_in"] or 0, "tokens_out": row["tokens_out"] or 0} for row in runs]
    merged += _removed_agent_costs(agent, limit)  # its runs whose details retention removed
    merged = sorted(merged, key=lambda row: (row["started_at"] is not None, row["started_at"] or 0,
                                             row["execution_id"]), reverse=True)[:limit]
    return [{"execution_id": row["execution_id"], "started_at": iso(row["started_at"]), "status": row["status"],
             "cost": usd(row["cost"]), "cost_complete": not row["incomplete"], "tokens_in": row["tokens_in"],
             "tokens_out": row["tokens_out"]} for row in reversed(merged)]


def _removed_agent_costs(agent, limit: int) -> list[dict[str, Any]]:
    """What an agent's node runs cost in its last `limit` runs whose details retention
    removed: read from each run's stored summary (retention keeps each agent's cost and
    tokens there, under `agents`), so that the agent's costs stay as they were. One query."""
    key = str(agent.pk)
    runs = (Execution.objects.filter(trial=False, experiment="", retained_summary__summary__agents__has_key=key)
            .order_by("-started_at", "-execution_id")
            .values_list("execution_id", "started_at", "status", "retained_summary__summary")[:limit])
    return [{"execution_id": execution_id, "started_at": started_at, "status": status,
             **{name: summary["agents"][key].get(name, 0) for name in ("cost", "incomplete", "tokens_in", "tokens_out")}}
            for execution_id, started_at, status, summary in runs]
