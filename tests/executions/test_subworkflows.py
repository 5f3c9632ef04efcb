"""Sub-workflow nodes: a node runs another workflow as a child run, with the node runs run
in this process (the real-worker proof is in test_subworkflows_worker.py)."""
import pytest
from django.utils import timezone

from core.errors import DocumentError, WorkflowInvalid
from executions.models import Execution, NodeRun
from executions.selectors import execution_detail, execution_get, node_run_get
from executions.services import execution_cancel, execution_rerun, execution_start, node_runs_sweep, node_try
from executions.services.subworkflows import child_ended
from tests.executions.conftest import drain
from workflows.models import Workflow
from workflows.services import workflow_import_document, workflow_problems

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def demo(in_process):
    return in_process


def settle_all(limit=200):
    """Run every due node run of every run, and settle every node whose child ended, in this
    process, until nothing is left to do (what workers and the child_ended task do)."""
    from executions.services import node_run_execute

    for _ in range(limit):
        due = NodeRun.objects.filter(status="pending", available_at__lte=timezone.now()).order_by("id").first()
        if due is not None:
            node_run_execute(node_run_id=due.pk, worker="test")
            continue
        ended = Execution.objects.filter(parent_node_run__status="running",
                                         status__in=("success", "failed", "cancelled")).first()
        if ended is None:
            return
        child_ended(child_pk=ended.pk)


def review(**input):
    return execution_start(workflow=Workflow.objects.get(workflow_id="repository_review"),
                           input={"repository": "switchyard", **input})


def document(workflow_id, nodes, topology="seq"):
    return {"workflow_id": workflow_id, "name": workflow_id, "topology": topology, "nodes": nodes,
            "transitions": [], "error_handling": {"retry_count": 0}}


def runs_workflow(node_id, ref, **fields):
    return {"id": node_id, "agent_ref": "Orchestrator", "subworkflow": {"workflow_ref": ref, **fields}}


def test_the_node_runs_the_workflow_as_a_child_run_and_reads_its_outputs():
    parent = review()
    settle_all()
    parent.refresh_from_db()
    assert parent.status == "success", parent.ended_reason
    node = parent.node_runs.get(node_id="analysis")
    child = Execution.objects.get(parent_node_run=node)
    assert child.workflow.workflow_id == "parallel_analysis" and child.status == "success"
    assert child.input == {"repository": "switchyard"} and child.depth == 1
    # Its output: the child's state and its last node's output, which output_mapping reads.
    task_d = child.node_runs.get(node_id="task_d", status="success").output
    assert node.output == {"state": child.state, "nodes": {"task_d": task_d}}
    assert parent.state["report"] == task_d
    # The child's tokens and cost roll up into the node and its run.
    child_runs = list(child.node_runs.all())
    assert node.tokens_in == sum(run.tokens_in or 0 for run in child_runs) > 0
    assert node.tokens_out == sum(run.tokens_out or 0 for run in child_runs) > 0
    assert node.cost == child.cost
    summary = parent.node_runs.get(node_id="summary")
    assert parent.cost == child.cost + summary.cost
    # Linked both ways.
    assert node_run_get(parent, node.pk)["child_run"]["execution_id"] == child.execution_id
    assert execution_detail(execution_get(child.execution_id))["parent"] == {
        "execution_id": parent.execution_id, "node_id": "analysis", "node_run_id": node.pk}


def test_a_child_that_fails_fails_the_node_with_its_reason(monkeypatch):
    workflow_import_document(document("breaks", [{"id": "only", "agent_ref": "Code_Analyzer",
                                                  "input_mapping": {"x": "$.input.x"}}]))
    workflow_import_document(document("calls_breaks", [runs_workflow("inner", "breaks")]))
    from executions.node_errors import NodeFailure
    from executions.node_kinds import llm

    def broken(run, graph, node):
        raise NodeFailure("the model said no", code="BACKEND_ERROR", retryable=False)

    monkeypatch.setattr(llm.KIND, "perform", broken)
    parent = execution_start(workflow=Workflow.objects.get(workflow_id="calls_breaks"), input={})
    settle_all()
    parent.refresh_from_db()
    node = parent.node_runs.get(node_id="inner")
    child = Execution.objects.get(parent_node_run=node)
    assert child.status == "failed" and parent.status == "failed"
    assert node.status == "failed" and node.error_code == "SUBWORKFLOW_FAILED"
    assert child.execution_id in node.error and child.ended_reason in node.error


def test_cancelling_the_parent_cancels_the_child_and_its_nodes():
    parent = review()
    # The analysis node hands its work to the child; the child's first nodes are pending.
    node_run = parent.node_runs.get(node_id="analysis")
    from executions.services import node_run_execute

    node_run_execute(node_run_id=node_run.pk, worker="test")
    node_run.refresh_from_db()
    child = Execution.objects.get(parent_node_run=node_run)
    assert node_run.status == "running" and node_run.worker == "" and node_run.heartbeat_at is None
    assert child.status == "running" and child.node_runs.filter(status="pending").exists()
    execution_cancel(execution=parent)
    child.refresh_from_db()
    assert child.status == "cancelled" and parent.execution_id in child.ended_reason
    assert not child.node_runs.filter(status__in=NodeRun.ACTIVE).exists()
    # The child's end settles nothing more: the node run was cancelled with its run.
    assert child_ended(child_pk=child.pk) == "nothing to settle"
    node_run.refresh_from_db()
    assert node_run.status == "cancelled"


def test_the_sweep_never_sends_a_node_whose_work_is_a_child_run_again_and_resends_a_lost_end(settings, demo):
    parent = review()
    node_run = parent.node_runs.get(node_id="analysis")
    from executions.services import node_run_execute

    node_run_execute(node_run_id=node_run.pk, worker="test")
    child = Execution.objects.get(parent_node_run=node_run)
    later = timezone.now() + timezone.timedelta(seconds=settings.NODE_STALE_SECONDS * 3)
    report = node_runs_sweep(now=later)
    assert node_run.pk not in report["requeued"] + report["redispatched"]
    # The child ends; its message to the parent is lost (recorded, not sent, here).
    child = drain(child)
    assert child.status == "success"
    sent = [call.args[0] for call in demo.child_ended.call_args_list]
    assert (child.pk,) in sent
    report = node_runs_sweep(now=timezone.now() + timezone.timedelta(seconds=settings.NODE_STALE_SECONDS * 3))
    assert report["children_ended"] == [child.pk]


def test_a_workflow_that_would_run_itself_is_refused_naming_the_cycle():
    workflow_import_document(document("loop_a", [{"id": "n", "agent_ref": "Code_Analyzer"}]))
    workflow_import_document(document("loop_b", [runs_workflow("runs_a", "loop_a")]))
    problems = workflow_problems(document("loop_a", [runs_workflow("runs_b", "loop_b")]))
    assert [(p["where"], p["code"]) for p in problems] == [("nodes[runs_b].subworkflow.workflow_ref",
                                                            "SUBWORKFLOW_CYCLE")]
    assert "loop_a → loop_b → loop_a" in problems[0]["message"]
    with pytest.raises(WorkflowInvalid):
        workflow_import_document(document("loop_a", [runs_workflow("runs_b", "loop_b")]))
    # Directly, too; and a workflow or version that does not exist.
    assert [p["code"] for p in workflow_problems(document("selfish", [runs_workflow("me", "selfish")]))] == [
        "SUBWORKFLOW_CYCLE"]
    assert [p["message"] for p in workflow_problems(document("x", [runs_workflow("n", "nowhere")]))] == [
        "workflow 'nowhere' does not exist"]
    assert [p["message"] for p in workflow_problems(document("x", [runs_workflow("n", "loop_a", version=9)]))] == [
        "version 9 of workflow 'loop_a' does not exist"]


def test_a_node_is_a_gate_or_runs_a_workflow_not_both():
    node = {**runs_workflow("n", "parallel_analysis"), "gate": {"prompt": "ok?"}}
    assert "NODE_KIND_CONFLICT" in [p["code"] for p in workflow_problems(document("both", [node]))]


def test_a_child_deeper_than_the_limit_fails_the_node(settings):
    settings.SUBWORKFLOW_MAX_DEPTH = 0
    parent = review()
    settle_all()
    parent.refresh_from_db()
    node = parent.node_runs.get(node_id="analysis")
    assert node.status == "failed" and node.error_code == "SUBWORKFLOW_TOO_DEEP"
    assert not Execution.objects.filter(parent_node_run=node).exists()
    assert parent.status == "failed"


def test_a_pinned_version_runs_that_version():
    analysis = Workflow.objects.get(workflow_id="parallel_analysis")
    first = analysis.versions.get(number=1)
    changed = dict(first.document, name="Parallel analysis, renamed")
    workflow_import_document(changed)
    workflow_import_document(document("pinned", [{**runs_workflow("n", "parallel_analysis", version=1),
                                                  "input_mapping": {"repository": "$.input.repository"}}]))
    parent = execution_start(workflow=Workflow.objects.get(workflow_id="pinned"), input={"repository": "r"})
    settle_all()
    child = Execution.objects.get(parent_node_run__execution=parent)
    assert child.workflow_version == first
    pinned_latest = workflow_import_document(document("latest", [{**runs_workflow("n", "parallel_analysis"),
                                                                   "input_mapping": {"repository": "$.input.repository"}}]))[0]
    parent = execution_start(workflow=pinned_latest, input={"repository": "r"})
    settle_all()
    assert Execution.objects.get(parent_node_run__execution=parent).workflow_version.number == 2


def test_a_sub_workflow_node_is_not_tried_alone_nor_pinned_to_an_agent_version():
    workflow = Workflow.objects.get(workflow_id="repository_review")
    with pytest.raises(DocumentError, match="runs another workflow as a child run"):
        node_try(workflow=workflow, node_id="analysis")
    source = review()
    settle_all()
    with pytest.raises(DocumentError, match="runs another workflow as a child run and its agent is never called"):
        execution_rerun(source=source, from_node="analysis", agent_versions={"analysis": "current"})


def test_a_child_workflow_that_refuses_the_input_the_node_gives_fails_the_node_naming_it():
    workflow_import_document({**document("needs_x", [{"id": "only", "agent_ref": "Code_Analyzer",
                                                      "input_mapping": {"x": "$.input.x"}}]),
                              "input_schema": {"type": "object", "required": ["x"],
                                               "properties": {"x": {"type": "string", "description": "the x"}}}})
    workflow_import_document(document("gives_nothing", [runs_workflow("inner", "needs_x")]))
    parent = execution_start(workflow=Workflow.objects.get(workflow_id="gives_nothing"), input={})
    settle_all()
    node = parent.node_runs.get(node_id="inner")
    assert node.status == "failed" and node.error_code == "SUBWORKFLOW_INPUT_REFUSED"
    assert "input.x: is required by the workflow (the x)" in node.error
    assert not Execution.objects.filter(parent_node_run=node).exists()
