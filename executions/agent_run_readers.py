"""The runs and evaluations agents' pages show, read here and handed to
`agents.run_readers` from `ExecutionsConfig.ready()` (agents sits below executions and
does not import it).

Each read is one query for the window and one for the count, whatever the number of runs.
"""
from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from agents.models import Agent
from agents.run_readers import RunReaders, register_run_readers
from executions.models import Evaluation, Execution, NodeRun


def agent_executions(agent: Agent, limit: int) -> dict[str, Any]:
    """The runs the agent took part in (it ran at least one node), newest first, with how
    many of their node runs were its own."""
    own = Q(node_runs__agent=agent, node_runs__kind__in=NodeRun.RAN)
    took_part = Execution.objects.filter(own, trial=False, experiment="")
    runs = (Execution.objects.filter(pk__in=took_part.values("pk"))
            .select_related("workflow")
            .annotate(agent_runs=Count("node_runs", filter=own))
            .order_by("-created_at", "-id")[:limit])
    return {"rows": list(runs), "total": took_part.values("pk").distinct().count()}


def agent_evaluations(agent: Agent, limit: int) -> dict[str, Any]:
    """Evaluations of the agent itself and of the runs it took part in, newest first."""
    runs = NodeRun.objects.filter(agent=agent, execution__trial=False, execution__experiment="").values("execution__execution_id")
    evaluations = Evaluation.objects.filter(Q(target_type="agent", target_id=agent.agent_id)
                                            | Q(target_type="execution", target_id__in=runs))
    return {"rows": list(evaluations.order_by("-created_at", "-id")[:limit]), "total": evaluations.count()}


def register_agent_run_readers() -> None:
    register_run_readers(RunReaders(agent_executions=agent_executions, agent_evaluations=agent_evaluations))
