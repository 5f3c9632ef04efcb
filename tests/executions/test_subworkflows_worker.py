"""Sub-workflow nodes on a real Celery worker against the real Redis: the demo's repository
review runs parallel_analysis as a child run and goes on with its report; cancelling the
parent through the API cancels the child the worker is running."""
import json
import time

import pytest

from core.documents import import_documents
from executions.models import Execution, NodeRun
from executions.services import execution_start
from tests.executions.conftest import wait_for
from tests.slow_chain import SLOW_CHAIN_DOCUMENTS, slow_argv
from workflows.models import Workflow

pytestmark = pytest.mark.integration


def test_the_repository_review_runs_its_analysis_as_a_child_run_and_links_both(demo, api):
    demo.start(1)
    parent = execution_start(workflow=Workflow.objects.get(workflow_id="repository_review"),
                             input={"repository": "switchyard"})
    parent = wait_for(parent, statuses=("success", "failed", "cancelled"), workers=demo)
    assert parent.status == "success", parent.ended_reason
    node = parent.node_runs.get(node_id="analysis")
    child = Execution.objects.get(parent_node_run=node)
    assert child.status == "success" and child.workflow.workflow_id == "parallel_analysis"
    assert [run.worker != "" for run in child.node_runs.all()] == [True] * child.node_runs.count()
    assert parent.state["report"] == child.node_runs.get(node_id="task_d").output
    assert node.tokens_in == sum(run.tokens_in or 0 for run in child.node_runs.all())

    record = api.viewer.get(f"/api/executions/{parent.execution_id}/node-runs/{node.pk}").json()
    assert record["child_run"]["execution_id"] == child.execution_id and record["child_run"]["status"] == "success"
    assert api.viewer.get(f"/api/executions/{child.execution_id}").json()["parent"] == {
        "execution_id": parent.execution_id, "node_id": "analysis", "node_run_id": node.pk}


def test_cancelling_the_parent_through_the_api_cancels_its_running_child(workers, api, settings):
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "command": {"kind": "command", "argv": slow_argv(2)}}
    workers.env["COMMAND_BACKEND_ARGV"] = json.dumps(slow_argv(2))
    import_documents([*SLOW_CHAIN_DOCUMENTS, {
        "workflow_id": "runs_slow", "name": "Runs the slow chain", "topology": "seq",
        "nodes": [{"id": "inner", "agent_ref": "Slow", "subworkflow": {"workflow_ref": "slow_chain"}}]}], actor="test")
    workers.start(1)
    parent = execution_start(workflow=Workflow.objects.get(workflow_id="runs_slow"), input={})
    deadline = time.monotonic() + 60
    while not NodeRun.objects.filter(execution__parent_node_run__execution=parent, status="running").exists():
        assert time.monotonic() < deadline, workers.logs()
        time.sleep(0.1)
    answer = api.author.post(f"/api/executions/{parent.execution_id}/cancel", {})
    assert answer.status_code == 200, answer.json()
    child = Execution.objects.get(parent_node_run__execution=parent)
    assert child.status == "cancelled" and parent.execution_id in child.ended_reason
    # The child's running node's result is dropped when it comes; nothing of it goes on.
    child = wait_for(child, statuses=("cancelled",), workers=workers)
    time.sleep(2.5)
    assert list(child.node_runs.values_list("node_id", "status")) == [("step_0", "cancelled")]
    assert parent.node_runs.get(node_id="inner").status == "cancelled"
