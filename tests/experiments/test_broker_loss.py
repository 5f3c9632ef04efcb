"""Redis restarted while an experiment runs: a Redis that keeps nothing on disk loses every
queued message (the items' node runs, their scoring), and still every item ends, each with
exactly one run, scored — the sweeps send again what was lost."""
import json
import shutil
import subprocess
import sys
import time

import pytest

from core.documents import import_documents
from experiments.models import Experiment
from tests.executions.conftest import ROOT, database_url, workers  # noqa: F401 - the fixture
from tests.experiments.core_support import load, runs_per_item
from tests.experiments.test_worker_core import SLOW_ONE
from tests.slow_chain import slow_argv

pytestmark = [pytest.mark.integration, pytest.mark.both_databases,
              pytest.mark.skipif(not shutil.which("redis-server"), reason="needs redis-server for a private Redis")]

RESTARTS = 3
SLOW_ARGV = slow_argv(4)  # two rounds of 4 s: in flight through every restart


def test_an_experiment_ends_every_item_once_when_redis_restarts_mid_experiment(workers, settings, redis_server,  # noqa: F811
                                                                              tmp_path):
    settings.WORKSPACE_ROOT = tmp_path
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "command": {"kind": "command", "argv": SLOW_ARGV}}
    load()
    import_documents(SLOW_ONE, actor="test")
    env = {"REDIS_URL": redis_server.url, "COMMAND_BACKEND_ARGV": json.dumps(SLOW_ARGV), "WORKSPACE_ROOT": str(tmp_path),
           "SWEEP_EVERY_SECONDS": "1", "NODE_STALE_SECONDS": "3"}
    started = workers.start(2, **env)
    beat = workers.start_beat(**env)
    from django.db import connection

    launched = subprocess.run(
        [sys.executable, "manage.py", "run_experiment", "slow_one", "capitals", "--concurrency", "2",
         "--scorer", json.dumps({"type": "regex", "pattern": "."})],
        cwd=ROOT, env={**workers.env, **env, "DATABASE_URL": database_url(connection)},
        capture_output=True, text=True, timeout=60)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    experiment = Experiment.objects.get(experiment_id=json.loads(launched.stdout)["experiment_id"])

    for _ in range(RESTARTS):  # each time every queued message is lost
        experiment.refresh_from_db()
        assert experiment.status == "running", f"nothing in flight: {experiment.status}\n{workers.logs()}"
        redis_server.stop()
        time.sleep(0.5)
        redis_server.start()
        time.sleep(1.5)

    deadline = time.monotonic() + 120
    while experiment.status == "running":
        assert time.monotonic() < deadline, f"the experiment did not end\n{workers.logs()}"
        time.sleep(0.3)
        experiment.refresh_from_db()
    assert experiment.status == "success"
    assert runs_per_item(experiment) == {0: 1, 1: 1, 2: 1, 3: 1}, "each item ran exactly once"
    assert [(item.status, item.scores["regex"]["score"]) for item in experiment.items.order_by("position")] == \
        [("success", 1.0)] * 4
    assert [process.poll() for process in [*started, beat]] == [None, None, None], workers.logs()
