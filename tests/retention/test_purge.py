"""The keep rules, the batches, dry runs and `purge_runs` (in this process: the code the
sweep runs too; the beat on a real worker is in test_sweep_worker.py)."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import Agent, DeriveRequest
from core.models import AuditEntry
from executions.models import Evaluation, Execution, NodeRun
from experiments.dataset_services import dataset_add_run
from retention.policy import DELETE, purge_selection
from retention.purge import Purge
from tests.retention.conftest import make_run, stored
from triggers.models import CallbackDelivery, TriggeredRun

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _demo(demo):
    pass


def purge(*args: str) -> str:
    out = StringIO()
    call_command("purge_runs", *args, stdout=out)
    return out.getvalue()


def test_it_keeps_every_run_something_still_needs_and_deletes_the_rest_with_their_node_runs():
    plain, failed, cancelled = make_run(), make_run("failed"), make_run("cancelled")
    Evaluation.objects.create(evaluation_id="eval_of_plain", target_type="execution", execution=plain,
                              target_id=plain.execution_id, completeness=0.5, efficiency=0.5,
                              overall_score=0.5, passed=False, action="revise")
    in_dataset = make_run()
    dataset_add_run(name="kept_runs", execution=in_dataset)
    in_experiment = make_run(experiment="exp_1")
    evidence = make_run("failed")
    DeriveRequest.objects.create(derive_request_id="dr_1", parent_agent=Agent.objects.first(), trigger="capability_gap",
                                 new_name="Child", trigger_context={"failures": [
                                     {"execution_id": evidence.execution_id, "node_id": "task_0"}]})
    gate = make_run("waiting")
    running, escalated = make_run("running"), make_run("escalated")
    source = make_run()
    make_run(rerun_of=source, days=1)  # a re-run of it, still young
    recent = make_run(days=1)

    report = json.loads(purge("--before", "2100-01-01T00:00:00+00:00", "--json", "--batch", "4"))
    assert stored(plain, failed, cancelled) == [False] * 3
    assert stored(in_dataset, in_experiment, evidence, gate, running, escalated, source) == [True] * 7
    # The young re-run and the recent run are before 2100 too: both go (the run re-run stays this pass).
    assert not stored(recent)[0]
    assert report["runs"] == {"success": 3, "failed": 1, "cancelled": 1} and report["node_runs"] == 5 * 3
    assert report["kept"] == {"dataset": 1, "experiment": 1, "evidence": 1, "gate": 1, "running": 2, "rerun": 1}
    assert not NodeRun.objects.filter(execution_id__in=[plain.pk, failed.pk, cancelled.pk]).exists()
    assert not Evaluation.objects.filter(evaluation_id="eval_of_plain").exists()
    # One audit entry per transaction, from the command, naming the runs and counting rows.
    entries = list(AuditEntry.objects.filter(action="retention.delete").order_by("pk"))
    assert len(entries) == report["batches"] and {entry.via for entry in entries} == {"command"}
    named = {name for entry in entries for name in entry.before.get("executions", [])}
    assert {plain.execution_id, failed.execution_id, cancelled.execution_id} <= named
    assert sum(entry.after.get("node_runs_deleted", 0) for entry in entries) == report["node_runs"]

    # The run re-run goes once its re-run has.
    again = json.loads(purge("--before", "2100-01-01", "--json"))
    assert again["runs"] == {"success": 1} and not stored(source)[0]


def test_a_dry_run_deletes_nothing_and_says_what_the_real_one_then_deletes():
    runs = [make_run(), make_run("failed", node_runs=7), make_run(days=2)]
    parent = runs[0].node_runs.first()
    make_run(parent=parent, node_runs=4)  # a child run: it goes with its parent
    make_run("running")
    rows = NodeRun.objects.count()

    dry = json.loads(purge("--before", "2100-01-01", "--dry-run", "--json"))
    assert NodeRun.objects.count() == rows and Execution.objects.count() == 5
    assert AuditEntry.objects.filter(action="retention.delete").count() == 0
    done = json.loads(purge("--before", "2100-01-01", "--json"))
    for key in ("runs", "runs_deleted", "node_runs", "kept"):
        assert dry[key] == done[key], key
    assert done["runs_deleted"] == 4 and done["node_runs"] == 3 + 7 + 3 + 4 and done["kept"] == {"running": 1}
    assert Execution.objects.count() == 1


def test_purge_runs_says_what_it_deleted_and_kept_in_words_and_refuses_bad_input():
    make_run(days=30)
    make_run("waiting", days=30)
    make_run(days=30, workflow="release_review")
    text = purge("--before", "2100-01-01", "--workflow", "parallel_analysis", "--dry-run")
    assert "would delete: 1 runs (success 1) and 3 node runs" in text and "kept back: 1 runs (gate 1)" in text
    with pytest.raises(CommandError, match=r"--before: '2026-13-01' is not a date"):
        purge("--before", "2026-13-01")
    with pytest.raises(CommandError, match=r"--workflow: no workflow has the id 'nowhere'"):
        purge("--before", "2026-01-01", "--workflow", "nowhere")
    assert Execution.objects.count() == 3


def test_a_child_run_stays_with_its_parent_when_something_needs_it():
    parent = make_run()
    child = make_run(parent=parent.node_runs.first(), node_runs=2)
    dataset_add_run(name="children", execution=child)
    report = json.loads(purge("--before", "2100-01-01", "--json"))
    assert stored(parent, child) == [True, True] and report["kept"] == {"dataset": 1}


def test_each_transaction_deletes_at_most_a_batch_of_node_runs():
    runs = [make_run(node_runs=25), make_run(node_runs=12)]
    purger = Purge(batch=10)
    with CaptureQueriesContext(connection) as queries:
        report = purger.run(DELETE, purge_selection(runs[1].created_at.replace(year=2100)))
    deletes = [query["sql"] for query in queries if query["sql"].startswith('DELETE FROM "executions_noderun"')]
    # 37 node runs of two runs read together: 10, 10, 10, 7, then the rows of the runs.
    assert len(deletes) == 4 and report.node_runs == 37 and report.batches == 5
    entries = AuditEntry.objects.filter(action="retention.delete").order_by("pk")
    assert [entry.after.get("node_runs_deleted") for entry in entries][:4] == [10, 10, 10, 7]
    assert entries.last().after == {"executions_deleted": 2}


def test_a_pass_stops_after_its_batches_and_the_next_goes_on():
    run = make_run(node_runs=30)
    first = Purge(batch=10, max_batches=2).run(DELETE, purge_selection(run.created_at.replace(year=2100)))
    assert first.stopped and first.node_runs == 20 and stored(run) == [True]
    second = Purge(batch=10, max_batches=2).run(DELETE, purge_selection(run.created_at.replace(year=2100)))
    assert second.node_runs == 10 and sum(second.runs.values()) == 1 and stored(run) == [False]


def test_a_pass_rests_after_each_transaction_as_long_as_told(monkeypatch):
    run = make_run(node_runs=5)
    rests: list[float] = []
    monkeypatch.setattr("retention.purge.time.sleep", rests.append)
    report = Purge(batch=2, pause=3).run(DELETE, purge_selection(run.created_at.replace(year=2100)))
    assert report.batches == 4 and len(rests) == 4 and all(rest > 0 for rest in rests)
    with pytest.raises(CommandError, match=r"--pause: -1 cannot be negative"):
        purge("--before", "2100-01-01", "--pause", "-1")


def test_it_deletes_a_run_other_apps_rows_point_at_deleting_or_unlinking_them_as_their_keys_say():
    triggered = make_run()
    TriggeredRun.objects.create(execution=triggered, idempotency_key="")
    CallbackDelivery.objects.create(execution=triggered, url="http://hooks.example/done", status="delivered")

    purge("--before", "2100-01-01T00:00:00+00:00", "--json")

    assert stored(triggered) == [False]
    assert not TriggeredRun.objects.exists() and not CallbackDelivery.objects.exists()
