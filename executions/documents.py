"""JSON forms of executions (core-data-structures §5) and evaluations (§7)."""
from __future__ import annotations

from typing import Any

from agents.documents import ID
from core.jsonutil import MAX_COLUMN_INT, iso
from executions.models import Evaluation, Execution, NodeRun

UNIT = {"type": "number", "minimum": 0, "maximum": 1}
DATETIME = {"type": ["string", "null"]}

EXECUTION_SHAPE: dict[str, Any] = {
    "type": "object",
    "required": ["execution_id", "workflow_ref", "status"],
    "additionalProperties": False,
    "properties": {
        "execution_id": ID,
        "workflow_ref": ID,
        "status": {"enum": [choice for choice, _ in Execution.Status.choices]},
        "started_at": DATETIME,
        "completed_at": DATETIME,
        "input": {"type": "object"},
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["node_id", "agent_ref", "status"],
                "additionalProperties": False,
                "properties": {
                    "node_id": ID,
                    "agent_ref": ID,
                    "status": {"enum": ["pending", "running", "success", "failed", "skipped", "cancelled"]},
                    "output": {},
                    "duration_ms": {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_COLUMN_INT},
                },
            },
        },
    },
}

EVALUATION_SHAPE: dict[str, Any] = {
    "type": "object",
    "required": ["evaluation_id", "target_type", "target_id", "scores", "overall_score", "pass", "action"],
    "additionalProperties": False,
    "properties": {
        "evaluation_id": ID,
        "target_type": {"enum": ["execution", "agent", "workflow"]},
        "target_id": ID,
        "scores": {
            "type": "object",
            "required": ["accuracy", "completeness", "efficiency"],
            "additionalProperties": False,
            "properties": {"accuracy": UNIT, "completeness": UNIT, "efficiency": UNIT},
        },
        "overall_score": UNIT,
        "pass": {"type": "boolean"},
        "feedback": {"type": "array", "items": {"type": "string"}},
        "action": {"enum": ["approve", "reject", "revise"]},
    },
}


def execution_document(execution: Execution) -> dict[str, Any]:
    document: dict[str, Any] = {
        "execution_id": execution.execution_id,
        "workflow_ref": execution.workflow.workflow_id,
        "status": execution.status,
        "started_at": iso(execution.started_at),
        "completed_at": iso(execution.completed_at),
    }
    if execution.input:
        document["input"] = execution.input
    document["results"] = [
        {
            "node_id": run.node_id,
            "agent_ref": run.agent.agent_id,
            "status": run.status,
            "output": run.output,
            "duration_ms": run.duration_ms,
        }
        for run in execution.node_runs.select_related("agent")
    ]
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


def node_run_record(run: NodeRun) -> dict[str, Any]:
    """Everything stored about one node run: what the inspection page and `run_workflow --wait` show."""
    return {
        "node_id": run.node_id,
        "agent_ref": run.agent.agent_id,
        "agent_version": run.agent_version.version if run.agent_version else None,
        "kind": run.kind,
        "attempt": run.attempt,
        "status": run.status,
        "error_code": run.error_code,
        "error": run.error,
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
        "prompt": run.prompt,
        "output": run.output,
    }


def execution_record(execution: Execution) -> dict[str, Any]:
    """The §5 document plus the run's state, why it ended, its domain and quality gate, and
    every node run in full."""
    return {
        **execution_document(execution),
        "state": execution.state,
        "ended_reason": execution.ended_reason,
        "escalation": execution.escalation,
        "domain": execution.domain,
        "quality_gate": execution.quality_gate,
        "node_runs": [node_run_record(run) for run in execution.node_runs.select_related("agent", "agent_version")],
    }
