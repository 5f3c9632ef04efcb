"""The run core's signals: `run_ended` once a run's end commits, to every receiver, one that
fails logged and never raised into what ended the run."""
from __future__ import annotations

import logging

import pytest

from core.documents import import_documents
from demo.documents import AGENTS, PARALLEL_ANALYSIS, RELEASE_REVIEW
from executions.models import Execution
from executions.services import execution_cancel, execution_start
from executions.signals import run_ended
from tests.replay import replayed
from workflows.models import Workflow

pytestmark = pytest.mark.django_db


def test_it_tells_every_receiver_of_a_runs_end_after_commit_and_logs_one_that_fails(
        tmp_path, settings, caplog, django_capture_on_commit_callbacks):
    settings.WORKSPACE_ROOT = tmp_path
    replayed("demo agents and two workflows", lambda: import_documents([*AGENTS, PARALLEL_ANALYSIS, RELEASE_REVIEW]))
    execution = execution_start(workflow=Workflow.objects.get(workflow_id="parallel_analysis"),
                                input={"repository": "a"})
    heard = []

    def failing(sender, **kwargs):
        raise RuntimeError("a receiver's own bug")

    def listening(sender, *, execution_pk, status, **kwargs):
        heard.append((sender, execution_pk, status))

    run_ended.connect(failing, dispatch_uid="test-failing")
    run_ended.connect(listening, dispatch_uid="test-listening")
    try:
        with django_capture_on_commit_callbacks() as after_commit:
            execution_cancel(execution=execution)
        assert heard == [], "nothing is told before the commit"
        with caplog.at_level(logging.ERROR, logger="executions.signals"):
            for callback in after_commit:
                callback()
    finally:
        run_ended.disconnect(dispatch_uid="test-failing")
        run_ended.disconnect(dispatch_uid="test-listening")

    assert heard == [(Execution, execution.pk, "cancelled")]
    assert "a receiver's own bug" in caplog.text
