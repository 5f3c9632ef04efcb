"""The retention sweep sent by the beat, performed on a real worker against the test database."""
from __future__ import annotations

import time

import pytest

from core.models import AuditEntry
from tests.executions.conftest import workers  # noqa: F401 - the real workers' fixture
from tests.retention.conftest import make_run, stored

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_beat_sends_the_sweep_and_a_worker_deletes_old_runs_and_keeps_the_rest(demo, workers):  # noqa: F811
    old, failed, young = make_run(days=40), make_run("failed", days=40), make_run(days=5)
    running = make_run("running", days=40)
    workers.start(1, beat=True, RETENTION_DAYS="30", RETENTION_FAILED_DAYS="60", RETENTION_EVERY_SECONDS="0.5",
                  RETENTION_PAUSE="0")
    deadline = time.monotonic() + 30
    while stored(old)[0] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert stored(old, failed, young, running) == [False, True, True, True], workers.logs()
    entries = AuditEntry.objects.filter(action="retention.delete")
    assert entries.exists() and {entry.via for entry in entries} == {"system"}
    assert any(old.execution_id in entry.before.get("executions", []) for entry in entries)
