"""What runs next, once a node run is stored or a run is started or resumed: the next nodes
(created and sent to a worker), the node's `on_failure`, the end of the run.

A run advances by these services only. Each takes the execution row's lock
(`select_for_update`) before deciding what comes next, so two workers finishing parallel
nodes at once never both schedule the same node."""
from __future__ import annotations

import time
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import connection, models, transaction
from django.utils import timezone

from agents.models import AgentVersion
from core.states import change_status, transition_all
from core.tasks import send_after_commit
from engine.conditions import evaluate_condition
from engine.context.errors import RefError
from engine.context.resolution import select_path
from engine.scheduling import Plan
from executions.models import Execution, NodeRun
from executions.services.graph import workflow_graph, workflow_node, workflow_plan
from executions.services.inline import _inline


def _handle_failure(execution: Execution, run: NodeRun, retryable: bool) -> None:
    """The node's `on_failure`: escalate (the default) means retries with backoff up to
    `retry_count`, then one attempt by `fallback_agent`, then waiting in `escalated` for a
    person (failing the run when there is no `escalate_to`); abort fails the run; skip
    passes over the node; a node id goes there (state machines)."""
    workflow = execution.workflow
    plan = workflow_plan(workflow)
    action = plan.failure_action(run.node_id)
    node = workflow_node(workflow, run.node_id)
    if action == "escalate":
        if retryable and run.kind in ("first", "retry") and run.attempt <= workflow.retry_count:
            delay = settings.NODE_RETRY_BACKOFF_SECONDS * 2 ** (run.attempt - 1)
            _new_run(execution, node.node_id, agent_id=node.agent_id, kind="retry", attempt=run.attempt + 1, delay=delay)
        elif run.kind != "fallback" and workflow.fallback_agent_id and workflow.fallback_agent_id != run.agent_id:
            _new_run(execution, node.node_id, agent_id=workflow.fallback_agent_id, kind="fallback", attempt=run.attempt + 1)
        elif workflow.escalate_to_id:
            change_status(execution, Execution.STATES, Execution.Status.ESCALATED, escalation={
                "node_id": run.node_id, "node_run": run.pk, "error_code": run.error_code, "error": run.error,
                "escalate_to": workflow.escalate_to.agent_id, "at": timezone.now().isoformat(),
            })
        else:
            _end(execution, Execution.Status.FAILED, f"node '{run.node_id}' failed: {run.error_code}")
    elif action == "abort":
        _end(execution, Execution.Status.FAILED, f"node '{run.node_id}' failed ({run.error_code}); on_failure is abort")
    elif action == "skip":
        skipped = _new_run(execution, node.node_id, agent_id=node.agent_id, kind="manual", attempt=run.attempt,
                           status=NodeRun.Status.SKIPPED)
        _advance(execution, completed=skipped)
    else:
        _start_node(execution, plan, action)


def _advance(execution: Execution, *, completed: NodeRun | None) -> None:
    """Decide what runs next (the execution row is locked by the caller)."""
    if execution.status != Execution.Status.RUNNING:
        return
    if _past_wall_time(execution, timezone.now()):
        _end(execution, Execution.Status.FAILED, _wall_reason(execution))
        return
    plan = workflow_plan(execution.workflow)
    if plan.topology == "state_machine":
        if completed is None:
            _start_node(execution, plan, plan.start)
            return
        decision = plan.next_state(completed.node_id, evaluate=evaluate_condition, output=completed.output,
                                   state=execution.state, input=execution.input)
        NodeRun.objects.filter(pk=completed.pk).update(decision=decision.as_dict())
        if decision.action == "end":
            _end(execution, Execution.Status.SUCCESS, "")
        else:
            _start_node(execution, plan, decision.node_id)
        return
    # Only the completed node's successors can have become ready: read the statuses of
    # those and of their dependencies, not of the whole run.
    candidates = plan.nodes if completed is None else plan.successors(completed.node_id)
    relevant = set(candidates) | {dep for node_id in candidates for dep in plan.dependencies(node_id)}
    statuses = dict(execution.node_runs.filter(node_id__in=relevant).order_by("sequence", "id")
                    .values_list("node_id", "status")) if relevant else {}
    ready = plan.ready(statuses, candidates)
    if ready:
        _start_layer(execution, plan, ready)
    elif not _any_active(execution):
        done = execution.node_runs.filter(status__in=["success", "skipped"]).values("node_id").distinct().count()
        if done == len(plan.nodes):
            _end(execution, Execution.Status.SUCCESS, "")


def _start_node(execution: Execution, plan: Plan, node_id: str) -> None:
    """Start a state machine's next node. It may loop, so its steps are bounded by the
    workflow's max_steps."""
    limit = execution.workflow.max_steps
    if plan.topology == "state_machine" and execution.node_runs.filter(kind="first").count() >= limit:
        _end(execution, Execution.Status.FAILED, f"max_steps: the run reached its bound of {limit} steps")
        return
    _new_run(execution, node_id, agent_id=plan.agents[node_id], kind="first", attempt=1)


def _start_layer(execution: Execution, plan: Plan, node_ids: list[str]) -> None:
    """Start the first attempts of nodes that became ready together, in one INSERT; inside
    a worker, the first is claimed for that worker to run next (see node_run.node_run_execute)."""
    now = timezone.now()
    last = execution.node_runs.aggregate(models.Max("sequence"))["sequence__max"] or 0
    versions = workflow_graph(execution.workflow).versions
    inline = (getattr(_inline, "open", False) and not getattr(_inline, "reserved", False)
              and time.monotonic() < getattr(_inline, "until", 0))
    claim = f"{getattr(_inline, 'worker', '')}/{uuid.uuid4().hex[:8]}"
    runs = NodeRun.objects.bulk_create([
        NodeRun(execution=execution, node_id=node_id, agent_id=plan.agents[node_id],
                agent_version_id=versions.get(plan.agents[node_id]), kind="first", attempt=1, sequence=last + offset,
                available_at=now, heartbeat_at=now, dispatches=1,
                **({"status": NodeRun.Status.RUNNING, "worker": claim, "started_at": now} if inline and offset == 1
                   else {"status": NodeRun.Status.PENDING}))
        for offset, node_id in enumerate(node_ids, start=1)
    ])
    if inline:
        _inline.reserved = True
        first = runs.pop(0)

        def keep():
            _inline.next = (first, claim)

        transaction.on_commit(keep)
    for run in runs:
        _dispatch(run.pk)


def _new_run(execution: Execution, node_id: str, *, agent_id: int, kind: str, attempt: int, delay: float = 0,
             status: str = NodeRun.Status.PENDING) -> NodeRun:
    now = timezone.now()
    sequence = (execution.node_runs.aggregate(models.Max("sequence"))["sequence__max"] or 0) + 1
    version = AgentVersion.objects.filter(agent_id=agent_id).values_list("pk", flat=True).first()  # the latest
    run = NodeRun.objects.create(
        execution=execution, node_id=node_id, agent_id=agent_id, agent_version_id=version,
        kind=kind, attempt=attempt, sequence=sequence, status=status,
        available_at=now + timedelta(seconds=delay), heartbeat_at=now, dispatches=int(status == NodeRun.Status.PENDING),
        completed_at=now if status == NodeRun.Status.SKIPPED else None,
    )
    if status == NodeRun.Status.PENDING:
        _dispatch(run.pk, delay)
    return run


def _dispatch(node_run_id: int, delay: float = 0) -> None:
    """Send the node run to a worker once the transaction commits (counted in `dispatches`
    by whoever calls this: creation sets 1, the sweep adds one)."""
    send_after_commit("executions.run_node", node_run_id, countdown=delay,
                      soft_time_limit=settings.NODE_SOFT_TIME_LIMIT_SECONDS,
                      time_limit=settings.NODE_HARD_TIME_LIMIT_SECONDS)


def _apply_output_mapping(execution: Execution, run: NodeRun, node=None) -> None:
    node = node or workflow_node(execution.workflow, run.node_id)
    if not node.output_mapping:
        return
    state = dict(execution.state)
    for key, path in node.output_mapping.items():
        try:
            state[key] = select_path(run.output, path)
        except RefError:
            state.pop(key, None)  # the output does not have it: the key is absent, not stale
    execution.state = state
    Execution.objects.filter(pk=execution.pk).update(state=state, updated_at=timezone.now())


def _end(execution: Execution, status: str, reason: str) -> None:
    now = timezone.now()
    change_status(execution, Execution.STATES, status, completed_at=now, ended_reason=reason, escalation=None)
    if status != Execution.Status.SUCCESS:
        transition_all(execution.node_runs, NodeRun.Status.PENDING, NodeRun.Status.CANCELLED, completed_at=now)
    if status in (Execution.Status.SUCCESS, Execution.Status.FAILED):  # a cancelled run is not judged
        _evaluate_after_commit(execution.pk)


def _evaluate_after_commit(execution_pk: int) -> None:
    send_after_commit("executions.evaluate", execution_pk)


def _any_active(execution: Execution) -> bool:
    """Whether any node run of the execution is pending or running. Asked after every
    node run that makes nothing ready, so it is plain SQL: the ORM took longer to build
    this query than the database took to answer it."""
    table = connection.ops.quote_name(NodeRun._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {table} WHERE execution_id = %s AND status IN (%s, %s) LIMIT 1",
                       [execution.pk, NodeRun.Status.PENDING, NodeRun.Status.RUNNING])
        return cursor.fetchone() is not None


def _locked(execution: Execution) -> Execution:
    """The execution's row read again under a lock; the workflow already read with it is kept."""
    if not Execution.workflow.is_cached(execution):
        return Execution.objects.select_for_update().select_related("workflow").get(pk=execution.pk)
    locked = Execution.objects.select_for_update().get(pk=execution.pk)
    locked.workflow = execution.workflow
    return locked


def _past_wall_time(execution: Execution, now) -> bool:
    return bool(execution.started_at) and (now - execution.started_at).total_seconds() > execution.workflow.max_wall_seconds


def _wall_reason(execution: Execution) -> str:
    return f"max_wall_seconds: the run exceeded its {execution.workflow.max_wall_seconds} s"
