"""bin/run, started for real on a fresh data folder: it serves as deployed (gunicorn, DEBUG
off, static files), supervisord restarts a killed worker, Ctrl-C stops everything, and a
stop lets each worker finish the node it runs."""
from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.private_redis import free_port, port_answers
from tests.slow_chain import SLOW_CHAIN_DOCUMENTS, calls_made, counted_argv

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.integration, pytest.mark.own_database,
              pytest.mark.skipif(not shutil.which("redis-server"), reason="needs redis-server")]

# What the developer's shell may hold that would change what is tested: the product must
# run from its defaults, on SQLite in the data folder.
UNSET = ("DEBUG", "SECRET_KEY", "DATABASE_URL", "ALLOWED_HOSTS", "HOST", "CELERY_QUEUE", "CELERY_BROKER_URL",
         "CELERY_RESULT_BACKEND", "STATIC_ROOT", "WORKSPACE_ROOT", "DJANGO_ALLOW_ASYNC_UNSAFE", "DJANGO_SETTINGS_MODULE",
         "WORKERS", "WEB_CONCURRENCY")


class Run:
    """bin/run in a session of its own, so that every process it starts can be found."""

    def __init__(self, tmp_path: Path, *args: str, **env: str):
        self.port = free_port()
        self.env = {key: value for key, value in os.environ.items() if key not in UNSET}
        self.env.update(SWITCHYARD_DATA_DIR=str(tmp_path / "data"), PORT=str(self.port), WEB_CONCURRENCY="1", **env)
        self.log = tmp_path / "bin-run.log"
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen([str(ROOT / "bin" / "run"), *args], cwd=ROOT, env=self.env,
                                            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_until_serving(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while "Switchyard is running" not in self.output():
            assert self.process.poll() is None, f"bin/run exited with {self.process.returncode}:\n{self.output()}"
            assert time.monotonic() < deadline, f"bin/run did not serve within {timeout} s:\n{self.output()}"
            time.sleep(0.2)

    def get(self, path: str, host: str = "127.0.0.1") -> tuple[int, dict, str]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        connection.request("GET", path, headers={"Host": f"{host}:{self.port}"})
        response = connection.getresponse()
        body = response.read().decode(errors="replace")
        connection.close()
        return response.status, dict(response.getheaders()), body

    def supervisorctl(self, *args: str) -> str:
        completed = subprocess.run([str(ROOT / ".venv" / "bin" / "supervisorctl"), "-c", "deploy/supervisord.conf", *args],
                                   cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=30)
        return completed.stdout.strip()

    def session(self) -> dict[int, str]:
        """The processes left in bin/run's session: pid → command."""
        found = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                text = stat.read_text()
            except OSError:  # gone meanwhile
                continue
            fields = text[text.rindex(")") + 2:].split()
            if int(fields[3]) == self.process.pid:  # the session id
                found[int(stat.parent.name)] = text[text.index("(") + 1:text.rindex(")")]
        return found

    def stop(self, timeout: float = 90) -> int:
        """Ctrl-C, and wait until nothing it started is left."""
        self.process.send_signal(signal.SIGINT)
        code = self.process.wait(timeout=timeout)
        deadline = time.monotonic() + 10
        while self.session() and time.monotonic() < deadline:
            time.sleep(0.2)
        return code

    def kill(self) -> None:
        if self.process.poll() is None or self.session():
            for pid in self.session():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.process.wait(timeout=30)


def test_it_serves_as_deployed_and_outlives_a_killed_worker(tmp_path, redis_server):
    run = Run(tmp_path, REDIS_URL=redis_server.url)
    try:
        run.wait_until_serving()

        status, headers, _ = run.get("/static/js/api.js")
        assert (status, headers["Server"].split("/")[0]) == (200, "gunicorn"), run.output()
        status, _, body = run.get("/no-such-page/")
        assert status == 404 and "Not Found" in body
        assert "URLconf" not in body and "DEBUG = True" not in body, "a 404 is the plain page, not the debug page"
        status, _, body = run.get("/", host="evil.example")
        assert status == 400 and "Bad Request (400)" in body
        for secret in ("ALLOWED_HOSTS", "DisallowedHost", "settings", "Traceback", "environ"):
            assert secret not in body

        pids = {name: int(run.supervisorctl("pid", name)) for name in ("web", "worker:worker0", "beat")}
        os.kill(pids["worker:worker0"], signal.SIGKILL)
        assert run.get("/static/js/api.js")[0] == 200, "the web answers while the worker is down"
        deadline = time.monotonic() + 60
        while not run.supervisorctl("status", "worker:worker0").split()[1:2] == ["RUNNING"] \
                or int(run.supervisorctl("pid", "worker:worker0")) == pids["worker:worker0"]:
            assert time.monotonic() < deadline, f"the worker was not restarted:\n{run.output()}"
            time.sleep(0.5)
        completed = subprocess.run(
            [sys.executable, "manage.py", "run_workflow", "thesis_reading", "--wait", "--timeout", "60"],
            cwd=ROOT, env=run.env, capture_output=True, text=True, timeout=90)
        assert completed.returncode == 0, completed.stdout + completed.stderr + run.output()
        assert json.loads(completed.stdout)["status"] == "success"
        started = run.session()
        assert {pids["web"], pids["beat"]} <= set(started)

        assert run.stop() == 0, run.output()
        assert run.session() == {}, f"left running after Ctrl-C: {run.session()}"
        assert not port_answers(run.port)
        assert "exited: worker0 (terminated by SIGKILL; not expected)" in run.output()
        assert "web      | " in run.output() and "worker0  | " in run.output(), "each line names its program"
    finally:
        run.kill()


def test_it_runs_the_development_server_with_debug_on_and_a_redis_of_its_own(tmp_path):
    run = Run(tmp_path, "--dev", REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")  # nobody answers there
    try:
        run.wait_until_serving()

        status, _, body = run.get("/no-such-page/")
        assert status == 404 and "DEBUG = True" in body, "the debug page"
        assert "redis" in run.supervisorctl("status")
        assert any(command == "redis-server" for command in run.session().values())

        assert run.stop() == 0, run.output()
        assert run.session() == {}, f"left running after Ctrl-C: {run.session()}"
    finally:
        run.kill()


def test_it_lets_each_worker_finish_its_node_and_take_nothing_new_when_stopped(tmp_path, redis_server):
    calls = tmp_path / "calls"
    run = Run(tmp_path, REDIS_URL=redis_server.url, COMMAND_BACKEND_ARGV=json.dumps(counted_argv(4, str(calls))))
    try:
        run.wait_until_serving()

        def manage(*args: str, stdin: str | None = None) -> str:
            done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=run.env, input=stdin,
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stdout + done.stderr
            return done.stdout.strip()

        manage("import_document", "-", stdin=json.dumps(SLOW_CHAIN_DOCUMENTS))
        execution_id = manage("run_workflow", "slow_chain")
        deadline = time.monotonic() + 30
        while not calls_made(calls):
            assert time.monotonic() < deadline, f"step_0 did not call its backend:\n{run.output()}"
            time.sleep(0.1)

        run.process.send_signal(signal.SIGTERM)  # mid-call: 4 s to go
        assert run.process.wait(timeout=60) == 0, run.output()
        with sqlite3.connect(tmp_path / "data" / "switchyard.sqlite3") as database:
            node_runs = dict(database.execute(
                "SELECT r.node_id, r.status FROM executions_noderun r JOIN executions_execution e "
                "ON e.id = r.execution_id WHERE e.execution_id = ?", [execution_id]).fetchall())
        assert node_runs.get("step_0") == "success", f"{node_runs}\n{run.output()}"
        assert len(calls_made(calls)) == 1, "one backend call: the one in flight, finished; nothing new started"
        assert node_runs.get("step_1") in (None, "pending"), "the next node was taken by no worker"
        assert "WorkerLostError" not in run.output()
    finally:
        run.kill()
