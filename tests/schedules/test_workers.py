"""A schedule's fire on real processes: the fire task sent through the broker starts a run a
real worker completes, and a real `celery beat` with the DatabaseScheduler (as deployed)
sends a schedule's fire, and still the sweeps of CELERY_BEAT_SCHEDULE."""
import json
import time
from datetime import timedelta

from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from schedules.models import Schedule, ScheduleFire
from schedules.services import schedule_create
from tests.executions.conftest import wait_for, workers  # noqa: F401 - real worker processes on the test database

SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"


def every_minute(workflow, *, name="every minute"):
    """A schedule of `* * * * *` whose current minute is its own and due: made a minute ago."""
    schedule = schedule_create(workflow_id=workflow.workflow_id, name=name, cron="* * * * *",
                               input={"repository": "acme"})
    a_minute_ago = timezone.now() - timedelta(minutes=1)
    Schedule.objects.filter(pk=schedule.pk).update(active_since=a_minute_ago)
    PeriodicTask.objects.filter(pk=schedule.periodic_task_id).update(last_run_at=a_minute_ago)
    return schedule


def started_run(schedule, workers, timeout=60):  # noqa: F811 - the fixture's value
    deadline = time.monotonic() + timeout
    while not (fire := ScheduleFire.objects.filter(schedule=schedule, execution__isnull=False).first()):
        assert time.monotonic() < deadline, f"no run started within {timeout}s\n{workers.logs()}"
        time.sleep(0.2)
    assert fire is not None and fire.execution is not None
    return wait_for(fire.execution, statuses=("success", "failed"), workers=workers)


def test_a_fire_sent_through_the_broker_starts_a_run_the_worker_completes(workers, workflow):  # noqa: F811
    from project.celery import app

    workers.start(1)
    schedule = every_minute(workflow)
    for _ in range(2):  # the same fire twice: one run
        app.send_task("schedules.fire", [schedule.pk], queue=workers.queue)
    run = started_run(schedule, workers)
    assert run.status == "success", workers.logs()
    assert ScheduleFire.objects.filter(schedule=schedule).count() == 1


def test_a_real_beat_with_the_database_scheduler_sends_the_fire_and_the_sweeps(workers, workflow):  # noqa: F811
    workers.start(1)
    schedule = every_minute(workflow)
    workers.start_beat("--scheduler", SCHEDULER, SWEEP_EVERY_SECONDS="1")
    run = started_run(schedule, workers)
    assert run.status == "success", workers.logs()
    # The sweeps of CELERY_BEAT_SCHEDULE, written to the database scheduler's table as it started.
    sweeps = {task.name: (task.task, task.interval.every, task.interval.period, task.enabled)
              for task in PeriodicTask.objects.filter(interval__isnull=False).select_related("interval")}
    assert {name: sweeps.get(name) for name in ("sweep-node-runs", "sweep-derive-requests", "sweep-experiments")} == {
        "sweep-node-runs": ("executions.sweep", 1, "seconds", True),
        "sweep-derive-requests": ("agents.sweep", 1, "seconds", True),
        "sweep-experiments": ("experiments.sweep", 1, "seconds", True)}
    assert json.loads(PeriodicTask.objects.get(pk=schedule.periodic_task_id).args) == [schedule.pk]
    deadline = time.monotonic() + 30  # and the beat sends them: a sweep reaches the worker
    while "Task executions.sweep" not in workers.logs():
        assert time.monotonic() < deadline, workers.logs()
        time.sleep(0.2)
