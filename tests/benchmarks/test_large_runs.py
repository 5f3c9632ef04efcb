"""The large runs the page benchmark and the query-plan tests write: realistic records, in order."""
import json
from datetime import timedelta
from itertools import pairwise

import pytest
from django.utils import timezone

from benchmarks.large_runs import (
    LAST_RUN_STATUS,
    LOOP,
    large_run_create,
    light_executions_create,
    loop_workflow_create,
)
from executions.models import Execution, NodeRun
from workflows.models import Workflow

pytestmark = pytest.mark.django_db


def size(value) -> int:
    return len(value if isinstance(value, str) else json.dumps(value))


def test_it_imports_a_gateless_loop_of_six_nodes_on_builtin_agents():
    workflow = loop_workflow_create(workflow_id="loop_a")
    assert workflow.topology == Workflow.Topology.STATE_MACHINE and workflow.max_steps == 100_000
    nodes = list(workflow.nodes.order_by("position").values_list("node_id", "agent__agent_id", "gate"))
    assert [node_id for node_id, _, _ in nodes] == list(LOOP)
    assert all(agent == f"loop_a_{node_id}" and not gate for node_id, agent, gate in nodes)
    edges = set(workflow.transitions.values_list("from_node", "to_node"))
    assert edges == {(LOOP[i], LOOP[(i + 1) % len(LOOP)]) for i in range(len(LOOP))}


def test_it_writes_a_run_in_sequence_with_each_failure_retried_and_realistic_records(api):
    workflow = loop_workflow_create(workflow_id="loop_b")
    execution = large_run_create(workflow=workflow, node_runs=400, batch_size=64)
    runs = list(execution.node_runs.select_related("agent").order_by("sequence"))

    assert [run.sequence for run in runs] == list(range(1, 401))
    failed = [run for run in runs if run.status == NodeRun.Status.FAILED]
    assert len(failed) == 4 and all(run.error_code and run.output is None for run in failed)
    for before, after in pairwise(runs):
        assert after.started_at > before.completed_at
        if before.status == NodeRun.Status.FAILED:
            assert (after.node_id, after.kind, after.attempt) == (before.node_id, "retry", before.attempt + 1)
        else:
            assert before.decision["node_id"] == after.node_id == LOOP[(LOOP.index(before.node_id) + 1) % len(LOOP)]
            assert after.attempt == 1 and after.kind == "first"
    assert all(run.agent.agent_id == f"loop_b_{run.node_id}" and run.agent_version_id for run in runs)
    assert all(50 <= run.duration_ms <= 400 for run in runs)

    done = runs[0]
    assert 1_200 <= size(done.prompt) <= 2_000
    assert 800 <= size(done.context_record) <= 1_600 and 800 <= size(done.resolved_inputs) <= 2_000
    assert 300 <= size(done.output) <= 800
    assert done.context_record["task_id"] == done.node_id and done.context_record["resolution"]["within_limit"]
    assert done.calls[0]["tokens_in"] == done.tokens_in and done.cost > 0
    assert execution.status == "success" and execution.cost == sum(run.cost for run in runs)
    assert execution.started_at <= runs[0].started_at and execution.completed_at > runs[-1].completed_at

    # The records are what the API can answer with, in its shapes.
    answer = api.viewer.get(f"/api/executions/{execution.execution_id}/node-runs/{done.pk}")
    assert answer.status_code == 200, answer.content
    assert answer.json()["context_management"] == done.context_record


def test_it_writes_light_runs_for_the_list_spread_over_the_workflows():
    workflows = [loop_workflow_create(workflow_id="loop_c"), loop_workflow_create(workflow_id="loop_d")]
    ending = timezone.now() - timedelta(days=1)
    light_executions_create(workflows=workflows, count=120, node_runs_each=3, ending=ending, batch_size=50)

    executions = list(Execution.objects.order_by("created_at").prefetch_related("node_runs"))
    assert len(executions) == 120 and NodeRun.objects.count() == 360
    assert executions[-1].created_at == ending and executions[0].created_at == ending - timedelta(minutes=119)
    assert [e.workflow.workflow_id for e in executions].count("loop_c") == 90  # three turns in four
    assert {e.status for e in executions} >= {"success", "failed"}
    for execution in executions:
        runs = sorted(execution.node_runs.all(), key=lambda run: run.sequence)
        assert [run.sequence for run in runs] == [1, 2, 3]
        assert runs[-1].status == LAST_RUN_STATUS[execution.status]
        assert (execution.completed_at is None) == (execution.status == "running")
