"""Reads of runs: a reader holds no write lock, however slowly it reads.

The test's rows are committed (a transactional test), so that a worker on a connection of
its own sees them; on SQLite the test database is a file, as it is deployed."""
import json
import threading
import time

import pytest
from django.db import connection

from core.documents import import_documents
from demo.documents import AGENTS, PARALLEL_ANALYSIS
from executions.models import NodeRun
from executions.services import execution_start, node_run_execute
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)

WRITE_WAITS_AT_MOST = 3  # seconds a worker's write may wait for a lock here (30 as deployed)


def store_a_result(node_run_id: int) -> dict:
    """A worker on a connection of its own performs a node and stores its result."""
    done: dict = {}

    def worker():
        from django.db import connection as own

        try:
            if own.vendor == "sqlite":
                own.ensure_connection()
                own.connection.execute(f"PRAGMA busy_timeout = {WRITE_WAITS_AT_MOST * 1000}")
            started = time.monotonic()
            done["outcome"] = node_run_execute(node_run_id=node_run_id, worker="w-test")
            done["seconds"] = time.monotonic() - started
        except Exception as error:  # noqa: BLE001 - the test reports what the worker met
            done["error"] = error
        finally:
            own.close()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(WRITE_WAITS_AT_MOST * 4)
    assert not thread.is_alive(), "the worker is still waiting"
    return done


def test_it_lets_a_worker_store_a_result_while_a_reader_stalls_in_a_runs_whole_record(api, tmp_path, settings):
    assert connection.vendor != "sqlite" or not connection.is_in_memory_db()
    settings.WORKSPACE_ROOT = tmp_path
    import_documents([*AGENTS, PARALLEL_ANALYSIS])
    execution = execution_start(workflow=Workflow.objects.get(workflow_id="parallel_analysis"),
                                input={"repository": "acme"})
    task_a = execution.node_runs.get(node_id="task_a")

    response = api.viewer.client.get(f"/api/executions/{execution.execution_id}", {"node_runs": "all"})
    try:
        chunks = iter(response.streaming_content)
        read = [next(chunks), next(chunks)]  # the head and a first node run: the reader is mid-stream, and stalls

        done = store_a_result(task_a.pk)

        assert "error" not in done, f"the worker could not store its result: {done.get('error')!r}"
        assert done["outcome"] == "success" and done["seconds"] < WRITE_WAITS_AT_MOST
        record = json.loads(b"".join([*read, *chunks]))
    finally:
        response.close()
    assert NodeRun.objects.get(pk=task_a.pk).status == "success"
    # The reader went on in the snapshot it began with: both passes agree, before the result.
    assert [r["status"] for r in record["node_runs"] if r["node_id"] == "task_a"] == ["pending"]
    assert [r["status"] for r in record["results"] if r["node_id"] == "task_a"] == ["pending"]
