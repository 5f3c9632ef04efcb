"""Runs steered together: cancel, retry or re-run many at once (the runs list's ticked rows,
or every run its filter matches; the API's `POST /executions/bulk`).

Each run is steered as it would be alone, by the same service, in a transaction of its own,
so one run's refusal (a finished run cannot be cancelled, only an escalated one retried, a
running one not re-run) refuses that run only, naming why, and the others go on:

- `cancel`: `execution_cancel` (a run that has not ended);
- `retry`: `execution_retry` (an escalated run: its escalated node again from its first
  attempt);
- `rerun`: `execution_rerun` from a node (`from_node`, by default each run's first: a
  state machine's first step, else its plan's first node), a new run of the workflow's
  latest version that reuses what ran before that node.

Every run steered is recorded in the audit trail (`execution.cancel`, `.retry`, `.rerun`),
and the operation itself once more (`execution.bulk`): what was asked, done and refused.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from core import audit
from core.errors import DocumentError, NotFound, SwitchyardError
from executions.models import Execution
from executions.run_graphs import run_graph
from executions.services.rerun import execution_rerun
from executions.services.start import execution_cancel, execution_retry

# The most runs one operation steers: each is a transaction of its own (a re-run copies a
# run's node runs), and the answer lists each.
BULK_MAX = 1000
ACTIONS = ("cancel", "retry", "rerun")


@dataclass(frozen=True)
class Steered:
    """What became of one run: done (with the run a re-run started), or refused and why."""

    execution_id: str
    done: bool
    code: str = ""
    message: str = ""
    started: str | None = None  # a re-run: the new run's execution_id

    def as_dict(self) -> dict[str, Any]:
        return {"execution_id": self.execution_id, "outcome": "done" if self.done else "refused",
                "code": self.code, "message": self.message, "started": self.started}


def bulk_checked(action: str, execution_ids: list[str]) -> list[str]:
    """The ids to steer, each once, in the order given; refused (naming the limit) when
    there are more than BULK_MAX, or none, or the action is not one of ACTIONS."""
    if action not in ACTIONS:
        raise DocumentError(f"'{action}' is not a bulk action: one of {', '.join(ACTIONS)}", where="action")
    ids = list(dict.fromkeys(execution_ids))
    if not ids:
        raise DocumentError("no run to steer: name some, or a filter that matches some", where="execution_ids")
    if len(ids) > BULK_MAX:
        raise DocumentError(f"{len(ids)} runs: a bulk operation steers at most {BULK_MAX} at once; narrow the "
                            "filter or pick fewer", where="execution_ids",
                            details={"limit": BULK_MAX, "given": len(ids)})
    return ids


def executions_bulk(*, action: str, execution_ids: list[str], actor=None,
                    from_node: str | None = None) -> dict[str, Any]:
    """Steer each run of `execution_ids` with `action` (see the module); the answer counts
    what was done and refused and gives each run's outcome, in the order asked."""
    ids = bulk_checked(action, execution_ids)
    found = {execution.execution_id: execution
             for execution in Execution.objects.select_related("workflow").filter(execution_id__in=ids)}
    results = [_steer(action, found.get(execution_id), execution_id, actor, from_node) for execution_id in ids]
    done = [result.execution_id for result in results if result.done]
    refused = [{"execution_id": result.execution_id, "code": result.code} for result in results if not result.done]
    with transaction.atomic():
        audit.record("execution.bulk", actor=actor, object_type="execution", object_id=f"bulk {action}",
                     after={"action": action, "asked": len(ids), "done": done, "refused": refused})
    return {"action": action, "asked": len(ids), "done": len(done), "refused": len(refused),
            "results": [result.as_dict() for result in results]}


def _steer(action: str, execution: Execution | None, execution_id: str, actor, from_node: str | None) -> Steered:
    """One run steered by `action`, in a transaction of its own; a refusal is its answer."""
    if execution is None:
        return Steered(execution_id, False, NotFound.code, f"execution '{execution_id}' does not exist")
    try:
        if action == "cancel":
            execution_cancel(execution=execution, actor=actor)  # which records itself
            return Steered(execution_id, True)
        with transaction.atomic():
            if action == "retry":
                before = execution.status
                execution = execution_retry(execution=execution, actor=actor)
                audit.record("execution.retry", actor=actor, object_type="execution", object_id=execution_id,
                             before={"status": before}, after={"status": execution.status})
                return Steered(execution_id, True)
            node, step = (from_node, None) if from_node else _first_step(execution)
            started = execution_rerun(source=execution, from_node=node, step=step, actor=actor)
            audit.record("execution.rerun", actor=actor, object_type="execution", object_id=execution_id,
                         after={"rerun": started.execution_id, "from_node": node, "step": step})
            return Steered(execution_id, True, started=started.execution_id)
    except SwitchyardError as refused:
        return Steered(execution_id, False, refused.code, str(refused))


def _first_step(execution: Execution) -> tuple[str, int | None]:
    """Where a re-run of the whole run starts: a state machine's first step (the node its
    path began at), else the first node of the plan of the workflow's latest version."""
    _, graph = run_graph(execution.workflow)
    plan = graph.plan
    if plan.topology == "state_machine":
        first = execution.node_runs.order_by("sequence").values_list("node_id", flat=True).first()
        return (first or plan.nodes[0]), 1
    return plan.nodes[0], None
