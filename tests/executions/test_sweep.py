"""The sweep after messages were lost: one sweep at a time (a lock in Redis), a run started
while Redis is away is picked up, an ended run's lost evaluation is sent again."""
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone
from kombu.exceptions import OperationalError

from core.locks import redis_lock
from executions.models import Execution, NodeRun
from executions.services import execution_cancel, execution_start, node_runs_sweep, node_runs_sweep_exclusive
from quality.evaluations import execution_evaluate
from tests.executions.conftest import drain
from workflows.models import Workflow

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SKIPPED = {"skipped": "another sweep is running"}


@pytest.fixture
def queue(settings):
    """A queue of the test's own: it names the sweep's lock and the evaluations sent."""
    settings.CELERY_TASK_DEFAULT_QUEUE = f"switchyard-test-{uuid.uuid4().hex[:10]}"
    return settings.CELERY_TASK_DEFAULT_QUEUE


def test_it_skips_a_sweep_while_another_one_runs(queue):
    inside, release = threading.Event(), threading.Event()

    def slow_sweep(now=None):
        inside.set()
        release.wait(10)
        return {"swept": True}

    with mock.patch("executions.services.sweep.node_runs_sweep", side_effect=slow_sweep), ThreadPoolExecutor(1) as pool:
        first = pool.submit(node_runs_sweep_exclusive)
        assert inside.wait(10), "the first sweep did not start"
        started = time.monotonic()
        second = node_runs_sweep_exclusive()
        waited = time.monotonic() - started
        release.set()
        assert first.result(timeout=10) == {"swept": True}

    assert second == SKIPPED
    assert waited < 1, "the second sweep returned at once rather than waiting for the lock"
    assert "skipped" not in node_runs_sweep_exclusive(), "the lock is free once the first sweep is done"


def test_it_sweeps_again_once_the_lock_of_a_dead_sweep_expires(queue, settings):
    settings.SWEEP_LOCK_SECONDS = 1
    dead = redis_lock(f"sweep:{queue}", timeout=1)
    assert dead.__enter__() is True  # taken, and never released: its process died

    assert node_runs_sweep_exclusive() == SKIPPED
    time.sleep(1.3)
    assert node_runs_sweep_exclusive() == {"requeued": [], "redispatched": [], "failed": [], "ended": [],
                                           "evaluations": [], "gates_timed_out": [], "copies_resent": [],
                                           "children_ended": []}


def test_it_starts_a_run_while_redis_is_away_and_the_sweep_sends_its_nodes(api, in_process, queue, settings, caplog):
    in_process.run_node.side_effect = OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    response = api.author.post("/api/executions", {"workflow_id": "parallel_analysis", "input": {"repository": "a"}})

    assert response.status_code == 201, response.content
    execution = Execution.objects.get(execution_id=response.json()["execution_id"])
    pending = sorted(execution.node_runs.values_list("pk", flat=True))
    assert len(pending) == 3 and execution.status == "running"
    assert "could not send executions.run_node" in caplog.text

    in_process.run_node.side_effect = None  # Redis is back
    in_process.run_node.reset_mock()
    NodeRun.objects.filter(pk__in=pending).update(
        heartbeat_at=timezone.now() - timedelta(seconds=settings.NODE_STALE_SECONDS + 1))
    assert sorted(node_runs_sweep()["redispatched"]) == pending
    assert sorted(call.args[0][0] for call in in_process.run_node.call_args_list) == pending
    assert drain(execution).status == "success"


def test_it_sends_again_the_evaluation_of_a_run_that_ended_without_one(in_process, queue, settings):
    workflow = Workflow.objects.get(workflow_id="thesis_reading")
    lost, evaluated, cancelled, old = (execution_start(workflow=workflow) for _ in range(4))
    for execution in (lost, evaluated, old):
        assert drain(execution).status == "success"
    execution_cancel(execution=cancelled)
    assert execution_evaluate(execution_pk=evaluated.pk) is not None
    now = timezone.now()
    Execution.objects.filter(pk__in=[lost.pk, evaluated.pk, cancelled.pk]).update(
        completed_at=now - timedelta(seconds=settings.NODE_STALE_SECONDS + 5))
    Execution.objects.filter(pk=old.pk).update(completed_at=now - timedelta(hours=2))
    in_process.evaluate.reset_mock()

    assert node_runs_sweep()["evaluations"] == [lost.pk]
    assert [call.args[0] for call in in_process.evaluate.call_args_list] == [(lost.pk,)]
    assert node_runs_sweep()["evaluations"] == [], "sent once per NODE_STALE_SECONDS, not at every sweep"

    execution_evaluate(execution_pk=lost.pk)  # a worker got it
    settings.CELERY_TASK_DEFAULT_QUEUE += "-later"  # past the wait between two sends
    assert node_runs_sweep()["evaluations"] == [], "an evaluated run is not sent again"
