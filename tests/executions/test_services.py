"""The running services, driven in this process: each pending node run is executed here.

Transactions commit for real (so a worker's inline continuation happens as in
production); messages to workers are only recorded.
"""
import time
from datetime import timedelta
from unittest import mock

import pytest
from django.db import transaction
from django.utils import timezone

from core.documents import import_documents
from core.errors import IllegalTransition, WorkflowInvalid
from executions import node_kinds as nodes
from executions.models import Execution, NodeRun
from executions.services import execution_resume, execution_start, heartbeat, node_run_execute, node_runs_sweep
from executions.services.inline import Claimed
from executions.services.node_run import _claim, _execute, _store_locked
from tests.executions.conftest import drain
from tests.workflow_edits import edit_workflow, store_as_before
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def demo(in_process):
    return in_process.run_node


def start(workflow_id, **input):
    return execution_start(workflow=Workflow.objects.get(workflow_id=workflow_id), input=input)


def test_it_runs_a_dag_layer_at_once_then_its_join():
    execution = start("parallel_analysis", repository="acme")
    assert sorted(execution.node_runs.values_list("node_id", flat=True)) == ["task_a", "task_b", "task_c"]
    assert drain(execution).status == "success"
    assert execution.node_runs.filter(node_id="task_d", status="success").count() == 1


def test_it_claims_a_pending_node_run_once_and_returns_it():
    execution = start("parallel_analysis", repository="acme")
    run = execution.node_runs.order_by("sequence").first()
    now = timezone.now()
    claimed = _claim(run.pk, "w1/abc", now)
    assert (claimed.pk, claimed.execution_id, claimed.node_id) == (run.pk, execution.pk, run.node_id)
    assert (claimed.status, claimed.worker, claimed.started_at) == ("running", "w1/abc", now)
    assert _claim(run.pk, "w2/def", timezone.now()) is None
    assert node_run_execute(node_run_id=run.pk, worker="w2") == "duplicate"
    run.refresh_from_db()
    assert (run.status, run.worker, run.started_at, run.heartbeat_at) == ("running", "w1/abc", now, now)


class WorkerKilled(BaseException):
    """What a SIGKILL does to a worker between two of its transactions, in this process."""


def test_a_success_stored_alone_whose_worker_stopped_before_advancing_is_advanced_when_its_message_comes_back():
    from executions.services.run import LockedRun

    advance = LockedRun.advance

    def killed_after_storing_the_last_node(self, *, completed, **kwargs):
        if completed is not None and completed.node_id == "task_d":
            raise WorkerKilled
        return advance(self, completed=completed, **kwargs)

    execution = start("parallel_analysis", repository="acme")
    with mock.patch.object(LockedRun, "advance", killed_after_storing_the_last_node), pytest.raises(WorkerKilled):
        drain(execution)
    last = execution.node_runs.get(node_id="task_d")
    execution.refresh_from_db()
    assert (last.status, execution.status) == ("success", "running")  # stored alone, not advanced

    # Its message, never acknowledged, comes back: nothing runs again, and the run ends.
    assert node_run_execute(node_run_id=last.pk, worker="again") == "duplicate"
    execution.refresh_from_db()
    assert execution.status == "success"
    assert execution.node_runs.filter(node_id="task_d").count() == 1


def test_it_touches_the_heartbeat_of_a_node_run_only_while_it_runs(settings):
    settings.NODE_HEARTBEAT_SECONDS = 0.05
    execution = start("parallel_analysis", repository="acme")
    run = _claim(execution.node_runs.order_by("sequence").first().pk, "w1/abc", timezone.now())
    long_ago = timezone.now() - timedelta(hours=1)
    NodeRun.objects.filter(pk=run.pk).update(heartbeat_at=long_ago)
    with heartbeat(run.pk, "w1/abc"):
        deadline = time.monotonic() + 10  # a beat thread started by an earlier test may still be asleep
        while NodeRun.objects.get(pk=run.pk).heartbeat_at == long_ago and time.monotonic() < deadline:
            time.sleep(0.02)
    assert NodeRun.objects.get(pk=run.pk).heartbeat_at > long_ago
    NodeRun.objects.filter(pk=run.pk).update(heartbeat_at=long_ago)
    time.sleep(0.3)
    assert NodeRun.objects.get(pk=run.pk).heartbeat_at == long_ago  # no longer performed here: not touched


def test_it_reads_the_state_again_when_it_stores_a_result_in_a_workflow_that_writes_state(
        django_assert_num_queries):
    from django.db import connection

    execution = start("release_review", topic="t")
    run = _claim(execution.node_runs.order_by("sequence").first().pk, "w1/abc", timezone.now())
    Execution.objects.filter(pk=execution.pk).update(state={"draft": "written by a parallel node"})
    with transaction.atomic(), django_assert_num_queries(1 if connection.vendor == "postgresql" else 2):
        locked, stored = _store_locked(run, "w1/abc", "success", {"output": {"done": True}}, {}, {})
    assert (locked.execution.state, stored) == ({"draft": "written by a parallel node"}, 1)
    assert NodeRun.objects.get(pk=run.pk).output == {"done": True}
    with transaction.atomic():  # another claim's result is not stored, and the execution still reads right
        assert _store_locked(run, "w2/def", "success", {"output": {"late": True}}, {}, {})[1] == 0
    assert NodeRun.objects.get(pk=run.pk).output == {"done": True}


def _wide(nodes=3):
    """A DAG of independent no-op nodes: every one a leaf, nothing follows it."""
    from benchmarks.execution import agent_document, workflow_document

    import_documents([agent_document("noop"), workflow_document("wide", "noop", topology="dag", nodes=nodes)])
    return start("wide")


def test_a_node_that_nothing_follows_costs_its_claim_and_one_statement_on_postgresql(django_assert_num_queries):
    from django.db import connection

    execution = _wide()
    first, second, last = execution.node_runs.order_by("sequence")
    assert node_run_execute(node_run_id=first.pk, worker="w1") == "success"  # reads the workflow's graph once
    # PostgreSQL: the claim, then the result stored with whether any other run is still to
    # end; SQLite: the claim and its related rows, then a transaction of the touch, the move
    # and the question.
    with django_assert_num_queries(2 if connection.vendor == "postgresql" else 7):
        assert node_run_execute(node_run_id=second.pk, worker="w1") == "success"
    execution.refresh_from_db()
    assert (execution.status, NodeRun.objects.get(pk=second.pk).status) == ("running", "success")
    assert node_run_execute(node_run_id=last.pk, worker="w1") == "success"  # the last: the run ends
    execution.refresh_from_db()
    assert execution.status == "success"
    assert set(execution.node_runs.values_list("status", flat=True)) == {"success"}


def test_a_result_stored_alone_that_was_overtaken_is_stored_in_a_transaction_of_its_own():
    from executions.services import node_run

    execution = _wide(2)
    first, last = execution.node_runs.order_by("sequence")
    with mock.patch.object(node_run, "_store_alone", return_value=None) as alone:  # another worker wrote the run
        assert node_run_execute(node_run_id=first.pk, worker="w1") == "success"
        assert node_run_execute(node_run_id=last.pk, worker="w1") == "success"
    assert alone.call_count == 2
    execution.refresh_from_db()
    assert execution.status == "success"
    assert execution.node_runs.filter(status="success").count() == 2


def test_it_fails_a_node_visibly_when_something_unexpected_breaks():
    with mock.patch.object(nodes, "perform", side_effect=ValueError("a defect")):
        execution = drain(start("parallel_analysis", repository="acme"))
    failed = execution.node_runs.filter(status="failed").first()
    assert (failed.error_code, failed.error) == ("INTERNAL_ERROR", "ValueError: a defect")
    assert execution.status == "escalated"  # not retried (not retryable); no fallback; escalate_to is set


def test_it_refuses_to_resume_a_run_that_is_not_escalated():
    execution = start("thesis_reading")
    with pytest.raises(IllegalTransition, match="not escalated"):
        execution_resume(execution=execution, output={})


def test_it_sends_a_silent_node_run_again_and_fails_one_that_keeps_killing_workers(settings):
    execution = start("thesis_reading")
    run = execution.node_runs.get()
    long_ago = timezone.now() - timedelta(seconds=settings.NODE_STALE_SECONDS + 5)
    NodeRun.objects.filter(pk=run.pk).update(status="running", worker="dead/1", heartbeat_at=long_ago, dispatches=1)
    assert node_runs_sweep()["requeued"] == [run.pk]
    run.refresh_from_db()
    assert (run.status, run.worker) == ("pending", "")

    NodeRun.objects.filter(pk=run.pk).update(status="running", worker="dead/2", heartbeat_at=long_ago,
                                             dispatches=settings.NODE_MAX_DISPATCHES)
    assert node_runs_sweep()["failed"] == [run.pk]
    run.refresh_from_db()
    assert (run.status, run.error_code) == ("failed", "WORKER_LOST")


def test_it_ends_a_run_past_its_wall_time():
    execution = start("thesis_reading")
    Execution.objects.filter(pk=execution.pk).update(started_at=timezone.now() - timedelta(hours=2))
    assert node_runs_sweep()["ended"] == [execution.execution_id]
    execution.refresh_from_db()
    assert execution.status == "failed" and execution.ended_reason.startswith("max_wall_seconds")
    assert not execution.node_runs.filter(status="pending").exists()


def test_it_cancels_a_node_run_at_the_wall_time_only_while_it_is_running():
    execution = start("thesis_reading")
    run = execution.node_runs.get()
    # Handed to this worker already claimed, but its result is stored by the time it is taken up.
    NodeRun.objects.filter(pk=run.pk).update(status="failed", worker="w1/abc", error_code="NODE_TIME_LIMIT")
    Execution.objects.filter(pk=execution.pk).update(started_at=timezone.now() - timedelta(hours=2))
    run = NodeRun.objects.select_related("execution__workflow").get(pk=run.pk)
    assert _execute(run.pk, "w1", Claimed(run, "w1/abc")) == ("ended", None)
    run.refresh_from_db()
    assert (run.status, run.error_code) == ("failed", "NODE_TIME_LIMIT")
    assert Execution.objects.get(pk=execution.pk).ended_reason.startswith("max_wall_seconds")


def test_it_skips_or_aborts_a_failed_node_as_its_transition_says():
    import_documents([{
        "workflow_id": "skipper", "name": "Skipper", "topology": "state_machine",
        "nodes": [{"id": "publish", "agent_ref": "Publisher"}, {"id": "after", "agent_ref": "Drafter"}],
        "transitions": [{"from": "publish", "to": "after", "on_failure": "skip"}],
        "error_handling": {"retry_count": 3},
    }], actor="test")
    execution = drain(start("skipper", topic="t"))
    assert [(r.node_id, r.status) for r in execution.node_runs.order_by("sequence")] == [
        ("publish", "failed"), ("publish", "skipped"), ("after", "success")]
    assert execution.status == "success"

    edit_workflow("skipper", lambda document: document["transitions"][0].update(on_failure="abort"))
    execution = drain(start("skipper", topic="t"))
    assert execution.status == "failed" and "on_failure is abort" in execution.ended_reason


def test_a_state_machine_that_no_transition_takes_further_says_where_it_ended_and_what_was_missing(api):
    def bounded_by_the_input(document):
        back, forward = document["transitions"][1:3]
        back["condition"] = "output.verdict == 'revise' and state.rounds < input.max_rounds"
        forward["condition"] = "output.verdict == 'accept'"

    edit_workflow("release_review", bounded_by_the_input)
    execution = drain(start("release_review", topic="v2"))  # no max_rounds
    assert [run.node_id for run in execution.node_runs.order_by("sequence")] == ["draft", "review"]
    assert execution.status == "success"
    assert execution.ended_reason == ("node 'review' ended the run: no transition matched (#1, #2 were false); "
                                      "the conditions read fields that are not there: input.max_rounds")
    review = execution.node_runs.get(node_id="review")
    assert review.decision["action"] == "end" and review.decision["reason"] == execution.ended_reason
    assert review.decision["evaluated"] == [
        {"transition": 1, "condition": "output.verdict == 'revise' and state.rounds < input.max_rounds",
         "value": False, "missing": ["input.max_rounds"]},
        {"transition": 2, "condition": "output.verdict == 'accept'", "value": False}]
    record = api.viewer.get(f"/api/executions/{execution.execution_id}").json()
    assert record["ended_reason"] == execution.ended_reason
    shown = api.viewer.get(f"/api/executions/{execution.execution_id}/node-runs/{review.pk}").json()
    assert shown["decision"]["evaluated"][0]["missing"] == ["input.max_rounds"]


def test_it_passes_short_upstream_outputs_through_compression_unchanged():
    import_documents([{
        "workflow_id": "short_compress", "name": "Short compress", "topology": "dag",
        "nodes": [{"id": "draft", "agent_ref": "Drafter", "input_mapping": {"topic": "$.input.topic"}},
                  {"id": "report", "agent_ref": "Report_Synthesizer", "compress": True, "compress_ratio": 0.5,
                   "input_mapping": {"data_references": [{"ref_type": "task_output", "task_id": "draft"}]}}],
        "transitions": [{"from": "draft", "to": "report"}],
    }], actor="test")
    execution = drain(start("short_compress", topic="v3"))
    assert execution.status == "success", execution.ended_reason
    report = execution.node_runs.get(node_id="report")
    (dependency,) = report.compression["dependencies"]
    assert dependency["skipped_short"] and dependency["lines_after"] == dependency["lines_before"] < 50
    assert "[依赖任务压缩输出 | 模型: flash, 压缩比: 50%]" in report.prompt
    assert "Release notes for v3" in report.prompt


def test_it_runs_a_chain_on_the_worker_that_ran_its_first_node(demo):
    import_documents([{"workflow_id": "chain", "name": "Chain", "topology": "seq",
                       "nodes": [{"id": f"step_{i}", "agent_ref": "Drafter"} for i in range(3)]}], actor="test")
    execution = start("chain", topic="t")
    (first,) = execution.node_runs.all()
    assert demo.call_count == 1, "only the first node went through the queue"
    assert node_run_execute(node_run_id=first.pk, worker="w1") == "success"
    execution.refresh_from_db()
    assert execution.status == "success" and demo.call_count == 1
    runs = list(execution.node_runs.order_by("sequence"))
    assert [(r.node_id, r.status) for r in runs] == [("step_0", "success"), ("step_1", "success"), ("step_2", "success")]
    assert all(r.worker.startswith("w1/") for r in runs) and len({r.worker for r in runs}) == 3


def test_it_sends_the_rest_of_a_chain_through_the_queue_once_its_task_is_a_second_old(demo, monkeypatch):
    # A node's time limit is its task's: a task that has run for a while leaves the next
    # node to a task of its own.
    import_documents([{"workflow_id": "chain", "name": "Chain", "topology": "seq",
                       "nodes": [{"id": f"step_{i}", "agent_ref": "Drafter"} for i in range(3)]}], actor="test")
    execution = start("chain", topic="t")
    (first,) = execution.node_runs.all()
    real_perform = nodes.perform

    def slow_perform(run, graph, node):
        time.sleep(1.2)
        return real_perform(run, graph, node)

    monkeypatch.setattr(nodes, "perform", slow_perform)
    assert node_run_execute(node_run_id=first.pk, worker="w1") == "success"
    second = execution.node_runs.get(node_id="step_1")
    assert second.status == "pending" and demo.call_count == 2
    assert demo.call_args.kwargs["soft_time_limit"] == 600 and demo.call_args.kwargs["time_limit"] == 660


def test_it_fails_a_node_stopped_by_its_soft_time_limit_without_retrying_it_then_falls_back(demo, monkeypatch):
    from celery.exceptions import SoftTimeLimitExceeded

    execution = start("release_review", topic="limits")
    draft = execution.node_runs.get(node_id="draft")

    def stopped(run, graph, node):
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(nodes, "perform", stopped)
    assert node_run_execute(node_run_id=draft.pk, worker="w1") == "failed"
    draft.refresh_from_db()
    assert draft.error_code == "NODE_TIME_LIMIT" and "node time limit of 600 s" in draft.error
    (after,) = execution.node_runs.exclude(pk=draft.pk)
    assert after.kind == "fallback", "not retried: the fallback agent takes over"


def test_it_fails_a_silent_node_run_older_than_the_hard_time_limit_instead_of_sending_it_again(demo, settings):
    execution = start("release_review", topic="limits")
    draft = execution.node_runs.get(node_id="draft")
    long_ago = timezone.now() - timedelta(seconds=settings.NODE_HARD_TIME_LIMIT_SECONDS + 1)
    NodeRun.objects.filter(pk=draft.pk).update(status="running", worker="w1/abc", started_at=long_ago,
                                               heartbeat_at=long_ago)
    report = node_runs_sweep()
    assert report["failed"] == [draft.pk] and report["requeued"] == []
    draft.refresh_from_db()
    assert draft.error_code == "NODE_TIME_LIMIT" and "hard time limit of 660 s" in draft.error


def test_a_stored_workflow_with_a_path_that_is_not_rfc_9535_is_refused_at_start_naming_it():
    # Stored when paths were read by a looser JSONPath: a run would resolve nothing from it.
    workflow = store_as_before("parallel_analysis", lambda document: document["nodes"][0].update(
        input_mapping={"repository": "$.input[?(@.name =~ 'a')]"}))
    with pytest.raises(WorkflowInvalid) as refused:
        start("parallel_analysis", repository="acme")
    assert [(p["where"], p["code"]) for p in refused.value.problems] == [
        ("nodes[task_a].input_mapping.repository", "REF_PATH_INVALID")]
    assert not Execution.objects.filter(workflow=workflow).exists()


def test_an_agent_with_no_skills_runs_its_own_node_on_the_builtin():
    from demo.documents import _agent

    import_documents([_agent("Generalist", "Generalist", skills=[], prompt="You answer questions."), {
        "workflow_id": "ask", "name": "Ask", "topology": "seq",
        "nodes": [{"id": "answer", "agent_ref": "Generalist", "input_mapping": {"question": "$.input.question"}}],
    }], actor="test")
    execution = drain(start("ask", question="What does a switchyard do? It sorts railway cars onto tracks."))
    assert execution.status == "success", execution.ended_reason
    output = execution.node_runs.get(node_id="answer").output
    assert output["inputs"] == ["question"] and "sorts railway cars" in output["response"]
    assert output["note"].startswith("builtin: not a model")
