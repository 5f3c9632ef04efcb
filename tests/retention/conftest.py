"""Runs made directly in the database, old enough for retention, with node runs of the demo's agents."""
from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from django.utils import timezone

from core.documents import import_documents
from demo.documents import AGENTS, PARALLEL_ANALYSIS, RELEASE_REVIEW
from executions.models import Execution, NodeRun
from tests.replay import replayed
from workflows.models import Workflow

_numbers = itertools.count(1)


@pytest.fixture(autouse=True)
def no_pause(settings):
    """The sweep rests between its transactions as deployed (RETENTION_PAUSE); not here."""
    settings.RETENTION_PAUSE = 0


@pytest.fixture
def demo(tmp_path, settings):
    """The demo's agents and two of its workflows."""
    settings.WORKSPACE_ROOT = tmp_path
    replayed("demo agents and two workflows", lambda: import_documents([*AGENTS, PARALLEL_ANALYSIS, RELEASE_REVIEW]))


def make_run(status: str = "success", *, days: float = 100, node_runs: int = 3, workflow: str = "parallel_analysis",
             parent: NodeRun | None = None, **fields) -> Execution:
    """An ended (or not) run created `days` ago with `node_runs` finished node runs, each with
    an output, a prompt and a context record, 1,000 tokens in and 100 out, costing 5 µ$."""
    created = timezone.now() - timedelta(days=days)
    execution = Execution.objects.create(
        execution_id=f"run_{next(_numbers)}", workflow=Workflow.objects.get(workflow_id=workflow), status=status,
        created_at=created, started_at=created, completed_at=created + timedelta(seconds=30), input={"repository": "a"},
        cost=node_runs * 5_000_000, parent_node_run=parent, depth=1 if parent else 0, **fields)
    agent = parent.agent_id if parent else _agent()
    NodeRun.objects.bulk_create([
        NodeRun(execution=execution, node_id=f"task_{i % 3}", agent_id=agent, status="success", sequence=i,
                output={"i": i}, prompt="the prompt", context_record={"context_limit": 4050}, tokens_in=1000,
                tokens_out=100, cost=5_000_000, calls=[{"purpose": "node", "cost": "0.000005"}],
                started_at=created, completed_at=created)
        for i in range(node_runs)])
    return execution


def _agent() -> int:
    from agents.models import Agent

    return Agent.objects.order_by("pk").values_list("pk", flat=True)[0]


def stored(*runs: Execution) -> list[bool]:
    """Whether each run's row is still there."""
    kept = set(Execution.objects.filter(pk__in=[run.pk for run in runs]).values_list("pk", flat=True))
    return [run.pk in kept for run in runs]
