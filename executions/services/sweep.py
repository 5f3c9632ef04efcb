"""Crash safety: node runs whose worker went silent or whose message was lost are sent again,
lost evaluations sent again, runs past their wall time ended, the copies of large re-runs whose worker
died sent again, the end of a child run sent again to its parent's node; and gates past
their time-out decided."""
from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import models, transaction
from django.utils import timezone

from agents.backends.dispatch import end_process
from core.locks import redis_lock
from core.status_writes import transition
from executions.models import Evaluation, Execution, NodeRun
from executions.node_errors import NodeFailure
from executions.services.budget import claims_ended
from executions.services.gates import gates_time_out
from executions.services.node_run import node_failed, time_limit_failure
from executions.services.rerun import rerun_copies_resend
from executions.services.run import LockedRun, dispatch_after_commit, evaluate_after_commit, wall_time_end
from executions.services.subworkflows import children_ended_resend

logger = logging.getLogger(__name__)


def node_runs_sweep_exclusive(*, now=None) -> dict:
    """The sweep, unless another one is running (two beats, on two machines): that one holds
    a lock in Redis, and this one returns at once, saying it skipped."""
    name = f"sweep:{settings.CELERY_TASK_DEFAULT_QUEUE}"  # the queue names the deployment
    with redis_lock(name, timeout=settings.SWEEP_LOCK_SECONDS) as acquired:
        if not acquired:
            logger.info("sweep skipped: another sweep holds the lock")
            return {"skipped": "another sweep is running"}
        return node_runs_sweep(now=now)


# An ended run whose evaluation message was lost is sent again for this long after it ended
# (an evaluation that keeps failing is not tried for ever).
EVALUATION_RESEND_WINDOW = timedelta(hours=1)


def node_runs_sweep(*, now=None) -> dict:
    """Re-dispatch node runs whose worker went silent (no heartbeat for NODE_STALE_SECONDS)
    and pending runs whose message may have been lost; send again the evaluation of a run
    that ended that long ago without one; end runs past their wall time; send again the copy
    of a re-run's reused node runs that has not moved for that long; decide the gates past
    their time-out as their `on_timeout` says."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.NODE_STALE_SECONDS)
    report: dict[str, list[Any]] = {"requeued": [], "redispatched": [], "failed": [], "ended": [], "evaluations": [],
              "gates_timed_out": gates_time_out(now=now), "copies_resent": rerun_copies_resend(stale=stale),
              "children_ended": children_ended_resend(stale=stale)}
    for run in NodeRun.objects.filter(status=NodeRun.Status.RUNNING, heartbeat_at__lt=stale,
                                      execution__status=Execution.Status.RUNNING).select_related("execution"):
        hard = settings.NODE_HARD_TIME_LIMIT_SECONDS
        if run.started_at and run.started_at <= now - timedelta(seconds=hard):
            # Silent, and started longer ago than the hard time limit: the worker killed its
            # process for that (the soft limit did not stop it). Sent again, it would only be
            # killed again.
            node_failed(run, run.worker, time_limit_failure(
                f"the node ran past the hard time limit of {hard:g} s and its worker process was killed"))
            report["failed"].append(run.pk)
        elif run.dispatches >= settings.NODE_MAX_DISPATCHES:
            # It took its worker down every time it was sent: fail it rather than loop.
            failure = NodeFailure(f"the worker running it went silent {run.dispatches} times",
                                         code="WORKER_LOST", retryable=False)
            node_failed(run, run.worker, failure)
            report["failed"].append(run.pk)
        else:
            with transaction.atomic():
                # What the silent worker spent and claimed from the run's max_cost ends with its claim.
                execution = LockedRun.lock(run.execution).execution
                ended, flags = claims_ended(run.pk, run.worker)
                if transition(NodeRun, run.pk, NodeRun.Status.RUNNING, NodeRun.Status.PENDING,
                              where={"worker": run.worker}, worker="", heartbeat_at=now,
                              dispatches=models.F("dispatches") + 1, **ended) == 1:
                    if flags:
                        Execution.objects.filter(pk=execution.pk).update(**flags)
                    report["requeued"].append(run.pk)
                    dispatch_after_commit(run.pk)
        # The silent worker's claim no longer holds, but a backend process it started (the
        # command backend's) may still be calling a model, for an answer that can no longer
        # count: ended when it runs on this machine (agents/backends/dispatch.py).
        end_process(run.backend_process)
    for run in NodeRun.objects.filter(status=NodeRun.Status.PENDING, heartbeat_at__lt=stale,
                                      available_at__lte=now, execution__status=Execution.Status.RUNNING):
        with transaction.atomic():
            if NodeRun.objects.filter(pk=run.pk, status=NodeRun.Status.PENDING, heartbeat_at__lt=stale).update(
                    heartbeat_at=now, dispatches=models.F("dispatches") + 1) == 1:
                report["redispatched"].append(run.pk)
                dispatch_after_commit(run.pk)
    computed = Evaluation.objects.filter(execution=models.OuterRef("pk"), method=Evaluation.Method.COMPUTED,
                                         target_type=Evaluation.TargetType.EXECUTION)
    unevaluated = Execution.objects.filter(
        # An experiment's runs are its experiment's to score (and evaluate), in its own sweep.
        status__in=(Execution.Status.SUCCESS, Execution.Status.FAILED), trial=False, experiment="", completed_at__lt=stale,
        completed_at__gte=now - EVALUATION_RESEND_WINDOW).exclude(models.Exists(computed))
    for execution_pk in unevaluated.values_list("pk", flat=True)[:100]:
        # Once per NODE_STALE_SECONDS, as for pending runs; a duplicate is harmless (a run
        # evaluated twice has one evaluation).
        if cache.add(f"evaluation-sent:{settings.CELERY_TASK_DEFAULT_QUEUE}:{execution_pk}", 1,
                     timeout=settings.NODE_STALE_SECONDS):
            report["evaluations"].append(execution_pk)
            evaluate_after_commit(execution_pk)
    for execution in Execution.objects.filter(status=Execution.Status.RUNNING).select_related("workflow"):
        wall_end = wall_time_end(execution, now)
        if wall_end:
            with transaction.atomic():
                locked = LockedRun.lock(execution)
                if locked.execution.status == Execution.Status.RUNNING:
                    locked.end(wall_end.end_status, wall_end.reason)
                    report["ended"].append(locked.execution.execution_id)
    return report
