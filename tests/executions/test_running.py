"""Running the demo workflows on real Celery workers against the real Redis."""
import time
from itertools import pairwise

import pytest

from core.documents import import_documents
from core.errors import WorkflowInvalid
from executions.models import Execution
from executions.services import execution_resume, execution_start
from tests.executions.conftest import approve_gate, wait_for
from tests.workflow_edits import edit_workflow, store_as_before
from workflows.models import Workflow

pytestmark = [pytest.mark.integration, pytest.mark.both_databases]


def start(workflow_id, **input):
    return execution_start(workflow=Workflow.objects.get(workflow_id=workflow_id), input=input)


def runs(execution, **filters):
    return list(execution.node_runs.filter(**filters).order_by("sequence"))


def test_it_runs_the_thesis_chain_with_complete_records(demo):
    demo.start(1)
    execution = wait_for(start("thesis_reading"), workers=demo)
    assert execution.status == "success", execution.ended_reason
    done = runs(execution)
    assert [r.node_id for r in done] == ["task_scholar_001", "task_validator_001", "task_vault_001"]
    for run in done:
        assert run.status == "success" and run.backend == "builtin" and run.worker
        assert run.context_record["resolution"]["within_limit"]
        assert run.tokens_in > 0 and run.tokens_out > 0 and run.prompt and run.duration_ms is not None
        assert run.started_at <= run.completed_at and run.agent_version is not None
    scholar, validator, vault = done
    assert len(scholar.output["atoms"]) > 5
    assert validator.output["validation_results"]
    assert vault.context_record["context_limit"] == 4_050
    assert vault.resolution_failures[0]["error_code"] == "REF_NOT_FOUND"


def test_it_runs_independent_dag_nodes_in_parallel_and_compresses_with_a_shared_cache(demo):
    demo.start(2)
    first = wait_for(start("parallel_analysis", repository="switchyard"), workers=demo)
    assert first.status == "success", first.ended_reason
    analyzers = runs(first, node_id__in=["task_a", "task_b", "task_c"])
    intervals = sorted((r.started_at, r.completed_at) for r in analyzers)
    assert any(later_start < earlier_end for (_, earlier_end), (later_start, _) in pairwise(intervals)), \
        "two analyzers ran at the same time"
    assert len({r.worker.split("/")[0] for r in analyzers}) == 2
    (synthesis,) = runs(first, node_id="task_d")
    compression = synthesis.compression
    assert [d["node_id"] for d in compression["dependencies"]] == ["task_a", "task_b", "task_c"]
    assert all(d["lines_after"] < d["lines_before"] for d in compression["dependencies"])
    assert "[依赖任务压缩输出 | 模型: flash, 压缩比: 30%]" in synthesis.prompt

    second = wait_for(start("parallel_analysis", repository="switchyard"), workers=demo)
    (again,) = runs(second, node_id="task_d")
    assert all(d["cache_hit"] for d in again.compression["dependencies"])


def test_it_follows_the_state_machine_retries_falls_back_escalates_and_resumes(demo):
    demo.start(1)
    execution = wait_for(start("release_review", topic="v2.0"), workers=demo)
    assert execution.status == "waiting", execution.ended_reason  # at the gate before publishing
    execution = wait_for(approve_gate(execution), statuses=("escalated", "failed", "success"), workers=demo)
    assert execution.status == "escalated", execution.ended_reason
    trail = [(r.node_id, r.kind, r.agent.agent_id, r.status) for r in runs(execution)]
    assert trail[:5] == [("draft", "first", "Drafter", "success"), ("review", "first", "Reviewer", "success"),
                         ("draft", "first", "Drafter", "success"), ("review", "first", "Reviewer", "success"),
                         ("approve", "first", "Release_Manager", "success")]
    assert trail[5:9] == [("publish", "first", "Publisher", "failed"), ("publish", "retry", "Publisher", "failed"),
                          ("publish", "retry", "Publisher", "failed"),
                          ("publish", "fallback", "Backup_Publisher", "success")]
    assert trail[9:] == [("compliance", "first", "Compliance_Checker", "failed"),
                         ("compliance", "fallback", "Backup_Publisher", "failed")]
    review = runs(execution, node_id="review")[0]
    assert review.decision["node_id"] == "draft" and review.decision["condition_value"] is True
    assert execution.escalation["node_id"] == "compliance" and execution.escalation["escalate_to"] == "Orchestrator"
    assert execution.state["published_at"]

    execution_resume(execution=execution, output={"compliant": True, "by": "a person"})
    execution = wait_for(execution, statuses=("success", "failed"), workers=demo)
    assert execution.status == "success"
    assert runs(execution)[-1].kind == "manual"


def test_it_stops_a_looping_state_machine_at_its_bound(demo):
    def loop_forever(document):
        document["limits"]["max_steps"] = 5
        loop = next(t for t in document["transitions"] if (t["from"], t["to"]) == ("review", "draft"))
        loop["condition"] = "true"

    edit_workflow("release_review", loop_forever)
    demo.start(1)
    execution = wait_for(start("release_review", topic="loop"), workers=demo)
    assert execution.status == "failed"
    assert execution.ended_reason == "max_steps: the run reached its bound of 5 steps"
    assert execution.node_runs.filter(kind="first").count() == 5


def test_it_skips_a_failed_dag_node_as_its_transition_says_and_refuses_a_condition_it_cannot_honour(demo):
    demo.start(1)
    import_documents([{
        "workflow_id": "guarded", "name": "Guarded", "topology": "dag",
        "nodes": [{"id": "publish", "agent_ref": "Publisher"}, {"id": "after", "agent_ref": "Drafter"}],
        "transitions": [{"from": "publish", "to": "after", "on_failure": "skip"}],
        "error_handling": {"retry_count": 2},
    }], actor="test")
    execution = wait_for(start("guarded", topic="t"), workers=demo)
    assert execution.status == "success", execution.ended_reason
    assert [(r.node_id, r.status) for r in runs(execution)] == [
        ("publish", "failed"), ("publish", "skipped"), ("after", "success")]

    # Stored before validation refused it: a dag would run `after` whatever the condition says.
    workflow = store_as_before("guarded", lambda document: document["transitions"][0].update(condition="output.published == true"))
    with pytest.raises(WorkflowInvalid) as refused:
        start("guarded", topic="t")
    assert [(p["where"], p["code"]) for p in refused.value.problems] == [
        ("transitions[0].condition", "TRANSITION_UNHONOURED")]
    assert "transitions[0].condition: (publish → after) a condition chooses the next node only" in str(refused.value)
    assert list(Execution.objects.filter(workflow=workflow)) == [execution], "nothing half-started"


def test_a_branch_held_while_a_person_had_the_run_goes_on_once_the_run_resumes(demo):
    # `publish` fails and waits for a person; meanwhile the worker takes the other branch's
    # pending node and, the run not running, cancels it. Resumed, the run starts it again
    # and ends only when every node is done.
    demo.start(1)
    import_documents([{
        "workflow_id": "two_branches", "name": "Two branches", "topology": "dag",
        "nodes": [{"id": "publish", "agent_ref": "Publisher"}, {"id": "announce", "agent_ref": "Drafter"},
                  {"id": "draft", "agent_ref": "Drafter"}, {"id": "polish", "agent_ref": "Drafter"}],
        "transitions": [{"from": "publish", "to": "announce"}, {"from": "draft", "to": "polish"}],
        "error_handling": {"retry_count": 0, "escalate_to": "Orchestrator"},
    }], actor="test")
    execution = wait_for(start("two_branches", topic="t"), workers=demo)
    assert execution.status == "escalated", execution.ended_reason
    wait_for_no_active(execution)
    assert "cancelled" in {run.status for run in runs(execution)}

    execution_resume(execution=execution, output={"published_at": "by hand"})
    execution = wait_for(execution, statuses=("success", "failed"), workers=demo)
    assert execution.status == "success", execution.ended_reason
    latest = {run.node_id: run.status for run in runs(execution)}
    assert latest == {"publish": "success", "announce": "success", "draft": "success", "polish": "success"}


def wait_for_no_active(execution, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while execution.node_runs.filter(status__in=("pending", "running")).exists():
        assert time.monotonic() < deadline, "the worker did not take the held node runs"
        time.sleep(0.1)


def test_three_workers_finishing_the_leaves_of_a_wide_dag_together_end_it_once(workers):
    """Each leaf's result is stored with whether any other node run is still to end, in one
    statement; workers storing at once wait for each other's lock on the run, and one that
    waited stores again in a transaction: the run ends, once, when the last leaf does."""
    from benchmarks.execution import agent_document, workflow_document

    import_documents([agent_document("noop"), workflow_document("wide", "noop", topology="dag", nodes=150)])
    workers.start(3)
    execution = wait_for(start("wide"), timeout=120, workers=workers)
    assert execution.status == "success", execution.ended_reason
    node_runs = runs(execution)
    assert (len(node_runs), {run.status for run in node_runs}) == (150, {"success"})
    assert len({run.node_id for run in node_runs}) == 150
    assert len({run.worker.split("/")[0] for run in node_runs}) == 3, "all three workers took leaves"
    assert max(run.completed_at for run in node_runs) <= execution.completed_at
