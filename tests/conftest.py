"""Shared fixtures."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class WorkerProcess:
    queue: str
    hostname: str
    process: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def _redis_answers(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2).ping())
    except redis.RedisError:
        return False


@pytest.fixture(scope="session")
def celery_worker_process():
    """A real `celery -A project worker` subprocess on its own queue and hostname.

    It uses the broker/result backend from the settings (REDIS_URL); bin/test makes sure
    a Redis answers there. The worker sees the environment's DATABASE_URL, not pytest's
    test database (an in-memory SQLite one is invisible to other processes), so only
    enqueue tasks that do not touch the database.
    """
    from django.conf import settings

    from project.celery import app

    if not _redis_answers(settings.CELERY_BROKER_URL):
        pytest.fail(
            "No Redis answers at the Celery broker URL (REDIS_URL). "
            "Run the tests with bin/test, which starts a private Redis when needed."
        )

    token = uuid.uuid4().hex[:12]
    queue = f"switchyard-test-{token}"
    hostname = f"pytest-{token}@switchyard"
    env = dict(os.environ, CELERY_QUEUE=queue, DJANGO_SETTINGS_MODULE="project.settings")
    log_file = tempfile.NamedTemporaryFile(
        prefix="switchyard-worker-", suffix=".log", delete=False
    )
    log_path = Path(log_file.name)
    command = [
        sys.executable, "-m", "celery", "-A", "project", "worker",
        "--pool", "solo", "--queues", queue, "--hostname", hostname,
        "--loglevel", "info", "--without-gossip", "--without-mingle",
    ]
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
        stdout=log_file, stderr=subprocess.STDOUT,
    )
    log_file.close()
    worker = WorkerProcess(queue=queue, hostname=hostname, process=process, log_path=log_path)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                pytest.fail(f"The Celery worker exited with {process.returncode}:\n{worker.log()}")
            if app.control.ping(destination=[hostname], timeout=1.0):
                break
            if time.monotonic() > deadline:
                pytest.fail(f"The Celery worker did not answer a ping within 30s:\n{worker.log()}")
        yield worker
    finally:
        if process.poll() is None:
            process.terminate()  # SIGTERM: warm shutdown
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        try:  # leave nothing behind in a shared Redis
            with app.connection_for_write() as connection:
                connection.default_channel.queue_delete(queue)
        except Exception:  # noqa: BLE001 - best-effort cleanup
            pass
        log_path.unlink(missing_ok=True)
