"""Writes for executions: import, start and steer, run a node, advance, sweep.

Evaluations are written by executions/evaluations.py, which builds on this module."""
from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.cache import cache
from django.db import connection, models, transaction
from django.utils import timezone

from agents.models import Agent, AgentVersion
from agents.services import get_agent
from core.errors import DocumentError, IllegalTransition, WorkflowInvalid
from core.states import change_status, claim_row, transition, transition_all
from core.tasks import send_after_commit
from core.jsonutil import check_shape, check_storable, parse_datetime
from core.locks import redis_lock
from executions.documents import EXECUTION_SHAPE, execution_document
from executions.models import Evaluation, Execution, NodeRun
from executions import nodes, runner
from engine.context.errors import RefError
from engine.context.resolution import select_path
from engine.scheduling import Plan
from engine.conditions import evaluate_condition
from workflows.models import Contract, Workflow
from engine.validation import dependency_edges, transition_problems


@transaction.atomic
def execution_import_document(document: dict[str, Any], *, actor: str = "") -> tuple[Execution, str]:
    """Record an execution that ran elsewhere (or earlier) in the §5 shape.

    An execution is a record of what happened: importing the same record again changes
    nothing, and a record that contradicts a stored one is refused rather than rewritten.
    """
    check_shape(document, EXECUTION_SHAPE, "execution")
    try:
        workflow = Workflow.objects.get(workflow_id=document["workflow_ref"])
    except Workflow.DoesNotExist:
        raise DocumentError(f"workflow '{document['workflow_ref']}' does not exist", where="workflow_ref")
    node_ids = set(workflow.nodes.values_list("node_id", flat=True))
    started_at = parse_datetime(document.get("started_at"), "started_at")
    completed_at = parse_datetime(document.get("completed_at"), "completed_at")
    if started_at and completed_at and completed_at < started_at:
        raise DocumentError("is before started_at", where="completed_at")

    runs = []
    attempts: dict[str, int] = {}
    for index, result in enumerate(document.get("results", [])):
        where = f"results[{index}]"
        if result["node_id"] not in node_ids:
            raise DocumentError(f"node '{result['node_id']}' is not a node of workflow '{workflow.workflow_id}'", where=f"{where}.node_id")
        agent = get_agent(result["agent_ref"], where=f"{where}.agent_ref")
        attempts[result["node_id"]] = attempts.get(result["node_id"], 0) + 1
        runs.append(
            NodeRun(
                node_id=result["node_id"],
                agent=agent,
                agent_version=agent.versions.filter(version=agent.version).first(),
                status=result["status"],
                attempt=attempts[result["node_id"]],
                sequence=index,
                output=result.get("output"),
                duration_ms=result.get("duration_ms"),
            )
        )

    existing = Execution.objects.filter(execution_id=document["execution_id"]).first()
    if existing is not None:
        if _comparable(execution_document(existing)) == _comparable(document):
            return existing, "unchanged"
        raise DocumentError(
            f"execution '{existing.execution_id}' is already recorded ({existing.status}) and differs; "
            "executions are records and are not rewritten by import",
            where="execution_id",
        )
    execution = Execution.objects.create(
        execution_id=document["execution_id"],
        workflow=workflow,
        status=document["status"],
        input=document.get("input", {}),
        started_at=started_at,
        completed_at=completed_at,
    )
    for run in runs:
        run.execution = execution
    NodeRun.objects.bulk_create(runs)
    return execution, "created"


def _comparable(document: dict[str, Any]) -> dict[str, Any]:
    """A document with datetimes normalised and absent optional keys filled, for equality."""
    normal = dict(document)
    for key in ("started_at", "completed_at"):
        value = parse_datetime(normal.get(key), key)
        normal[key] = value.isoformat() if value else None
    normal.setdefault("input", {})
    normal["results"] = [
        {"output": None, "duration_ms": None, **result} for result in normal.get("results", [])
    ]
    return normal


logger = logging.getLogger(__name__)


# -- running ----------------------------------------------------------------------------
#
# A run advances by these services only. Each takes the execution row's lock
# (`select_for_update`) before deciding what comes next, so two workers finishing
# parallel nodes at once never both schedule the same node. Node runs are claimed with a
# conditional UPDATE that must touch exactly one row, and their results are stored only
# by the claim that ran them, so a task delivered twice, or a run swept from a worker
# that went silent, never yields two results.


@dataclass(frozen=True)
class Graph:
    """What running a workflow reads on every node, read once per version of the workflow
    in each process. The services bump the workflow's `updated_at` whenever any of this
    changes: its nodes or transitions, a new version of one of its agents, new contracts."""

    plan: Plan
    nodes: dict  # node id → Node (shared: read it, never change it)
    agents: dict  # agent pk → Agent (shared: read it, never change it)
    versions: dict  # agent pk → the pk of its latest AgentVersion
    contracts: list  # Contract rows from one of the workflow's agents
    writes_state: bool  # some node has an output_mapping
    problems: list  # transitions its topology cannot honour (stored before validation refused them)


_GRAPHS: dict[tuple, Graph] = {}


def workflow_graph(workflow: Workflow) -> Graph:
    key = (workflow.pk, workflow.updated_at)
    graph = _GRAPHS.get(key)
    if graph is None:
        nodes = list(workflow.nodes.order_by("position", "id"))
        transitions = [
            {"from": source, "to": target, "condition": condition, "on_success": on_success, "on_failure": on_failure}
            for source, target, condition, on_success, on_failure in workflow.transitions.order_by("position", "id")
            .values_list("from_node", "to_node", "condition", "on_success", "on_failure")
        ]
        document = {"nodes": [{"id": n.node_id, "input_mapping": n.input_mapping} for n in nodes],
                    "transitions": transitions}
        plan = Plan(workflow.topology, [n.node_id for n in nodes], dependency_edges(document), transitions,
                    agents={n.node_id: n.agent_id for n in nodes})
        agents = {n.agent_id for n in nodes}
        versions = {}
        for agent_id, version_id in AgentVersion.objects.filter(agent_id__in=agents).order_by(
                "agent_id", "-created_at", "-id").values_list("agent_id", "pk"):
            versions.setdefault(agent_id, version_id)  # the latest of each agent
        contracts = list(Contract.objects.filter(from_agent_id__in=agents, to_agent_id__in=agents))
        if len(_GRAPHS) > 256:
            _GRAPHS.clear()
        graph = _GRAPHS[key] = Graph(plan, {n.node_id: n for n in nodes}, Agent.objects.in_bulk(agents), versions,
                                     contracts, writes_state=any(n.output_mapping for n in nodes),
                                     problems=transition_problems(workflow.topology, transitions))
    return graph


def workflow_plan(workflow: Workflow) -> Plan:
    return workflow_graph(workflow).plan


def workflow_node(workflow: Workflow, node_id: str):
    """A node of the workflow (shared within the process: read it, never change it)."""
    return workflow_graph(workflow).nodes[node_id]


def execution_start(*, workflow: Workflow, input: dict | None = None, actor=None,
                    execution_id: str | None = None) -> Execution:
    """Create a run and dispatch its first nodes (after commit)."""
    if input is not None and not isinstance(input, dict):
        raise DocumentError("the input of a run is a JSON object", where="input")
    check_storable(input, where="input")
    problems = workflow_graph(workflow).problems
    if problems:  # run as if its transitions were not written, it would do what they say it must not
        raise WorkflowInvalid(problems, workflow_id=workflow.workflow_id)
    with transaction.atomic():
        now = timezone.now()
        execution = Execution.objects.create(
            execution_id=execution_id or f"exec_{now:%Y%m%d%H%M%S}_{uuid.uuid4().hex[:8]}",
            workflow=workflow, status=Execution.Status.RUNNING, input=input or {}, state={},
            domain=_domain_of(input, workflow),
            started_at=now, created_by=actor if getattr(actor, "pk", None) else None,
        )
        _advance(_locked(execution), completed=None)
    return execution


def _domain_of(input: dict | None, workflow: Workflow) -> str:
    """The knowledge domain a run works in: the input's `domain`, else the workflow's."""
    named = (input or {}).get("domain")
    return named.strip()[:200] if isinstance(named, str) and named.strip() else workflow.domain


# Inline continuation: the first node that a node run makes ready (the next node of a
# chain) is run by the same worker instead of being sent through Redis; any others are
# sent as usual. It is created already claimed by that worker, in the transaction that
# stored the previous result. A worker that dies before running it leaves a running
# node run without a heartbeat, which the sweep sends again.
_inline = threading.local()
MAX_INLINE = 100
# A task continues a chain inline only while it is this young: the time limits are the
# task's (NODE_SOFT_TIME_LIMIT_SECONDS), so each node still gets all but a second of them.
INLINE_SECONDS = 1.0


def node_run_execute(*, node_run_id: int, worker: str) -> str:
    """Claim a pending node run, perform it, store what happened and advance the run; then
    run the next node of a chain here too. Returns what happened to the first run
    ("duplicate" when another delivery already has it)."""
    first, claimed = None, None
    _inline.until = time.monotonic() + INLINE_SECONDS
    for _ in range(MAX_INLINE):
        _inline.open, _inline.next, _inline.reserved, _inline.worker = True, None, False, worker
        try:
            outcome = _execute(node_run_id, worker, claimed)
        finally:
            _inline.open = False
        first = first or outcome
        if _inline.next is None:
            break
        claimed = _inline.next
        node_run_id = claimed[0].pk
    else:
        if _inline.next is not None:  # give it back to the queue
            run, claim = _inline.next
            if transition(NodeRun.objects.filter(worker=claim), run.pk, NodeRun.Status.RUNNING, NodeRun.Status.PENDING,
                          worker="") == 1:
                _dispatch(run.pk)
    return first


def _execute(node_run_id: int, worker: str, claimed: tuple | None = None) -> str:
    """Perform one node run: claimed here, or already claimed (`(run, claim)`) for us."""
    now = timezone.now()
    if claimed is None:
        claim = f"{worker}/{uuid.uuid4().hex[:8]}"
        run = _claim(node_run_id, claim, now)
        if run is None:
            return "duplicate"
        run.execution = Execution.objects.select_related("workflow").get(pk=run.execution_id)
    else:
        run, claim = claimed
    execution = run.execution
    if execution.status != Execution.Status.RUNNING:
        transition(NodeRun.objects.filter(worker=claim), run.pk, NodeRun.Status.RUNNING, NodeRun.Status.CANCELLED,
                   completed_at=now)
        return "cancelled"
    if _past_wall_time(execution, now):
        with transaction.atomic():
            transition(NodeRun.objects.filter(worker=claim), run.pk, NodeRun.Status.RUNNING, NodeRun.Status.CANCELLED,
                       completed_at=now)
            _end(_locked(execution), Execution.Status.FAILED, _wall_reason(execution))
        return "ended"
    graph = workflow_graph(execution.workflow)
    node = graph.nodes[run.node_id]
    # The node's agent as of the workflow's graph; a fallback agent is not in it.
    run.agent = graph.agents.get(run.agent_id) or Agent.objects.get(pk=run.agent_id)
    with heartbeat(run.pk, claim):
        try:
            performed = nodes.perform(run, graph, node)
        except SoftTimeLimitExceeded:  # raised by Celery wherever the node was; the worker goes on
            limit = settings.NODE_SOFT_TIME_LIMIT_SECONDS
            _node_failed(run, claim, _time_limit_failure(
                f"the node did not finish within the node time limit of {limit:g} s and was stopped"))
            return "failed"
        except runner.NodeFailure as failure:
            _node_failed(run, claim, failure)
            return "failed"
        except Exception as error:  # a defect must fail the node visibly, not leave it running
            logger.exception("node run %s failed unexpectedly", run.pk)
            _node_failed(run, claim, runner.NodeFailure(f"{type(error).__name__}: {error}", code="INTERNAL_ERROR",
                                                        retryable=False))
            return "failed"
    _node_succeeded(run, claim, performed, node)
    return "success"


def _claim(node_run_id: int, claim: str, now) -> NodeRun | None:
    """Claim a pending node run for `claim`: a conditional UPDATE that must touch exactly
    one row, returning that row (PostgreSQL and SQLite 3.35+ have RETURNING), so that
    claiming and reading the run are one round trip. None: someone else has it."""
    return claim_row(NodeRun, node_run_id, NodeRun.Status.PENDING, NodeRun.Status.RUNNING, worker=claim,
                     started_at=now, heartbeat_at=now)


def _locked_for_result(execution: Execution) -> Execution:
    """Lock a running execution's row before storing a node's result, by touching it: one
    UPDATE that also says it is still running, instead of reading the row again. Its
    state is read again only in workflows whose nodes write it (output_mapping): in the
    others it stays `{}`. An execution no longer running is read again whole."""
    running = Execution.objects.filter(pk=execution.pk, status=Execution.Status.RUNNING)
    if not Execution.workflow.is_cached(execution) or running.update(updated_at=timezone.now()) != 1:
        return _locked(execution)
    if workflow_graph(execution.workflow).writes_state:
        execution.state = running.values_list("state", flat=True).get()
    return execution


def _node_succeeded(run: NodeRun, claim: str, performed, node) -> None:
    ended = timezone.now()
    with transaction.atomic():
        execution = _locked_for_result(run.execution)
        stored = transition(
            NodeRun.objects.filter(worker=claim), run.pk, NodeRun.Status.RUNNING, NodeRun.Status.SUCCESS,
            output=performed.output, completed_at=ended,
            duration_ms=_ms(run.started_at, ended), **_fields(performed.record))
        if stored != 1:
            return  # cancelled, or swept and given to another worker: that one's result counts
        run.status, run.output = NodeRun.Status.SUCCESS, performed.output
        _apply_output_mapping(execution, run, node)
        _advance(execution, completed=run)


def _node_failed(run: NodeRun, claim: str, failure) -> None:
    ended = timezone.now()
    with transaction.atomic():
        execution = _locked(run.execution)
        stored = transition(
            NodeRun.objects.filter(worker=claim), run.pk, NodeRun.Status.RUNNING, NodeRun.Status.FAILED,
            error=str(failure), error_code=failure.code, completed_at=ended,
            error_details=getattr(failure, "details", None),
            duration_ms=_ms(run.started_at, ended), **_fields(failure.record))
        if stored != 1 or execution.status != Execution.Status.RUNNING:
            return
        run.refresh_from_db()
        _handle_failure(execution, run, failure.retryable)


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
    a worker, the first is claimed for that worker to run next (see node_run_execute)."""
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


def _time_limit_failure(message: str) -> runner.NodeFailure:
    """A node past its time limit. Not retryable: another try would most likely take as long
    again, each costing the whole limit; the fallback agent and escalation still apply."""
    return runner.NodeFailure(message, code="NODE_TIME_LIMIT", retryable=False)


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


def _ms(start, end) -> int:
    return int((end - start).total_seconds() * 1000) if start else 0


STORED_FIELDS = {"backend", "model", "tokens_in", "tokens_out", "prompt", "resolved_inputs", "context_record",
                 "resolution_failures", "compression"}


def _fields(record: dict) -> dict:
    return {key: value for key, value in record.items() if key in STORED_FIELDS}


# -- what people do ---------------------------------------------------------------------


def execution_cancel(*, execution: Execution, actor=None) -> Execution:
    """Stop a run: its pending node runs are cancelled; a running one's result is dropped."""
    with transaction.atomic():
        execution = _locked(execution)
        who = getattr(actor, "username", "") or "someone"
        _end(execution, Execution.Status.CANCELLED, f"cancelled by {who}")
        transition_all(execution.node_runs, NodeRun.Status.RUNNING, NodeRun.Status.CANCELLED,
                       completed_at=timezone.now())
    return execution


def execution_resume(*, execution: Execution, output: Any, actor=None) -> Execution:
    """Go on past the escalated node with an output a person gives."""
    check_storable(output, where="output")
    with transaction.atomic():
        execution = _escalated(execution)
        node = workflow_node(execution.workflow, execution.escalation["node_id"])
        change_status(execution, Execution.STATES, Execution.Status.RUNNING, escalation=None)
        now = timezone.now()
        run = _new_run(execution, node.node_id, agent_id=node.agent_id, kind="manual", attempt=1,
                       status=NodeRun.Status.SUCCESS)
        NodeRun.objects.filter(pk=run.pk).update(output=output, backend="manual", completed_at=now, started_at=now,
                                                 worker=getattr(actor, "username", "") or "manual")
        run.output = output
        _apply_output_mapping(execution, run, node)
        _advance(execution, completed=run)
    return execution


def execution_retry(*, execution: Execution, actor=None) -> Execution:
    """Run the escalated node again from its first attempt."""
    with transaction.atomic():
        execution = _escalated(execution)
        node = workflow_node(execution.workflow, execution.escalation["node_id"])
        change_status(execution, Execution.STATES, Execution.Status.RUNNING, escalation=None)
        _new_run(execution, node.node_id, agent_id=node.agent_id, kind="first", attempt=1)
    return execution


def execution_abort(*, execution: Execution, actor=None) -> Execution:
    with transaction.atomic():
        execution = _escalated(execution)
        who = getattr(actor, "username", "") or "someone"
        _end(execution, Execution.Status.FAILED, f"aborted by {who} after escalation at '{execution.escalation['node_id']}'")
    return execution


def _escalated(execution: Execution) -> Execution:
    execution = _locked(execution)
    if execution.status != Execution.Status.ESCALATED:
        raise IllegalTransition(f"execution {execution.execution_id} is {execution.status}, not escalated",
                                code="CONFLICT")
    return execution


# -- crash safety -----------------------------------------------------------------------


class _Heartbeats:
    """The node runs this process is performing, and one thread (with its own database
    connection) that touches their heartbeats every NODE_HEARTBEAT_SECONDS. One thread per
    process rather than one per node run: starting a thread for every run of a no-op node
    cost more than the node. Started lazily, so a forked worker child starts its own."""

    def __init__(self):
        self.lock = threading.Lock()
        self.runs: dict[int, str] = {}  # node run pk → the claim performing it
        self.pid = None

    def add(self, node_run_id: int, claim: str) -> None:
        with self.lock:
            self.runs[node_run_id] = claim
            if self.pid != os.getpid():  # not started in this process yet
                self.pid = os.getpid()
                threading.Thread(target=self.beat, name="node-run-heartbeats", daemon=True).start()

    def remove(self, node_run_id: int) -> None:
        with self.lock:
            self.runs.pop(node_run_id, None)

    def beat(self) -> None:
        while True:
            time.sleep(settings.NODE_HEARTBEAT_SECONDS)
            with self.lock:
                runs = list(self.runs.items())
            if not runs:
                continue
            try:
                for node_run_id, claim in runs:
                    NodeRun.objects.filter(pk=node_run_id, worker=claim, status=NodeRun.Status.RUNNING).update(
                        heartbeat_at=timezone.now())
            except Exception:  # the database is away: beat again later, the sweep judges staleness
                logger.warning("could not touch node run heartbeats", exc_info=True)
            finally:
                connection.close()  # beats are seconds apart: hold no connection in between


_heartbeats = _Heartbeats()


@contextmanager
def heartbeat(node_run_id: int, claim: str):
    """Touch the node run's heartbeat while it runs."""
    _heartbeats.add(node_run_id, claim)
    try:
        yield
    finally:
        _heartbeats.remove(node_run_id)


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
    that ended that long ago without one; end runs past their wall time."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.NODE_STALE_SECONDS)
    report = {"requeued": [], "redispatched": [], "failed": [], "ended": [], "evaluations": []}
    for run in NodeRun.objects.filter(status=NodeRun.Status.RUNNING, heartbeat_at__lt=stale,
                                      execution__status=Execution.Status.RUNNING).select_related("execution"):
        hard = settings.NODE_HARD_TIME_LIMIT_SECONDS
        if run.started_at and run.started_at <= now - timedelta(seconds=hard):
            # Silent, and started longer ago than the hard time limit: the worker killed its
            # process for that (the soft limit did not stop it). Sent again, it would only be
            # killed again.
            _node_failed(run, run.worker, _time_limit_failure(
                f"the node ran past the hard time limit of {hard:g} s and its worker process was killed"))
            report["failed"].append(run.pk)
            continue
        if run.dispatches >= settings.NODE_MAX_DISPATCHES:
            # It took its worker down every time it was sent: fail it rather than loop.
            failure = runner.NodeFailure(f"the worker running it went silent {run.dispatches} times",
                                         code="WORKER_LOST", retryable=False)
            _node_failed(run, run.worker, failure)
            report["failed"].append(run.pk)
            continue
        with transaction.atomic():
            if transition(NodeRun.objects.filter(worker=run.worker), run.pk, NodeRun.Status.RUNNING,
                          NodeRun.Status.PENDING, worker="", heartbeat_at=now,
                          dispatches=models.F("dispatches") + 1) == 1:
                report["requeued"].append(run.pk)
                _dispatch(run.pk)
    for run in NodeRun.objects.filter(status=NodeRun.Status.PENDING, heartbeat_at__lt=stale,
                                      available_at__lte=now, execution__status=Execution.Status.RUNNING):
        with transaction.atomic():
            if NodeRun.objects.filter(pk=run.pk, status=NodeRun.Status.PENDING, heartbeat_at__lt=stale).update(
                    heartbeat_at=now, dispatches=models.F("dispatches") + 1) == 1:
                report["redispatched"].append(run.pk)
                _dispatch(run.pk)
    computed = Evaluation.objects.filter(execution=models.OuterRef("pk"), method=Evaluation.Method.COMPUTED,
                                         target_type=Evaluation.TargetType.EXECUTION)
    unevaluated = Execution.objects.filter(
        status__in=(Execution.Status.SUCCESS, Execution.Status.FAILED), completed_at__lt=stale,
        completed_at__gte=now - EVALUATION_RESEND_WINDOW).exclude(models.Exists(computed))
    for execution_pk in unevaluated.values_list("pk", flat=True)[:100]:
        # Once per NODE_STALE_SECONDS, as for pending runs; a duplicate is harmless (a run
        # evaluated twice has one evaluation).
        if cache.add(f"evaluation-sent:{settings.CELERY_TASK_DEFAULT_QUEUE}:{execution_pk}", 1,
                     timeout=settings.NODE_STALE_SECONDS):
            report["evaluations"].append(execution_pk)
            _evaluate_after_commit(execution_pk)
    for execution in Execution.objects.filter(status=Execution.Status.RUNNING).select_related("workflow"):
        if _past_wall_time(execution, now):
            with transaction.atomic():
                locked = _locked(execution)
                if locked.status == Execution.Status.RUNNING:
                    _end(locked, Execution.Status.FAILED, _wall_reason(locked))
                    report["ended"].append(locked.execution_id)
    return report


# -- the API's ways in ------------------------------------------------------------------


def execution_start_by_id(*, workflow_id: str, input: Any = None, actor=None) -> Execution:
    """Start a run of the workflow with this id: what the API's `POST /executions` does."""
    workflow = Workflow.objects.filter(workflow_id=workflow_id).first()
    if workflow is None:
        raise DocumentError(f"workflow '{workflow_id}' does not exist", where="workflow_id")
    return execution_start(workflow=workflow, input=input, actor=actor)
