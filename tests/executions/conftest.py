"""Real Celery worker processes against the test database and the real Redis."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from tests.agents.backends.chat_server import chat_server  # noqa: F401 - the loopback chat-completions fixture
from tests.replay import load_demo

ROOT = Path(__file__).resolve().parents[2]


def database_url(connection) -> str:
    """The URL of the database pytest-django created, for worker processes to open."""
    config = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{config['NAME']}"
    auth = config["USER"] + (f":{config['PASSWORD']}" if config.get("PASSWORD") else "")
    return f"postgres://{auth}@{config['HOST'] or '127.0.0.1'}:{config['PORT'] or 5432}/{config['NAME']}"


class Workers:
    """Start and stop worker processes on a queue of their own."""

    def __init__(self, app, env: dict):
        self.app = app
        self.queue = f"switchyard-test-{uuid.uuid4().hex[:10]}"
        self.env = dict(os.environ, DJANGO_SETTINGS_MODULE="project.settings", CELERY_QUEUE=self.queue, **env)
        self.processes: list[tuple[subprocess.Popen, Path, str]] = []

    def start(self, count: int = 1, *, beat: bool = False, pool: str = "solo", **env) -> list[subprocess.Popen]:
        """Start `count` workers; `beat` runs the periodic sweep inside them; `pool` "prefork"
        gives each one pool process (time limits need it); `env` overrides settings."""
        started = []
        for _ in range(count):
            hostname = f"w{uuid.uuid4().hex[:6]}@switchyard"
            log = tempfile.NamedTemporaryFile(prefix="switchyard-worker-", suffix=".log", delete=False)
            beat_args = ["--beat", "--schedule", f"{log.name}.beat"] if beat else []
            process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "project", "worker", "--pool", pool, "--concurrency", "1",
                 "--queues", self.queue,
                 "--hostname", hostname, "--loglevel", "info", "--without-gossip", "--without-mingle", *beat_args],
                cwd=ROOT, env={**self.env, **env}, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            )
            log.close()
            self.processes.append((process, Path(log.name), hostname))
            started.append((process, hostname))
        app = self.app
        if "REDIS_URL" in env:  # the workers talk to a private Redis: ping them there
            from celery import Celery

            app = Celery("ping", broker=env["REDIS_URL"], backend=env["REDIS_URL"], set_as_current=False)
        deadline = time.monotonic() + 30
        for process, hostname in started:
            while not app.control.ping(destination=[hostname], timeout=0.5):
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"worker {hostname} did not start:\n{self.logs()}")
        return [process for process, _ in started]

    def start_beat(self, *options: str, **env) -> subprocess.Popen:
        """Start a beat of its own (as deployed) that sends the sweep to the workers' queue;
        `options` are more of its command line (e.g. its --scheduler)."""
        log = tempfile.NamedTemporaryFile(prefix="switchyard-beat-", suffix=".log", delete=False)
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "project", "beat", "--loglevel", "info",
             "--schedule", f"{log.name}.schedule", *options],
            cwd=ROOT, env={**self.env, **env}, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        )
        log.close()
        self.processes.append((process, Path(log.name), "beat"))
        return process

    def kill(self, process: subprocess.Popen) -> None:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

    def logs(self) -> str:
        return "\n".join(path.read_text(errors="replace")[-4000:] for _, path, _ in self.processes)

    def stop(self) -> None:
        for process, path, _ in self.processes:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)
            path.unlink(missing_ok=True)
            for beside in path.parent.glob(f"{path.name}.*"):  # a beat's schedule files
                beside.unlink(missing_ok=True)
        try:
            with self.app.connection_for_write() as connection:
                connection.default_channel.queue_delete(self.queue)
        except Exception:  # noqa: BLE001 - best-effort cleanup of a shared Redis
            pass


@pytest.fixture
def workers(transactional_db, settings):
    """A factory of real workers; node runs dispatched by the test go to their queue."""
    from django.db import connection

    from project.celery import app

    settings.NODE_RETRY_BACKOFF_SECONDS = 0.1
    # CELERY_SKIP_CHECKS: Django's system checks, which this process has run, are not run
    # again by each worker as it starts (some 0.4 s of CPU a worker).
    env = {"DATABASE_URL": database_url(connection), "CELERY_SKIP_CHECKS": "1", "NODE_RETRY_BACKOFF_SECONDS": "0.1",
           "NODE_HEARTBEAT_SECONDS": "0.5", "NODE_STALE_SECONDS": "3", "WORKSPACE_ROOT": str(settings.WORKSPACE_ROOT)}
    made = Workers(app, env)
    settings.CELERY_TASK_DEFAULT_QUEUE = made.queue
    try:
        yield made
    finally:
        made.stop()


@pytest.fixture
def in_process(tmp_path, settings):
    """The demo data, for running node runs in this process (`drain`): what the services
    send to workers is recorded, not sent — `in_process.run_node`, `.evaluate` and
    `.raise_derive_requests` are the mocked `apply_async` of those tasks."""
    from types import SimpleNamespace
    from unittest import mock

    settings.WORKSPACE_ROOT = tmp_path
    settings.NODE_RETRY_BACKOFF_SECONDS = 0
    load_demo(tmp_path)
    with mock.patch("executions.tasks.run_node.apply_async") as run_node, \
            mock.patch("quality.tasks.evaluate.apply_async") as evaluate, \
            mock.patch("quality.derive_requests.tasks.raise_derive_requests.apply_async") as raise_derive_requests, \
            mock.patch("executions.tasks.child_ended.apply_async") as child_ended:
        yield SimpleNamespace(run_node=run_node, evaluate=evaluate, raise_derive_requests=raise_derive_requests,
                              child_ended=child_ended)


@pytest.fixture
def demo(workers, settings, tmp_path):
    """The demo data, and a factory of real workers that can read its workspace (a test
    module with a `demo` of its own uses that one instead)."""
    settings.WORKSPACE_ROOT = tmp_path
    workers.env["WORKSPACE_ROOT"] = str(tmp_path)
    load_demo(tmp_path)
    return workers


def wait_for(execution, statuses=("success", "failed", "cancelled", "escalated", "waiting"), timeout=60, workers=None):
    deadline = time.monotonic() + timeout
    while True:
        execution.refresh_from_db()
        if execution.status in statuses:
            return execution
        if time.monotonic() > deadline:
            logs = workers.logs() if workers else ""
            raise AssertionError(f"{execution.execution_id} still {execution.status} after {timeout}s\n{logs}")
        time.sleep(0.1)


def approve_gate(execution, node_id="approve", decision="approve", **fields):
    """Decide the gate `node_id` waiting in `execution` (release_review's gate before publishing)
    as an approver, as a person would, and return the execution."""
    from django.contrib.auth.models import Group, User

    from executions.services import gate_decide

    approver, created = User.objects.get_or_create(username="gate-approver")
    if created:
        approver.groups.add(Group.objects.get_or_create(name="approver")[0])
    gate = execution.node_runs.get(node_id=node_id, status="waiting")
    gate_decide(execution=execution, node_run_id=gate.pk, decision=decision, actor=approver, **fields)
    execution.refresh_from_db()
    return execution


def drain(execution, limit=100):
    """Run every node run that is due, in this process, until none is left."""
    from django.utils import timezone

    from executions.services import node_run_execute

    for _ in range(limit):
        due = execution.node_runs.filter(status="pending", available_at__lte=timezone.now()).order_by("sequence").first()
        if due is None:
            break
        node_run_execute(node_run_id=due.pk, worker="test")
    execution.refresh_from_db()
    return execution


def thesis_reply(body):
    """A chat-completions reply each agent of the thesis chain accepts, told apart by its system prompt."""
    system = body["messages"][0]["content"]
    if system.startswith("You check each claim"):  # the validator
        return {"validation_results": [{"atom_id": "a1", "valid": True}]}
    if system.startswith("You integrate"):  # the knowledge vault
        return {"integrated": 1}
    return {"atoms": [{"atom_id": "a1", "atom_type": "claim", "content": "A claim.", "confidence": 0.9}]}
