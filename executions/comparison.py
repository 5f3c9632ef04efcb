"""Two runs of one workflow compared: what the API's `GET /api/executions/compare`, the
command `compare_executions` and the compare page show.

The rows are read here in a fixed number of queries whatever the number of node runs (both
runs in one, their node runs in one with the agent versions joined, their evaluations in
one, and the workflow's graph); the comparison itself is `engine.comparison`'s.
"""
from __future__ import annotations

from typing import Any

from core.errors import DocumentError, NotFound
from core.jsonutil import iso
from engine.comparison import compare_runs
from executions.models import Evaluation, Execution, NodeRun
from executions.page_selectors import workflow_graph

# What the comparison reads of a node run (`agent` and `agent_version` through joins).
NODE_RUN_FIELDS = {
    "id": "pk", "node_id": "node_id", "kind": "kind", "attempt": "attempt",
    "status": "status", "error_code": "error_code", "duration_ms": "duration_ms", "tokens_in": "tokens_in",
    "tokens_out": "tokens_out", "agent": "agent__agent_id", "agent_version": "agent_version__version",
    "output": "output", "context_record": "context_record", "resolved_inputs": "resolved_inputs",
    "resolution_failures": "resolution_failures",
}
SCORE_FIELDS = ("evaluation_id", "accuracy", "completeness", "efficiency", "overall_score", "passed")


def executions_for_comparison(a_id: str, b_id: str) -> tuple[Execution, Execution]:
    """Both runs in one query, with their workflow and the run each was re-run from; NotFound
    names the one that does not exist (`where` "a" or "b", the parameter that named it)."""
    found = {execution.execution_id: execution for execution in
             Execution.objects.select_related("workflow", "rerun_of").filter(execution_id__in={a_id, b_id})}
    for where, execution_id in (("a", a_id), ("b", b_id)):
        if execution_id not in found:
            raise NotFound(f"execution '{execution_id}' does not exist", details={"where": where})
    return found[a_id], found[b_id]


def execution_comparison(a: Execution, b: Execution) -> dict[str, Any]:
    """Runs a and b of one workflow (trials too) compared: each run's summary (status, times,
    tokens, the run it was re-run from, its evaluation's scores), the workflow's graph to draw
    them on, and `engine.comparison.compare_runs`'s pairs, nodes and counts. Runs of two
    workflows are refused: their nodes are not the same nodes."""
    if a.workflow_id != b.workflow_id:
        raise DocumentError(
            f"execution '{a.execution_id}' is a run of workflow '{a.workflow.workflow_id}' and execution "
            f"'{b.execution_id}' of workflow '{b.workflow.workflow_id}': only runs of one workflow can be compared",
            where="b")
    runs: dict[int, list[dict[str, Any]]] = {a.pk: [], b.pk: []}
    rows = (NodeRun.objects.filter(execution_id__in=runs).order_by("execution_id", "sequence", "id")
            .values("execution_id", *NODE_RUN_FIELDS.values()))
    for row in rows:
        runs[row["execution_id"]].append({name: row[column] for name, column in NODE_RUN_FIELDS.items()})
    scores = {row.pop("execution_id"): row for row in
              Evaluation.objects.filter(execution_id__in=runs, method=Evaluation.Method.COMPUTED,
                                        target_type=Evaluation.TargetType.EXECUTION)
              .values("execution_id", *SCORE_FIELDS)}
    return {
        "a": _summary(a, runs[a.pk], scores.get(a.pk)),
        "b": _summary(b, runs[b.pk], scores.get(b.pk)),
        "workflow": {"workflow_id": a.workflow.workflow_id, "name": a.workflow.name, "topology": a.workflow.topology},
        # Each run drawn as the version it ran (two queries; two more when their versions differ).
        "graphs": {"a": (graph_a := workflow_graph(a.workflow, a.workflow_version_id)),
                   "b": graph_a if b.workflow_version_id == a.workflow_version_id
                   else workflow_graph(b.workflow, b.workflow_version_id)},
        **compare_runs(runs[a.pk], runs[b.pk]),
    }


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
        "rerun_of": execution.rerun_of.execution_id if execution.rerun_of_id else None,
        "rerun_from_node": rerun.get("from_node") if execution.rerun_of_id else None,
        "evaluation": evaluation,
    }
