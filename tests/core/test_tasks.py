"""Sending a task after commit: by name, to the queue, and when the broker is away."""
import base64
import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import redis

from core.tasks import send_after_commit

ROOT = Path(__file__).resolve().parents[2]

SEND = """
import time
import django
django.setup()
from core.tasks import send_after_commit
started = time.monotonic()
send_after_commit("core.tasks.ping", "hello")
print(f"returned after {time.monotonic() - started:.1f} s")
"""


def test_it_logs_a_send_to_an_unreachable_broker_fast_instead_of_raising(tmp_path):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # DATABASE_URL unset: an empty SQLite file in the data folder is enough for on_commit.
    env = {key: value for key, value in os.environ.items()
           if key not in {"CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "DATABASE_URL"}}
    env.update(REDIS_URL=f"redis://127.0.0.1:{port}/0", DJANGO_SETTINGS_MODULE="project.settings",
               SWITCHYARD_DATA_DIR=str(tmp_path))

    completed = subprocess.run([sys.executable, "-c", SEND], cwd=ROOT, env=env, capture_output=True, text=True,
                               timeout=60)

    assert completed.returncode == 0, completed.stderr
    assert "could not send core.tasks.ping('hello',) to the queue" in completed.stderr
    seconds = float(completed.stdout.split()[2])
    assert seconds < 5, f"a send to an unreachable broker took {seconds} s"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("task_name", ["core.tasks.ping", "agents.not_imported_here"])
def test_it_sends_a_task_by_name_to_the_queue_of_the_moment_with_its_countdown_and_limits(settings, task_name):
    # A task this process has imported sends itself, any other goes by name: the queue
    # gets the same message either way.
    from django.db import transaction

    settings.CELERY_TASK_DEFAULT_QUEUE = queue = f"switchyard-test-{uuid.uuid4().hex[:12]}"
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        with transaction.atomic():
            send_after_commit(task_name, 7, countdown=30, soft_time_limit=10, time_limit=12)
            assert broker.llen(queue) == 0, "sent before the commit"
        (message,) = [json.loads(raw) for raw in broker.lrange(queue, 0, -1)]
    finally:
        broker.delete(queue)
    headers = message["headers"]
    assert headers["task"] == task_name
    assert json.loads(base64.b64decode(message["body"]))[0] == [7]
    assert headers["timelimit"] == [12, 10]
    assert headers["eta"] is not None
    assert message["properties"]["delivery_info"]["routing_key"] == queue


@pytest.mark.django_db(transaction=True)
def test_it_sends_a_batch_after_the_commit_in_order_and_nothing_when_the_transaction_rolls_back(settings):
    from django.db import transaction

    from core.tasks import send_all_after_commit

    settings.CELERY_TASK_DEFAULT_QUEUE = queue = f"switchyard-test-{uuid.uuid4().hex[:12]}"
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        with pytest.raises(RuntimeError), transaction.atomic():
            send_all_after_commit("core.tasks.ping", [(0,)])
            raise RuntimeError("rolled back")
        with transaction.atomic():
            send_all_after_commit("core.tasks.ping", [(1,), (2,), (3,)])
            assert broker.llen(queue) == 0, "sent before the commit"
        # LPUSH puts each message at the head; workers take from the tail: the first sent is the first taken.
        messages = [json.loads(raw) for raw in reversed(broker.lrange(queue, 0, -1))]
    finally:
        broker.delete(queue)
    assert [json.loads(base64.b64decode(message["body"]))[0] for message in messages] == [[1], [2], [3]]
