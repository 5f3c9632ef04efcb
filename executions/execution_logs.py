"""The executions app's table for `db_query` data references (data-transfer-protocol §2.4).

knowledge owns the registry and imports no app above it, so this app registers its own
table from `ExecutionsConfig.ready()`.
"""
from executions.models import NodeRun
from knowledge.registry import register


def register_execution_logs_table() -> None:
    # A read-only view over node runs: what ran, how it went and what it cost (not a re-run's
    # copies of what another run did, nor a node tried alone). Prompts, inputs and outputs
    # stay out of it.
    register(
        "execution_logs",
        lambda: NodeRun.objects.filter(execution__trial=False).exclude(kind__in=NodeRun.COPIES),
        {
            "execution_id": "execution__execution_id",
            "workflow_id": "execution__workflow__workflow_id",
            "node_id": "node_id",
            "agent_id": "agent__agent_id",
            "agent_version": "agent_version__version",
            "status": "status",
            "attempt": "attempt",
            "sequence": "sequence",
            "backend": "backend",
            "model": "model",
            "tokens_in": "tokens_in",
            "tokens_out": "tokens_out",
            "duration_ms": "duration_ms",
            "started_at": "started_at",
            "ended_at": "completed_at",
            "error": "error",
        },
        "execution logs: one row per node run attempt",
    )
