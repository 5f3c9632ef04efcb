"""Exports of executions (core-data-structures §5), evaluations (§7) and the thought trees of
Tree-of-Thoughts searches (tot-protocol) in their JSON forms,
and the record of a run the API and `run_workflow --wait` show; the shapes themselves are
in `executions/schemas.py`."""
from __future__ import annotations

from typing import Any

from agents.backends.metering import usd
from core.jsonutil import iso
from executions.models import Evaluation, Execution, NodeRun, ThoughtSearch
from executions.schemas import ExecutionDocument, ExecutionResult

# The §5 shape under the name the execution import reads it by.
EXECUTION_SHAPE = ExecutionDocument
RESULT_KEYS = tuple(ExecutionResult.model_fields)  # what a §5 `results[]` entry holds of a node run
# Keys of a `results[]` entry only a node whose agent has tools has: left out when empty, so
# that the entry of any other node run is the seed's.
CONVERSATION_KEYS = ("turns", "tool_calls")


def node_run_result(run: NodeRun) -> dict[str, Any]:
    """A §5 `results[]` entry."""
    return result_entry({"node_id": run.node_id, "agent_ref": run.agent.agent_id, "status": run.status,
                         "output": run.output, "duration_ms": run.duration_ms, "turns": run.turns,
                         "tool_calls": run.tool_calls})


def result_entry(run: dict[str, Any]) -> dict[str, Any]:
    """A §5 `results[]` entry from a node run's record (whole, or light with its output):
    its turns and tool calls when it has any."""
    return {key: run.get(key) for key in RESULT_KEYS if key not in CONVERSATION_KEYS or run.get(key)}


def execution_document(execution: Execution, node_runs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The §5 document. `node_runs`: the run's node run records when the caller has read them
    already, so that `results` is made from the same read; else the node runs are read here."""
    if node_runs is None:
        node_runs = [node_run_result(run) for run in execution.node_runs.select_related("agent")]
    document: dict[str, Any] = {
        "execution_id": execution.execution_id,
        "workflow_ref": execution.workflow.workflow_id,
        "status": execution.status,
        "started_at": iso(execution.started_at),
        "completed_at": iso(execution.completed_at),
    }
    if execution.input:
        document["input"] = execution.input
    document["results"] = [result_entry(run) for run in node_runs]
    return document


def evaluation_document(evaluation: Evaluation) -> dict[str, Any]:
    return {
        "evaluation_id": evaluation.evaluation_id,
        "target_type": evaluation.target_type,
        "target_id": evaluation.target_id,
        "scores": {
            "accuracy": evaluation.accuracy,
            "completeness": evaluation.completeness,
            "efficiency": evaluation.efficiency,
        },
        "overall_score": evaluation.overall_score,
        "pass": evaluation.passed,
        "feedback": evaluation.feedback,
        "action": evaluation.action,
    }


def thought_tree_document(search: ThoughtSearch) -> dict[str, Any]:
    """The ThoughtTree the search grew, whole and in the seed's shape: task_id, problem,
    task_type, search_config, nodes, root_id, search_state."""
    return search.tree


def node_run_record(run: NodeRun, *, with_id: bool = False) -> dict[str, Any]:
    """Everything stored about one node run: what the inspection page and `run_workflow --wait`
    show; `with_id` adds the node run's id (which the API's `GET …/node-runs/{id}` takes)."""
    return {
        **({"node_run_id": run.pk} if with_id else {}),
        "sequence": run.sequence,
        "node_id": run.node_id,
        "agent_ref": run.agent.agent_id,
        "agent_version": run.agent_version.version if run.agent_version else None,
        "kind": run.kind,
        "round": run.round,
        "attempt": run.attempt,
        "status": run.status,
        "error_code": run.error_code,
        "error": run.error,
        "error_details": run.error_details,
        "worker": run.worker,
        "backend": run.backend,
        "model": run.model,
        "started_at": iso(run.started_at),
        "completed_at": iso(run.completed_at),
        "duration_ms": run.duration_ms,
        "tokens_in": run.tokens_in,
        "tokens_out": run.tokens_out,
        "dispatches": run.dispatches,
        "context_management": run.context_record,
        "resolution_failures": run.resolution_failures,
        "resolved_inputs": run.resolved_inputs,
        "compression": run.compression,
        "decision": run.decision,
        "reused_from": run.reused_from_id,
        "gate": run.gate,
        "decide_by": iso(run.decide_by),
        "called": bool(run.calls),
        "calls": run.calls,
        "cost": usd(run.cost),
        "cost_complete": run.cost_complete,
        "turns": run.turns,
        "tool_calls": run.tool_calls,
        "prompt": run.prompt,
        "output": run.output,
    }


def execution_head(execution: Execution, results: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The §5 document (its `results` made from the node run records given) plus the run's
    state, why it ended, its domain, quality gate, re-runs and cost: everything of the
    record but its node runs."""
    return {
        **execution_document(execution, results or []),
        "state": execution.state,
        "ended_reason": execution.ended_reason,
        "escalation": execution.escalation,
        "domain": execution.domain,
        "workflow_version": execution.workflow_version.number if execution.workflow_version is not None else None,
        "quality_gate": execution.quality_gate,
        "rerun_of": execution.rerun_of.execution_id if execution.rerun_of is not None else None,
        "rerun": execution.rerun,
        "parent": parent_of(execution),
        "copying": execution.copy_progress,
        "trial": execution.trial,
        "experiment": execution.experiment or None,
        "agent_overrides": execution.agent_overrides,
        "reruns": list(execution.reruns.order_by("created_at", "id").values_list("execution_id", flat=True)),
        "cost": usd(execution.cost),
        "cost_complete": execution.cost_complete,
        "calls": execution.calls,
    }


def parent_of(execution: Execution) -> dict[str, Any] | None:
    """A child run's parent (engine/subworkflows.py): the run and the node run that started it."""
    run = execution.parent_node_run
    if run is None:
        return None
    return {"execution_id": run.execution.execution_id, "node_id": run.node_id, "node_run_id": run.pk}


def child_of(run: NodeRun) -> dict[str, Any] | None:
    """The child run a sub-workflow node's run started (None: it started none)."""
    child = run.children.select_related("workflow").order_by("-id").first()
    if child is None:
        return None
    return {"execution_id": child.execution_id, "workflow_id": child.workflow.workflow_id, "status": child.status,
            "cost": usd(child.cost)}


def execution_record(execution: Execution, *, node_run_ids: bool = False) -> dict[str, Any]:
    """The record whole: the head and every node run in full (with its id when
    `node_run_ids`), as `run_workflow --wait` prints it.

    The node runs are read once, so `results` and `node_runs` agree while the run goes on."""
    runs = [node_run_record(run, with_id=node_run_ids)
            for run in execution.node_runs.select_related("agent", "agent_version")]
    return {**execution_head(execution, runs), "node_runs": runs}
