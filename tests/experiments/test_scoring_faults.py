"""Faults while an item is scored: two deliveries at once ask the judge once (the scoring is
claimed first), a claim whose holder died is taken over by the sweep, and a scoring error
that keeps recurring fails the item after EXPERIMENT_SCORING_ATTEMPTS while the experiment
goes on."""
from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from unittest import mock

import pytest
from django.db import connection
from django.utils import timezone

from core.documents import import_documents
from experiments.experiment_services import experiment_create, experiment_start, status_counts
from experiments.models import Experiment, ExperimentItem
from experiments.scoring import experiments_sweep, item_run_ended
from tests.executions.conftest import drain, in_process  # noqa: F401 - fixture
from tests.experiments.core_support import JUDGE, load, run_in_process

pytestmark = pytest.mark.django_db(transaction=True)


def counting_judge(settings, calls, seconds: float = 0.0) -> None:
    """The agent Judge on a command backend that writes a line to `calls` each time it is
    asked, takes `seconds`, and answers a score."""
    script = (f"import json, sys, time; sys.stdin.read(); open({str(calls)!r}, 'a').write('call\\n'); "
              f"time.sleep({seconds}); print(json.dumps({{'score': 0.75, 'reason': 'names the city'}}))")
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "judge_command": {"kind": "command",
                                                                         "argv": [sys.executable, "-c", script]}}
    import_documents([JUDGE], actor="test")


def asked(calls) -> int:
    return len(calls.read_text().splitlines()) if calls.exists() else 0


@pytest.fixture
def judged(in_process, settings, tmp_path):  # noqa: F811 - the fixture imported above
    """An experiment of one item at a time judged by the counting judge, its first item's run ended."""
    with mock.patch("experiments.tasks.run_ended.apply_async"):
        load()
        calls = tmp_path / "judge-calls.txt"
        counting_judge(settings, calls, seconds=1.0)
        experiment = experiment_start(experiment=experiment_create(
            workflow_id="echo", dataset="capitals", concurrency=1,
            scorers=[{"type": "llm_judge", "rubric": "names the city", "agent": "Judge"}]))
        item = experiment.items.get(status="running")
        drain(item.execution)
        yield experiment, item, calls


def test_two_deliveries_at_once_ask_the_judge_once(judged):
    experiment, item, calls = judged
    start = threading.Barrier(2)

    def deliver(_):
        try:
            start.wait()
            return item_run_ended(execution_pk=item.execution_id)
        finally:
            connection.close()

    with ThreadPoolExecutor(2) as pool:
        outcomes = sorted(pool.map(deliver, range(2)))
    assert outcomes == ["scored", "scoring elsewhere"]
    assert asked(calls) == 1, "the judge was asked once"
    item.refresh_from_db()
    assert item.status == "success" and item.scores["llm_judge"]["score"] == 0.75
    assert (item.scoring_claim, item.scoring_attempts) == ("", 1)


def test_a_held_claim_sends_a_delivery_away_and_the_sweep_takes_over_a_dead_one(judged, settings):
    experiment, item, calls = judged
    held = timezone.now()
    ExperimentItem.objects.filter(pk=item.pk).update(scoring_claim="dead/worker", scoring_claimed_at=held,
                                                     scoring_attempts=1)
    assert item_run_ended(execution_pk=item.execution_id) == "scoring elsewhere"
    assert experiments_sweep()["scored"] == 0, "a live claim is left to its holder"
    assert asked(calls) == 0
    item.refresh_from_db()
    assert item.status == "running"
    # Its holder went silent for longer than EXPERIMENT_SCORING_STALE_SECONDS: the sweep takes it over.
    ExperimentItem.objects.filter(pk=item.pk).update(
        scoring_claimed_at=held - timedelta(seconds=settings.EXPERIMENT_SCORING_STALE_SECONDS + 1))
    assert experiments_sweep()["scored"] == 1
    assert asked(calls) == 1
    item.refresh_from_db()
    assert item.status == "success" and item.scoring_attempts == 2 and item.scoring_claim == ""


def test_a_claim_taken_over_mid_scoring_asks_no_more_judges_and_stores_nothing(in_process, settings,  # noqa: F811
                                                                                tmp_path):
    from engine.experiments.scorers import Score

    with mock.patch("experiments.tasks.run_ended.apply_async"):
        load()
        counting_judge(settings, tmp_path / "calls.txt")
        experiment = experiment_start(experiment=experiment_create(
            workflow_id="echo", dataset="capitals", concurrency=1,
            scorers=[{"type": "llm_judge", "rubric": "names the city", "agent": "Judge", "name": "first"},
                     {"type": "llm_judge", "rubric": "is short", "agent": "Judge", "name": "second"}]))
        item = experiment.items.get(status="running")
        drain(item.execution)

        def slow_first_call(*args, **kwargs):  # meanwhile the sweep took the claim: this holder seemed dead
            ExperimentItem.objects.filter(pk=item.pk).update(scoring_claim="sweep/holder")
            return Score(1.0, "fine")

        with mock.patch("experiments.scoring._judged", side_effect=slow_first_call) as judge:
            assert item_run_ended(execution_pk=item.execution_id) == "scoring taken over"
        assert judge.call_count == 1, "the second judge was not asked"
        item.refresh_from_db()
        assert (item.status, item.scores, item.scoring_claim) == ("running", {}, "sweep/holder")


def test_a_recurring_scoring_error_fails_the_item_and_the_experiment_goes_on(in_process, api, settings):  # noqa: F811
    settings.EXPERIMENT_SCORING_ATTEMPTS = 3
    with mock.patch("experiments.tasks.run_ended.apply_async"):
        load()
        experiment = experiment_start(experiment=experiment_create(workflow_id="echo", dataset="capitals",
                                                                   concurrency=1, scorers=[{"type": "contains"}]))
        item = experiment.items.get(status="running")
        drain(item.execution)
        with mock.patch("experiments.scoring.score", side_effect=RuntimeError("the scorer broke on q1")):
            assert item_run_ended(execution_pk=item.execution_id) == "scoring failed (attempt 1 of 3)"
            item.refresh_from_db()
            assert (item.status, item.scoring_claim, item.scoring_attempts) == ("running", "", 1)
            assert item.scoring_error == "RuntimeError: the scorer broke on q1"
            assert experiments_sweep()["scored"] == 0  # attempt 2, by the sweep
            assert item_run_ended(execution_pk=item.execution_id) == "scoring failed"  # attempt 3: the last
        item.refresh_from_db()
        assert (item.status, item.error_code) == ("failed", "SCORING_FAILED")
        assert item.error == "its scoring failed 3 times; the last: RuntimeError: the scorer broke on q1"
        assert item.latency_seconds is not None and item.nodes, "its run's figures are kept"
        assert item_run_ended(execution_pk=item.execution_id) == "scored already"
        experiment = run_in_process(experiment)
    assert experiment.status == "success"
    assert status_counts(experiment) == {"pending": 0, "running": 0, "success": 3, "failed": 1, "cancelled": 0}
    assert experiment.summary["aggregates"]["statuses"] == {"failed": 1, "success": 3}
    page = api.viewer.get(f"/api/experiments/{experiment.experiment_id}/items?status=failed").json()
    assert [(row["item_id"], row["error_code"]) for row in page["items"]] == [("q1", "SCORING_FAILED")]
    assert "the scorer broke on q1" in page["items"][0]["error"]


def test_an_item_whose_scoring_never_ends_fails_once_its_attempts_are_spent(in_process, settings):  # noqa: F811
    """Each claim died with its worker (never an error to record): past the attempts it fails."""
    settings.EXPERIMENT_SCORING_ATTEMPTS = 2
    with mock.patch("experiments.tasks.run_ended.apply_async"):
        load()
        experiment = experiment_start(experiment=experiment_create(workflow_id="echo", dataset="capitals",
                                                                   concurrency=1, scorers=[{"type": "contains"}]))
        item = experiment.items.get(status="running")
        drain(item.execution)
        long_ago = timezone.now() - timedelta(seconds=settings.EXPERIMENT_SCORING_STALE_SECONDS + 1)
        ExperimentItem.objects.filter(pk=item.pk).update(scoring_claim="dead/3", scoring_claimed_at=long_ago,
                                                         scoring_attempts=2)
        assert item_run_ended(execution_pk=item.execution_id) == "scoring failed"
    item.refresh_from_db()
    assert (item.status, item.error_code) == ("failed", "SCORING_FAILED")
    assert item.error == "its scoring was begun 2 times without an end"
    assert Experiment.objects.get(pk=experiment.pk).items.filter(status="running").count() == 1, "the next one started"
