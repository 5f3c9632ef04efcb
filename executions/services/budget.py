"""A run's cost limit, kept for every call made for it: its node runs' and its judge's.

What a run has spent is its own `cost` (its stored node runs' calls and its judge's) and
the `cost` of its running node runs (their calls made so far); what it has claimed is the
bound of every call in flight (agents/backends/metering.py), on the row of the running node
run that makes it (`NodeRun.cost_reserved`) or, for the judge's, on the run's row. A call is
made only if spent + claimed + its bound stays within `max_cost`; checking and claiming are
one transaction under the run's row lock, so parallel nodes never claim past the limit
together. Once the call is made its cost replaces its bound.

A claim lives on the row of the claim that made it, so it ends with it: when a node run
stops running, whoever moves it (its worker, the sweep taking it from a dead worker, a
cancel), its claims are no longer counted, and nothing a dead worker claimed stays claimed.
"""
from __future__ import annotations

from django.db import models, transaction
from django.db.models.functions import Coalesce

from agents.backends.base import BackendError
from agents.backends.metering import Budget
from core.status_writes import lock_values
from executions.models import Execution, NodeRun


def node_run_budget(execution: Execution, limits, *, node_run_id: int, claim: str) -> Budget | None:
    """The cost limits of a node run performed under `claim` (None: the run's version sets none)."""
    if limits.max_cost is None and limits.max_node_cost is None:
        return None
    if limits.max_cost is None:
        return Budget(node=limits.max_node_cost)
    mine = NodeRun.objects.filter(pk=node_run_id, worker=claim, status=NodeRun.Status.RUNNING)

    def claimed_on_row(change: dict) -> bool:
        return mine.update(**{name: models.F(name) + amount for name, amount in change.items()}) == 1

    return _budget(execution.pk, limits.max_cost, claimed_on_row, node=limits.max_node_cost)


def judge_budget(execution: Execution, limits) -> Budget | None:
    """The run's cost limit, for its judge's calls (None: the run's version sets none). The
    judge's cost is spent on the run's row as each call is made."""
    if limits.max_cost is None:
        return None
    row = Execution.objects.filter(pk=execution.pk)

    def claimed_on_row(change: dict) -> bool:
        return row.update(**{name: models.F(name) + amount for name, amount in change.items()}) == 1

    return _budget(execution.pk, limits.max_cost, claimed_on_row)


def claims_ended(node_run_id: int, claim: str) -> tuple[dict, dict]:
    """For a node run taken from a worker that went silent, under its run's row lock: the
    fields that end what it spent and claimed under `claim` (its calls' record died with
    the worker), and the run's fields to set: had it spent or claimed anything, the run's
    cost is no longer known whole (a call in flight may have been billed)."""
    held = NodeRun.objects.filter(pk=node_run_id, worker=claim, status=NodeRun.Status.RUNNING).filter(
        ~models.Q(cost=0) | ~models.Q(cost_reserved=0)).exists()
    return {"cost": 0, "cost_reserved": 0}, {"cost_complete": False} if held else {}


def _budget(execution_pk: int, max_cost: int, claimed_on_row, node: int | None = None) -> Budget:
    def reserve(bound: int) -> bool:
        with transaction.atomic():
            spent, claimed = _spent_and_claimed(execution_pk, lock=True)
            if spent + claimed + bound > max_cost:
                return False
            if not claimed_on_row({"cost_reserved": bound}):
                raise BackendError("this worker no longer holds the node run (the sweep sent it again, or its run "
                                   "was cancelled): its call is not made", code="WORKER_LOST", retryable=False)
            return True

    def settle(cost: int, bound: int) -> tuple[int, int]:
        with transaction.atomic():
            _spent_and_claimed(execution_pk, lock=True)
            # A claim that no longer holds is counted no more; the worker's cost is charged
            # to the run when it stores (or fails to store) its result.
            claimed_on_row({"cost": cost, "cost_reserved": -bound})
            return _spent_and_claimed(execution_pk)

    return Budget(node=node, run=max_cost, reserve=reserve, settle=settle,
                  spent=lambda: _spent_and_claimed(execution_pk))


def _spent_and_claimed(execution_pk: int, *, lock: bool = False) -> tuple[int, int]:
    """What the run has spent and what its calls in flight claim, in units; `lock`: under the
    run's row lock, held to the end of the transaction (`lock_values(written=False)`: the row's
    version is left as it is, which a worker storing a result relies on, see
    core.status_writes.transition_under). The running node runs are summed in a statement of their
    own, so that on PostgreSQL it sees every claim committed before the lock was had."""
    if lock:
        spent, claimed = lock_values(Execution, execution_pk, ("cost", "cost_reserved"), written=False)
    else:
        spent, claimed = Execution.objects.filter(pk=execution_pk).values_list("cost", "cost_reserved").get()
    running = NodeRun.objects.filter(execution_id=execution_pk, status=NodeRun.Status.RUNNING).aggregate(
        spent=Coalesce(models.Sum("cost"), 0), claimed=Coalesce(models.Sum("cost_reserved"), 0))
    return spent + running["spent"], claimed + running["claimed"]
