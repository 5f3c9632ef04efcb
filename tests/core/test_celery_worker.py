"""Celery is wired to Redis and a real worker runs what the web process enqueues."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.tasks import ping
from project.celery import app

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.integration
def test_it_runs_an_enqueued_task_on_a_real_worker(celery_worker_process):
    assert app.conf.task_always_eager is False

    result = ping.apply_async(args=["hello"], queue=celery_worker_process.queue)

    assert result.get(timeout=60) == {"pong": "hello", "worker": celery_worker_process.hostname}


def test_it_uses_redis_url_as_broker_and_result_backend():
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"}
    }
    env.update(REDIS_URL="redis://redis.example.internal:6390/7", DJANGO_SETTINGS_MODULE="project.settings")
    script = (
        "import json, django; django.setup(); from project.celery import app; "
        "print(json.dumps([app.conf.broker_url, app.conf.result_backend, app.conf.task_always_eager]))"
    )

    completed = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )

    assert completed.returncode == 0, completed.stderr
    broker_url, result_backend, always_eager = json.loads(completed.stdout.strip().splitlines()[-1])
    assert broker_url == "redis://redis.example.internal:6390/7"
    assert result_backend == "redis://redis.example.internal:6390/7"
    assert always_eager is False
