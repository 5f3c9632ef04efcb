"""Faults: a worker killed mid-node, a task delivered twice, a cancelled run, a Redis restart,
a database connection terminated while a node's result is in hand, a backend call left
running by a killed worker, a message redelivered after a killed worker's visibility timeout."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import psycopg
import pytest
from django.db import connection

from core.documents import import_documents
from executions.models import Execution, NodeRun
from executions.services import execution_cancel, execution_start, node_run_execute, node_runs_sweep
from executions.tasks import run_node
from tests.executions.conftest import ROOT, database_url, wait_for
from tests.processes import children
from tests.slow_chain import SLOW_CHAIN_DOCUMENTS, calls_made, counted_argv, slow_argv
from workflows.models import Workflow

pytestmark = [pytest.mark.integration, pytest.mark.both_databases]

SLOW_ARGV = slow_argv(2.5)
ONE_STEP = [SLOW_CHAIN_DOCUMENTS[0], {"workflow_id": "one_step", "name": "One step", "topology": "seq",
                                      "nodes": [{"id": "only", "agent_ref": "Slow"}]}]


@pytest.fixture
def slow_chain(workers, settings):
    """A three-node chain of an agent whose command backend takes 2.5 s."""
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "command": {"kind": "command", "argv": SLOW_ARGV}}
    workers.env["COMMAND_BACKEND_ARGV"] = json.dumps(SLOW_ARGV)
    import_documents(SLOW_CHAIN_DOCUMENTS, actor="test")
    return Workflow.objects.get(workflow_id="slow_chain")


def wait_until(predicate, timeout=30, what="condition"):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_it_finishes_a_run_whose_worker_was_killed_mid_node(workers, slow_chain):
    (first,) = workers.start(1)
    execution = execution_start(workflow=slow_chain)
    wait_until(lambda: execution.node_runs.filter(node_id="step_1", status="running").exists(), what="step_1 to run")
    workers.kill(first)  # SIGKILL in the middle of step_1
    workers.start(1)
    deadline = time.monotonic() + 60
    while execution.status not in ("success", "failed"):
        assert time.monotonic() < deadline, f"run still {execution.status}\n{workers.logs()}"
        node_runs_sweep()  # what the periodic sweep does
        time.sleep(0.5)
        execution.refresh_from_db()
    assert execution.status == "success", execution.ended_reason
    for node_id in ("step_0", "step_1", "step_2"):
        assert execution.node_runs.filter(node_id=node_id, status="success").count() == 1
    assert execution.node_runs.get(node_id="step_1").dispatches >= 2, "step_1 was sent again after the kill"


def test_it_runs_a_node_once_when_its_task_is_delivered_twice(workers, slow_chain):
    workers.start(2)
    execution = execution_start(workflow=slow_chain)
    wait_until(lambda: execution.node_runs.filter(node_id="step_0").exists(), what="step_0")
    first = execution.node_runs.get(node_id="step_0")
    run_node.apply_async((first.pk,))  # a second delivery, as a visibility timeout would cause
    execution = wait_for(execution, workers=workers)
    assert execution.status == "success"
    assert execution.node_runs.filter(status="success").count() == 3
    assert node_run_execute(node_run_id=first.pk, worker="late") == "duplicate"


def test_it_stops_a_cancelled_run(workers, slow_chain):
    workers.start(1)
    execution = execution_start(workflow=slow_chain)
    wait_until(lambda: execution.node_runs.filter(status="running").exists(), what="a running node")
    execution_cancel(execution=execution)
    time.sleep(3.5)  # the running node finishes meanwhile; its result must be dropped
    execution.refresh_from_db()
    assert execution.status == "cancelled" and execution.ended_reason.startswith("cancelled by")
    assert not execution.node_runs.filter(status__in=["pending", "running", "success"]).exists()
    assert execution.node_runs.count() == 1, "nothing was started after the cancel"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.skipif(not shutil.which("redis-server"), reason="needs redis-server to start a private Redis")
def test_it_completes_or_fails_visibly_when_redis_restarts_mid_run(workers, slow_chain, tmp_path):
    port = free_port()
    redis_url = f"redis://127.0.0.1:{port}/0"

    def start_redis():
        process = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                    "--appendonly", "no", "--dir", str(tmp_path)], stdout=subprocess.DEVNULL)
        wait_until(lambda: socket.socket().connect_ex(("127.0.0.1", port)) == 0, what="redis to listen")
        return process

    redis = start_redis()
    try:
        env = {"REDIS_URL": redis_url, "SWEEP_EVERY_SECONDS": "1"}
        workers.start(1, beat=True, **env)
        from django.db import connection

        command = subprocess.Popen(
            [sys.executable, "manage.py", "run_workflow", "slow_chain", "--wait", "--timeout", "90"], cwd=ROOT,
            env={**workers.env, **env, "DATABASE_URL": database_url(connection)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        wait_until(lambda: NodeRun.objects.filter(node_id="step_1", status="running").exists(), timeout=60,
                   what="step_1 to run")
        redis.terminate()
        redis.wait(timeout=10)
        time.sleep(1)
        redis = start_redis()  # empty: every queued message is gone
        out, err = command.communicate(timeout=120)
        execution = Execution.objects.get()
        assert command.returncode in (0, 1), err
        assert execution.status in ("success", "failed"), f"{execution.status}\n{workers.logs()}"
        assert json.loads(out)["status"] == execution.status
        if execution.status == "success":
            assert execution.node_runs.filter(status="success").count() == 3
    finally:
        redis.terminate()
        redis.wait(timeout=10)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="pg_terminate_backend is PostgreSQL's")
@pytest.mark.parametrize("reply, stored", [("answers", "success"), ("fails", "failed")])
def test_it_stores_a_call_in_hand_on_a_new_connection_when_its_own_was_terminated(transactional_db, settings,
                                                                                  tmp_path, reply, stored):
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    calls = tmp_path / "calls"
    # step_0's backend ends this process's database connection, as an operator's
    # pg_terminate_backend would, then answers (or fails): the result is in hand, the
    # connection to store it with is gone. (The next node may run on at once, inline.)
    argv = [sys.executable, "-c", "import json, os, psycopg, sys\n"
            "node = os.environ['SWITCHYARD_NODE_ID']\n"
            f"open({str(calls)!r}, 'a').write(node + '\\n')\n"
            "if node == 'step_0':\n"
            f"    with psycopg.connect({database_url(connection)!r}, autocommit=True) as other:\n"
            f"        other.execute('SELECT pg_terminate_backend(%s)', [{pid}])\n"
            "sys.stdin.read()\n"
            + ("print(json.dumps({'done': True}))" if reply == "answers" else "sys.exit('no answer today')")]
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "command": {"kind": "command", "argv": argv}}
    import_documents(SLOW_CHAIN_DOCUMENTS, actor="test")
    execution = execution_start(workflow=Workflow.objects.get(workflow_id="slow_chain"))
    first = execution.node_runs.get(node_id="step_0")

    assert node_run_execute(node_run_id=first.pk, worker="test") == stored

    first.refresh_from_db()
    assert first.status == stored and first.worker.startswith("test/")
    assert open(calls).read().split().count("step_0") == 1, "the backend was called once"
    execution.refresh_from_db()
    if stored == "success":  # and the run went on from it
        assert execution.node_runs.filter(node_id="step_1").exists()
    else:  # slow_chain retries nothing and names no one to escalate to: its failure ends the run
        assert execution.status == "failed" and first.error_code == "COMMAND_FAILED"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid, "stored on a new connection"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="pg_terminate_backend is PostgreSQL's")
def test_it_leaves_a_node_whose_connection_broke_with_no_result_in_hand_to_the_sweep(transactional_db, settings):
    from django.db import OperationalError

    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "command": {"kind": "command", "argv": slow_argv(0)}}
    import_documents(ONE_STEP, actor="test")
    execution = execution_start(workflow=Workflow.objects.get(workflow_id="one_step"))
    only = execution.node_runs.get()

    def perform(run, graph, node):  # the connection is terminated as the node reads the database
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            (pid,) = cursor.fetchone()
        with psycopg.connect(database_url(connection), autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", [pid])
        NodeRun.objects.count()

    with mock.patch("executions.node_kinds.perform", perform), pytest.raises(OperationalError):
        node_run_execute(node_run_id=only.pk, worker="test")
    only.refresh_from_db()
    assert (only.status, only.error_code) == ("running", ""), "not the node's failure: the sweep sends it again"


def test_it_ends_the_run_when_the_connection_broke_after_its_last_result_was_stored(transactional_db, settings,
                                                                                   tmp_path):
    from django.db import OperationalError

    from executions.services.run import LockedRun

    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "command": {"kind": "command", "argv": slow_argv(0)}}
    import_documents(ONE_STEP, actor="test")
    execution = execution_start(workflow=Workflow.objects.get(workflow_id="one_step"))
    only = execution.node_runs.get()
    # The result is stored in a statement of its own (nothing follows the node); the
    # connection then breaks before the run is ended, and the store is tried again.
    advance, broken = LockedRun.advance, []

    def breaking(*args, **kwargs):
        if not broken:
            broken.append(True)
            raise OperationalError("server closed the connection unexpectedly")
        return advance(*args, **kwargs)

    with mock.patch.object(LockedRun, "advance", breaking):
        assert node_run_execute(node_run_id=only.pk, worker="test") == "success"

    assert broken and NodeRun.objects.get(pk=only.pk).status == "success"
    execution.refresh_from_db()
    assert execution.status == "success", "the try after the break found the result stored and ended the run"


def send_to(redis_server, workers, task: str, *args) -> None:
    """Send `task` to the workers' queue on the private Redis they listen to."""
    from celery import Celery

    private = Celery("send", broker=redis_server.url, set_as_current=False)
    private.send_task(task, args, queue=workers.queue, ignore_result=True)


def running(pid: int) -> bool:
    """Whether the process `pid` runs (a zombie has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


@pytest.mark.skipif(not shutil.which("redis-server"), reason="needs redis-server for a private Redis")
def test_it_ends_a_killed_workers_backend_call_and_tells_the_call_made_again_its_dispatch(workers, settings, tmp_path,
                                                                                          redis_server):
    calls = tmp_path / "calls"
    argv = counted_argv(30, str(calls), again=1)  # the first call would run on for 30 s
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "command": {"kind": "command", "argv": argv}}
    import_documents(ONE_STEP, actor="test")
    env = {"REDIS_URL": redis_server.url, "COMMAND_BACKEND_ARGV": json.dumps(argv), "SWEEP_EVERY_SECONDS": "1"}
    workers.start(2, **env)
    workers.start_beat(**env)
    with mock.patch("executions.tasks.run_node.apply_async"):  # sent below, through the private Redis
        execution = execution_start(workflow=Workflow.objects.get(workflow_id="one_step"))
    send_to(redis_server, workers, "executions.run_node", execution.node_runs.get().pk)
    wait_until(lambda: calls_made(calls) and execution.node_runs.get().backend_process,
               what="the backend call, recorded on the node run")

    only = execution.node_runs.get()
    assert only.backend_process["pid"] == int(calls_made(calls)[0][0])
    [claimer] = [process for process, _, hostname in workers.processes if only.worker.startswith(f"{hostname}/")]
    workers.kill(claimer)
    orphan = int(calls_made(calls)[0][0])
    assert running(orphan), "the killed worker's backend call runs on"
    wait_until(lambda: execution.node_runs.get().dispatches == 2, what="the sweep to send the node again")
    wait_until(lambda: not running(orphan), timeout=5, what="the call left running to be ended")

    execution = wait_for(execution, workers=workers)
    assert execution.status == "success" and execution.node_runs.get().status == "success"
    first, again = calls_made(calls)
    assert (first[1:3], again[1:3]) == (["1", "1"], ["1", "2"]), "the same attempt, sent a second time"
    assert first[3] == again[3] != "-", "the same call, under the same idempotency key"


@pytest.mark.skipif(not shutil.which("redis-server"), reason="needs redis-server for a private Redis")
def test_it_does_nothing_when_a_killed_workers_unacknowledged_message_comes_back(workers, settings, tmp_path,
                                                                                 redis_server):
    import redis

    calls = tmp_path / "calls"
    argv = counted_argv(3, str(calls))
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "command": {"kind": "command", "argv": argv}}
    import_documents(ONE_STEP, actor="test")
    env = {"REDIS_URL": redis_server.url, "COMMAND_BACKEND_ARGV": json.dumps(argv),
           "BROKER_VISIBILITY_TIMEOUT_SECONDS": "2"}
    (first,) = workers.start(1, pool="prefork", **env)
    with mock.patch("executions.tasks.run_node.apply_async"):  # sent below, through the private Redis
        execution = execution_start(workflow=Workflow.objects.get(workflow_id="one_step"))
    send_to(redis_server, workers, "executions.run_node", execution.node_runs.get().pk)
    wait_until(lambda: calls_made(calls), what="the backend call")

    # The worker's main process, which acknowledges a task once its pool process has run it,
    # stops; the pool process stores the node's result; then the whole worker is killed.
    pool = children(first.pid)
    os.kill(first.pid, signal.SIGSTOP)
    wait_until(lambda: execution.node_runs.get().status == "success", what="the node to be stored")
    broker = redis.Redis.from_url(redis_server.url)
    assert broker.hlen("unacked") == 1, "its message taken, never acknowledged"
    for pid in pool:
        os.kill(pid, signal.SIGKILL)
    workers.kill(first)
    time.sleep(2)  # past the visibility timeout

    (second,) = workers.start(1, **env)  # it puts the message back in the queue as it starts
    log = workers.processes[-1][1]
    wait_until(lambda: "executions.run_node" in log.read_text() and ": 'duplicate'" in log.read_text(), timeout=30,
               what="the message to come back, and find its node done")
    wait_until(lambda: broker.hlen("unacked") == 0, timeout=10, what="the message to be acknowledged at last")
    assert len(calls_made(calls)) == 1, "no second backend call"
    assert list(execution.node_runs.values_list("status", flat=True)) == ["success"], "no second result"
    execution.refresh_from_db()
    assert execution.status == "success"
