"""Redis restarted again and again while runs go on: a Redis that keeps nothing on disk loses
every queued message, and still every run finishes and every worker stays up."""
import json
import shutil
import subprocess
import sys
import time

import pytest

from core.documents import import_documents
from executions.models import Execution
from executions.selectors import run_evaluation
from tests.executions.conftest import ROOT, database_url
from tests.slow_chain import SLOW_CHAIN_DOCUMENTS, slow_argv

pytestmark = [pytest.mark.integration, pytest.mark.both_databases,
              pytest.mark.skipif(not shutil.which("redis-server"), reason="needs redis-server for a private Redis")]

NODE_ARGV = slow_argv(2)
RUNS = 4
RESTARTS = 5


def test_it_finishes_every_run_and_keeps_every_worker_when_redis_restarts_five_times(workers, settings, redis_server):
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "command": {"kind": "command", "argv": NODE_ARGV}}
    import_documents(SLOW_CHAIN_DOCUMENTS, actor="test")
    env = {"REDIS_URL": redis_server.url, "COMMAND_BACKEND_ARGV": json.dumps(NODE_ARGV),
           "SWEEP_EVERY_SECONDS": "1", "NODE_STALE_SECONDS": "3"}
    started = workers.start(2, **env)
    beat = workers.start_beat(**env)
    from django.db import connection

    starts = [subprocess.Popen([sys.executable, "manage.py", "run_workflow", "slow_chain"], cwd=ROOT,
                               env={**workers.env, **env, "DATABASE_URL": database_url(connection)},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(RUNS)]
    ids = []
    for start in starts:
        out, err = start.communicate(timeout=60)
        assert start.returncode == 0, out + err
        ids.append(out.strip())

    for _ in range(RESTARTS):  # each time every queued message is lost
        assert Execution.objects.filter(execution_id__in=ids, status="running").exists(), \
            f"no run in flight: {list(Execution.objects.values_list('status', 'ended_reason'))}\n{workers.logs()}"
        redis_server.stop()
        time.sleep(0.5)
        redis_server.start()
        time.sleep(1.5)

    deadline = time.monotonic() + 60
    while Execution.objects.filter(execution_id__in=ids).exclude(status__in=["success", "failed"]).exists():
        assert time.monotonic() < deadline, f"runs did not end\n{workers.logs()}"
        time.sleep(0.2)
    for execution in Execution.objects.filter(execution_id__in=ids):
        assert execution.status == "success", f"{execution.execution_id}: {execution.ended_reason}\n{workers.logs()}"
        assert execution.node_runs.filter(status="success").count() == 3
    deadline = time.monotonic() + 30
    while any(not run_evaluation(execution).exists() for execution in Execution.objects.filter(execution_id__in=ids)):
        assert time.monotonic() < deadline, f"a run was not evaluated\n{workers.logs()}"
        time.sleep(0.2)

    assert [process.poll() for process in [*started, beat]] == [None, None, None], workers.logs()
    ping = subprocess.run([sys.executable, "-m", "celery", "-A", "project", "inspect", "ping", "--timeout", "5"],
                          cwd=ROOT, env={**workers.env, **env}, capture_output=True, text=True, timeout=60)
    assert "2 nodes online" in ping.stdout, ping.stdout + ping.stderr
