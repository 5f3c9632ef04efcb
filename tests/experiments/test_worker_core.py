"""Experiments on real workers against the real Redis: an experiment runs to its end and is
scored, a cancel mid-experiment, and a worker killed mid-experiment, after which the sweeps
end every item exactly once."""
from __future__ import annotations

import io
import json
import sys
import time

import pytest
from django.core.management import call_command

from core.documents import import_documents
from executions.services import node_runs_sweep
from experiments.experiment_services import experiment_cancel, experiment_create, experiment_start
from experiments.models import Experiment, ExperimentItem
from experiments.scoring import experiments_sweep, item_run_ended
from tests.executions.conftest import workers  # noqa: F401 - fixture
from tests.experiments.core_support import QUESTIONS, load, runs_per_item
from tests.slow_chain import SLOW_CHAIN_DOCUMENTS, slow_argv

pytestmark = pytest.mark.integration

SLOW_ARGV = slow_argv(1.5)
SLOW_ONE = [SLOW_CHAIN_DOCUMENTS[0], {"workflow_id": "slow_one", "name": "Slow one", "topology": "seq",
                                      "nodes": [{"id": "only", "agent_ref": "Slow"}],
                                      "error_handling": {"retry_count": 0}}]


@pytest.fixture
def slow(workers, settings, tmp_path):  # noqa: F811 - the fixture imported above
    """Echo and its dataset, and a one-node workflow whose agent takes 1.5 s on the command backend."""
    settings.WORKSPACE_ROOT = tmp_path
    workers.env["WORKSPACE_ROOT"] = str(tmp_path)
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "command": {"kind": "command", "argv": SLOW_ARGV}}
    workers.env["COMMAND_BACKEND_ARGV"] = json.dumps(SLOW_ARGV)
    load()
    import_documents(SLOW_ONE, actor="test")
    return workers


def wait_until(predicate, timeout=60, what="condition", watched=None):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}\n{watched.logs() if watched else ''}")
        time.sleep(0.1)


def ended(experiment: Experiment) -> bool:
    experiment.refresh_from_db()
    return experiment.status in ("success", "cancelled")


def test_an_experiment_runs_to_its_end_on_a_worker_and_is_scored(slow):
    slow.start(1)
    out = io.StringIO()
    call_command("run_experiment", "echo", "capitals", "--concurrency", "2", "--scorer",
                 '{"type": "contains", "path": "$.nodes.say.response"}', "--wait", "--timeout", "120", stdout=out)
    printed = json.loads(out.getvalue())
    assert printed["status"] == "success", slow.logs()
    assert printed["progress"]["counts"]["success"] == len(QUESTIONS)
    contains = printed["summary"]["aggregates"]["scorers"]["contains"]
    assert contains["summary"]["count"] == 3 and contains["summary"]["pass_rate"] == pytest.approx(2 / 3)
    experiment = Experiment.objects.get(experiment_id=printed["experiment_id"])
    assert runs_per_item(experiment) == {0: 1, 1: 1, 2: 1, 3: 1}
    assert all(item.scores for item in experiment.items.all())


def test_a_cancel_mid_experiment_ends_every_item(slow):
    slow.start(1)
    experiment = experiment_start(experiment=experiment_create(workflow_id="slow_one", dataset="capitals",
                                                               concurrency=2))
    wait_until(lambda: experiment.items.filter(execution__node_runs__status="running").exists(),
               what="an item's node to run", watched=slow)
    experiment_cancel(experiment=experiment, actor="tester")
    wait_until(lambda: not experiment.items.filter(status__in=("pending", "running")).exists(),
               what="every item to end", watched=slow)
    experiment.refresh_from_db()
    assert (experiment.status, experiment.cancelled_by) == ("cancelled", "tester")
    counts = {status: experiment.items.filter(status=status).count() for status in ExperimentItem.Status.values}
    assert counts["cancelled"] >= 2 and counts["pending"] == counts["running"] == 0, counts
    assert all(count == 1 for count in runs_per_item(experiment).values())
    assert len(runs_per_item(experiment)) == 2, "no item started after the cancel"


@pytest.mark.both_databases  # exactly once under a fault: the database's locks decide
def test_a_worker_killed_mid_experiment_loses_no_item_and_runs_none_twice(slow):
    (first,) = slow.start(1)
    experiment = experiment_start(experiment=experiment_create(workflow_id="slow_one", dataset="capitals",
                                                               concurrency=2, scorers=[{"type": "regex",
                                                                                        "pattern": "done"}]))
    wait_until(lambda: experiment.items.filter(execution__node_runs__status="running").exists(),
               what="an item's node to run", watched=slow)
    slow.kill(first)  # SIGKILL in the middle of an item's node
    slow.start(1)
    deadline = time.monotonic() + 120
    while not ended(experiment):
        assert time.monotonic() < deadline, f"experiment still {experiment.status}\n{slow.logs()}"
        node_runs_sweep()  # what the periodic sweeps do
        experiments_sweep()
        time.sleep(0.5)
    assert experiment.status == "success"
    assert runs_per_item(experiment) == {0: 1, 1: 1, 2: 1, 3: 1}, "each item ran exactly once"
    items = list(experiment.items.all())
    assert all(item.status == "success" and item.scores["regex"]["score"] == 1.0 for item in items)
    assert experiment.summary["aggregates"]["statuses"] == {"success": 4}


@pytest.mark.both_databases  # exactly once under a fault: the database's locks decide
def test_a_worker_killed_mid_scoring_leaves_the_item_to_the_sweep_which_ends_it_once(workers, settings,  # noqa: F811
                                                                                     tmp_path):
    """The judge (3 s, on the worker) is asked, the worker killed while it answers: the sweep
    takes the silent claim over and ends the item once, its run not run again."""
    from tests.experiments.core_support import JUDGE

    calls = tmp_path / "judge-calls.txt"
    judge_argv = [sys.executable, "-c", f"import json, sys, time; sys.stdin.read(); "
                  f"open({str(calls)!r}, 'a').write('call\\n'); time.sleep(3); "
                  "print(json.dumps({'score': 0.5, 'reason': 'half'}))"]
    settings.WORKSPACE_ROOT = tmp_path
    workers.env["WORKSPACE_ROOT"] = str(tmp_path)
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "command": {"kind": "command", "argv": judge_argv}}
    workers.env["COMMAND_BACKEND_ARGV"] = json.dumps(judge_argv)
    load(QUESTIONS[:1], name="one")
    import_documents([{**JUDGE, "runtime": {"backend": "command"}}], actor="test")
    (first,) = workers.start(1)
    experiment = experiment_start(experiment=experiment_create(
        workflow_id="echo", dataset="one", scorers=[{"type": "llm_judge", "rubric": "names it", "agent": "Judge"}]))
    item = experiment.items.get()
    wait_until(lambda: calls.exists(), what="the judge to be asked on the worker", watched=workers)
    workers.kill(first)  # SIGKILL while the judge answers: the item stays claimed by a dead holder
    item.refresh_from_db()
    assert (item.status, item.scoring_attempts) == ("running", 1) and item.scoring_claim
    assert experiments_sweep()["scored"] == 0, "a fresh claim is left to its holder"
    settings.EXPERIMENT_SCORING_STALE_SECONDS = 1
    time.sleep(1.1)
    deadline = time.monotonic() + 60
    while not ended(experiment):
        assert time.monotonic() < deadline, f"experiment still {experiment.status}\n{workers.logs()}"
        experiments_sweep()
        time.sleep(0.2)
    assert experiment.status == "success"
    item.refresh_from_db()
    assert (item.status, item.scores["llm_judge"]["score"], item.scoring_attempts) == ("success", 0.5, 2)
    assert runs_per_item(experiment) == {0: 1}, "its run ran once"
    assert len(calls.read_text().splitlines()) == 2, "asked by the dead worker, then once by the sweep"
    assert experiments_sweep()["scored"] == 0 and item_run_ended(execution_pk=item.execution_id) == "scored already"
