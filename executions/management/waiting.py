"""What `run_workflow --wait` and `rerun_execution --wait` share: wait for a run to end (or
to wait for a person), print its record, and exit 0 on success, 1 otherwise."""
from __future__ import annotations

import json
import time

from django.core.management.base import BaseCommand, CommandError

from executions.documents import execution_record
from executions.models import Execution

# Ended, or waiting for people (escalated, or at gates only): waiting longer would not end it.
FINAL = {Execution.Status.SUCCESS, Execution.Status.FAILED, Execution.Status.CANCELLED, Execution.Status.ESCALATED,
         Execution.Status.WAITING}


def wait_and_print(command: BaseCommand, execution: Execution, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while execution.status not in FINAL and time.monotonic() < deadline:
        time.sleep(0.2)
        execution.refresh_from_db()
    command.stdout.write(json.dumps(execution_record(execution), ensure_ascii=False, indent=2, default=str))
    if execution.status not in FINAL:
        raise CommandError(f"run {execution.execution_id} is still {execution.status} after {timeout:g} s",
                           returncode=1)
    if execution.status != Execution.Status.SUCCESS:
        waiting = ", ".join(execution.node_runs.filter(status="waiting").values_list("node_id", flat=True))
        why = execution.ended_reason or (execution.escalation or {}).get("error", "") or f"at the gates {waiting}"
        raise CommandError(f"run {execution.execution_id} ended {execution.status}: {why}"
                           if execution.status != Execution.Status.WAITING
                           else f"run {execution.execution_id} is waiting for a decision {why} (manage.py gates)",
                           returncode=1)
