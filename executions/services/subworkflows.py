"""Sub-workflow nodes (engine/subworkflows.py): the child run a node's run hands its work
to, and the node settling when that child ends.

A worker performs a sub-workflow node as any other (executions/node_kinds/subworkflow.py):
what it produces is the child to start. `child_start` starts it and hands the node run
over in one transaction, under the parent run's lock and then the child's (always in that
order): the node run stays running, with no worker and no heartbeat, so the sweep never
sends it again, and it is never handed over twice. A child that ends (`LockedRun.end`)
sends `executions.child_ended`; `child_ended` settles the node as the child ended (its
state and last outputs as the node's output, its failure as the node's failure), adds the
child's tokens and cost to the node and its run, and advances the parent. A lost message
is sent again by the sweep (`children_ended_resend`).
"""
from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import models, transaction
from django.utils import timezone

from core.errors import SwitchyardError
from core.status_writes import lock_row, transition
from core.tasks import send_after_commit
from engine import subworkflows
from executions.models import Execution, NodeRun
from executions.node_errors import NodeFailure
from executions.node_kinds.base import ChildRun
from executions.run_graphs import execution_graph
from executions.services.run import ENDED, LockedRun
from executions.services.start import execution_start
from workflows.models import Workflow

logger = logging.getLogger(__name__)


def child_start(run: NodeRun, claim: str, child: ChildRun, record: dict) -> Execution | None:
    """Start `child` for the sub-workflow node's run `run`, held by `claim`, and hand the
    run over to it with `record` (the fields the node's inputs gave it). None: the claim no
    longer holds or the parent no longer runs (the run is cancelled). Raises NodeFailure
    when the child cannot start: too deep, its workflow or version gone, or invalid."""
    with transaction.atomic():
        locked = LockedRun.lock(run.execution)
        parent = locked.execution
        held = lock_row(NodeRun, run.pk, missing_ok=True, status=NodeRun.Status.RUNNING, worker=claim)
        if held is None:
            return None
        if parent.status != Execution.Status.RUNNING:
            transition(NodeRun, run.pk, NodeRun.Status.RUNNING, NodeRun.Status.CANCELLED, where={"worker": claim},
                       completed_at=timezone.now())
            return None
        depth = parent.depth + 1
        if depth > settings.SUBWORKFLOW_MAX_DEPTH:
            raise NodeFailure(f"the child run would be {depth} runs deep, past SUBWORKFLOW_MAX_DEPTH "
                              f"({settings.SUBWORKFLOW_MAX_DEPTH})", code=subworkflows.TOO_DEEP, retryable=False)
        workflow = Workflow.objects.filter(workflow_id=child.workflow_ref).first()
        if workflow is None:
            raise NodeFailure(f"workflow '{child.workflow_ref}' does not exist", code=subworkflows.GONE,
                              retryable=False)
        try:
            started = execution_start(workflow=workflow, input=child.input, actor=parent.created_by,
                                      version=child.version, parent=held, depth=depth)
        except SwitchyardError as refused:  # its input refused, its version gone, or itself refused as stored now
            refused_input = getattr(refused, "where", "").startswith("input")
            raise NodeFailure(f"workflow '{child.workflow_ref}' cannot run: {refused.message}",
                              code=subworkflows.INPUT_REFUSED if refused_input else subworkflows.GONE,
                              retryable=False, details=refused.details) from None
        NodeRun.objects.filter(pk=run.pk).update(worker="", heartbeat_at=None, **record)
    return started


def child_ended(*, child_pk: int) -> str:
    """Settle the node run that started the child run `child_pk`, if the child has ended and
    the node run is still running; advance the parent. Returns what it did. Safe to call
    twice: the second call finds the node run settled."""
    node_run_pk, parent_pk = Execution.objects.filter(pk=child_pk).values_list(
        "parent_node_run", "parent_node_run__execution").get()
    with transaction.atomic():
        locked = LockedRun.lock(Execution.objects.select_related("workflow").get(pk=parent_pk))
        run = lock_row(NodeRun, node_run_pk)
        child = Execution.objects.get(pk=child_pk)  # read under the parent's lock: it has ended, or not yet
        if run.status != NodeRun.Status.RUNNING or child.status not in ENDED:
            return "nothing to settle"
        now = timezone.now()
        rolled = child.node_runs.aggregate(tokens_in=models.Sum("tokens_in"), tokens_out=models.Sum("tokens_out"))
        fields = {"completed_at": now, "duration_ms": int((now - (run.started_at or now)).total_seconds() * 1000),
                  "cost": child.cost, "cost_complete": child.cost_complete, **rolled}
        parent = locked.execution
        Execution.objects.filter(pk=parent.pk).update(
            cost=models.F("cost") + child.cost, **({} if child.cost_complete else {"cost_complete": False}))
        if parent.status in ENDED:  # the parent ended first and cancelled its child
            transition(NodeRun, run.pk, NodeRun.Status.RUNNING, NodeRun.Status.CANCELLED, **fields)
            return "cancelled"
        if child.status == Execution.Status.SUCCESS:
            run.output = child_output(child)
            transition(NodeRun, run.pk, NodeRun.Status.RUNNING, NodeRun.Status.SUCCESS, output=run.output, **fields)
            run.status = NodeRun.Status.SUCCESS
            locked.apply_output(run)
            locked.advance(completed=run)
            return "success"
        run.error = f"child run {child.execution_id} of workflow '{child.workflow.workflow_id}' {child.status}: " \
                    f"{child.ended_reason or 'no reason recorded'}"
        run.error_code = subworkflows.FAILED
        transition(NodeRun, run.pk, NodeRun.Status.RUNNING, NodeRun.Status.FAILED, error=run.error,
                   error_code=run.error_code, error_details={"child": child.execution_id}, **fields)
        run.status = NodeRun.Status.FAILED
        # Cancelled by a person, the child is not tried again; failed, as any node.
        locked.advance(completed=run, retryable=child.status == Execution.Status.FAILED)
        return "failed"


def child_output(child: Execution) -> dict:
    """A sub-workflow node's output: the child's final state and, by node id, the outputs of
    its last nodes: those nothing comes after, and the node that ran last (a state
    machine's end)."""
    plan = execution_graph(child).plan
    succeeded = child.node_runs.filter(status=NodeRun.Status.SUCCESS).order_by("sequence", "id")
    last = {node_id for node_id in plan.nodes if not plan.downstream(node_id)}
    last |= set(succeeded.reverse().values_list("node_id", flat=True)[:1])
    outputs = dict(succeeded.filter(node_id__in=last).values_list("node_id", "output"))  # the latest of each wins
    return {"state": child.state, "nodes": outputs}


def children_ended_resend(*, stale) -> list[int]:
    """Send again the message of each child that ended before `stale` while its parent's
    node run still waits for it (the message was lost); once per NODE_STALE_SECONDS each."""
    ended = Execution.objects.filter(parent_node_run__status=NodeRun.Status.RUNNING, status__in=ENDED,
                                     completed_at__lt=stale)
    sent = []
    for pk in ended.values_list("pk", flat=True)[:100]:
        if cache.add(f"child-ended-sent:{settings.CELERY_TASK_DEFAULT_QUEUE}:{pk}", 1,
                     timeout=timedelta(seconds=settings.NODE_STALE_SECONDS).total_seconds()):
            send_after_commit("executions.child_ended", pk)
            sent.append(pk)
    return sent
