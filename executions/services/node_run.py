"""A node run on a worker: claimed, performed, its result or failure stored, then the run
advanced; and the heartbeats that tell the sweep its worker is alive.

Node runs are claimed with a conditional UPDATE that must touch exactly one row, and their
results are stored only by the claim that ran them, so a task delivered twice, or a run
swept from a worker that went silent, never yields two results."""
from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from functools import partial
from typing import TypeVar

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, models, transaction
from django.utils import timezone

from agents.backends.dispatch import dispatched, end_process
from agents.backends.metering import Meter, metered
from agents.documents import agent_as_of, agent_with
from agents.models import Agent
from core.cancellation import Cancellation, Cancelled, cancellable
from core.status_writes import Touch, Under, claim_row, transition, transition_under
from engine.steps import nothing_follows, wall_time_exceeded
from executions import cancel_notices, node_kinds
from executions.models import Execution, NodeRun
from executions.node_errors import NodeFailure, NodeWaits
from executions.run_graphs import execution_graph
from executions.services.budget import claims_ended, node_run_budget
from executions.services.inline import INLINE_SECONDS, MAX_INLINE, Chain, Claimed
from executions.services.run import (
    LockedRun,
    any_node_run_active,
    dispatch_after_commit,
    plan_and_policy,
    run_elapsed,
    wall_time_end,
)
from executions.services.subworkflows import child_start

logger = logging.getLogger(__name__)
T = TypeVar("T")


def node_run_execute(*, node_run_id: int, worker: str) -> str:
    """Claim a pending node run, perform it, store what happened and advance the run; then
    run the next node of a chain here too: the node run that storing one created claimed
    for this worker (services/inline.py). Returns what happened to the first run
    ("duplicate" when another delivery already has it)."""
    chain = Chain(worker, time.monotonic() + INLINE_SECONDS)
    first, claimed = "", None
    for _ in range(MAX_INLINE):
        outcome, claimed = _execute(node_run_id, worker, claimed, chain)
        first = first or outcome
        if claimed is None or connection.in_atomic_block:
            # Inside a caller's transaction (a test's), the claimed run is not committed
            # yet: it is left as a worker that died would leave it, for the sweep.
            break
        node_run_id = claimed.run.pk
    else:
        if claimed is not None:  # give it back to the queue
            if transition(NodeRun, claimed.run.pk, NodeRun.Status.RUNNING, NodeRun.Status.PENDING,
                          where={"worker": claimed.claim}, worker="") == 1:
                dispatch_after_commit(claimed.run.pk)
    return first


def _execute(node_run_id: int, worker: str, claimed: Claimed | None = None,
             chain: Chain | None = None) -> tuple[str, Claimed | None]:
    """Perform one node run: claimed here, or already `claimed` for us. Returns what
    happened, and the next node of the chain, created claimed for this worker (`chain`)."""
    now = timezone.now()
    if claimed is None:
        claim = f"{worker}/{uuid.uuid4().hex[:8]}"
        run = _claim(node_run_id, claim, now)
        if run is None:
            _advance_what_a_stopped_worker_left(node_run_id, now)
            return "duplicate", None
    else:
        run, claim = claimed
    if run.backend_process:  # sent again: a backend process its last claim left running here ends now
        end_process(run.backend_process)
    execution = run.execution
    if execution.status != Execution.Status.RUNNING:
        transition(NodeRun, run.pk, NodeRun.Status.RUNNING, NodeRun.Status.CANCELLED, where={"worker": claim},
                   completed_at=now)
        return "cancelled", None
    ended = wall_time_end(execution, now)
    if ended:
        with transaction.atomic():
            locked = LockedRun.lock(execution)
            transition(NodeRun, run.pk, NodeRun.Status.RUNNING, NodeRun.Status.CANCELLED, where={"worker": claim},
                       completed_at=now)
            locked.end(ended.end_status, ended.reason)
        return "ended", None
    graph = execution_graph(execution)
    node = graph.nodes[run.node_id]
    # The node's agent as of the workflow's graph; a fallback agent is not in it.
    run.agent = graph.agents.get(run.agent_id) or Agent.objects.get(pk=run.agent_id)
    if run.agent_version_id and run.agent_version_id != graph.versions.get(run.agent_id):
        # Pinned by a re-run or a trial (or the agent has changed since the run was made):
        # the run does what its recorded version says.
        run.agent = agent_as_of(run.agent, run.agent_version)
    override = execution.agent_overrides.get(run.node_id)
    if override and run.kind != NodeRun.Kind.FALLBACK:  # an experiment's candidate or model: not the fallback agent's
        run.agent = agent_with(run.agent, override)
    # Every model call the node makes, with its cost, held to the run's cost limits, and made
    # for this dispatch of the node run (its number, its calls' keys, its processes recorded).
    budget = node_run_budget(execution, graph.settings, node_run_id=run.pk, claim=claim)
    with heartbeat(run.pk, claim, execution.pk), metered(budget) as meter, \
            dispatched(run.pk, run.dispatches, on_process=partial(_heartbeats.record_process, run.pk)):
        try:
            performed = node_kinds.perform(run, graph, node)
        except Cancelled:  # its run was cancelled, which ended the node run (see _Heartbeats.stop_lost)
            node_failed(run, claim, NodeFailure("cancelled", code=Cancelled.code, retryable=False), meter, chain)
            return "cancelled", None
        except SoftTimeLimitExceeded:  # raised by Celery wherever the node was; the worker goes on
            limit = settings.NODE_SOFT_TIME_LIMIT_SECONDS
            return "failed", node_failed(run, claim, time_limit_failure(
                f"the node did not finish within the node time limit of {limit:g} s and was stopped"), meter, chain)
        except NodeFailure as failure:
            return "failed", node_failed(run, claim, _crossed(meter, failure.record) or failure, meter, chain)
        except NodeWaits as waits:  # for a person's decision on tool calls (executions/services/gates.py)
            crossed = _crossed(meter, waits.record)
            if crossed is not None:
                return "failed", node_failed(run, claim, crossed, meter, chain)
            _node_waits(run, claim, waits, meter)
            return "waiting", None
        except Exception as error:  # a defect must fail the node visibly, not leave it running
            if isinstance(error, (OperationalError, InterfaceError)) and not _connection_usable():
                # The database connection broke while the node ran, with no result in
                # hand: not the node's failure. It stays running, and the sweep sends it
                # again (the same calls with the same keys, see agents/backends/dispatch.py).
                connection.close()
                raise
            logger.exception("node run %s failed unexpectedly", run.pk)
            return "failed", node_failed(run, claim, NodeFailure(
                f"{type(error).__name__}: {error}", code="INTERNAL_ERROR", retryable=False), meter, chain)
        crossed = _crossed(meter, performed.record)
        if crossed is not None:
            return "failed", node_failed(run, claim, crossed, meter, chain)
        if performed.child is not None:  # a sub-workflow node: its work goes on in a child run
            try:
                started = child_start(run, claim, performed.child, _fields(performed.record))
            except NodeFailure as failure:
                return "failed", node_failed(run, claim, failure, meter, chain)
            return ("child started" if started else "cancelled"), None
        # Still beating: were the database away for a while as the result is stored, the
        # sweep must not send the node again meanwhile.
        return "success", _node_succeeded(run, claim, performed, node, meter, chain)


def _node_waits(run: NodeRun, claim: str, waits: NodeWaits, meter: Meter) -> None:
    """Store a node run that stops for a decision on tool calls: waiting, its gate open, what
    it did so far (turns, calls, their cost) and the conversation it goes on from. A run
    with nothing else to do waits with it (LockedRun.pause_at_gates)."""
    calls, added, flags = _metered(meter, run)
    fields = {**_fields(waits.record), **calls, "gate": waits.gate, "conversation": waits.conversation,
              "decide_by": None}

    def store(again: bool) -> None:
        if again and _stored_before(run, claim, NodeRun.Status.WAITING):
            return
        with transaction.atomic():
            locked, stored = _store_locked(run, claim, NodeRun.Status.WAITING, fields, added, flags)
            if stored == 1:
                locked.pause_at_gates()

    _stored_surely(store, run.pk)


def _crossed(meter: Meter, record: dict) -> NodeFailure | None:
    """The failure of a node one of whose calls took the run or the node run past its cost
    limit, whatever became of the node after (a summary's failure is absorbed, a search
    goes on without its role): the run stops on its budget, and its record says why."""
    crossed = meter.crossed
    if crossed is None:
        return None
    return NodeFailure(str(crossed), code=crossed.code, retryable=False, record=record, details=crossed.details)


def _claim(node_run_id: int, claim: str, now) -> NodeRun | None:
    """Claim a pending node run for `claim`: a conditional UPDATE that must touch exactly
    one row, returning that row with its execution and workflow (one statement on
    PostgreSQL). None: someone else has it.

    The claim does not wait for the disk (claim_row's synchronous=False): were PostgreSQL
    to crash right after it, the run would be pending again and sent again by the sweep,
    which is what becomes of a claimed run whose result could not be stored because
    PostgreSQL crashed while it ran. Its result, stored later, is durable, and with it the
    claim."""
    return claim_row(NodeRun, node_run_id, NodeRun.Status.PENDING, NodeRun.Status.RUNNING,
                     select_related="execution__workflow", synchronous=False, worker=claim, started_at=now,
                     heartbeat_at=now)


def _store_locked(run: NodeRun, claim: str, status: str, fields: dict, added: dict,
                  flags: dict) -> tuple[LockedRun, int]:
    """Lock the run's execution and store the node run's result (`status`, `fields`) under
    that lock, while the execution is running: one statement that touches the execution's
    row (saying it is still running, adding the node's cost: `added`, `flags`, see
    _metered), moves the node run and, in workflows whose nodes write the run's state
    (output_mapping), returns that state (elsewhere it stays `{}`). An execution no longer
    running is read again whole under its lock, and the result stored after it. Returns the
    locked run and the node runs stored (0: the claim no longer holds)."""
    execution = run.execution
    if Execution.workflow.is_cached(execution):
        writes_state = execution_graph(execution).writes_state
        touch = Touch(Execution, execution.pk, Execution.Status.RUNNING, add=added,
                      returning=("state",) if writes_state else (), fields=flags)
        stored = transition_under(touch, NodeRun, run.pk, NodeRun.Status.RUNNING, status, where={"worker": claim},
                                  **fields)
        if stored.touched is not None:  # locked by the touch
            if writes_state:
                (execution.state,) = stored.touched
            return LockedRun(execution), stored.moved
    locked = LockedRun.lock(execution)
    _charge(locked.execution, added, flags)
    return locked, transition(NodeRun, run.pk, NodeRun.Status.RUNNING, status, where={"worker": claim}, **fields)


def _charge(execution: Execution, added: dict, flags: dict) -> None:
    """Add a node's cost to its execution however it ended (see _metered)."""
    if added or flags:
        Execution.objects.filter(pk=execution.pk).update(
            **{name: models.F(name) + amount for name, amount in added.items()}, **flags)


def _metered(meter: Meter | None, run: NodeRun | None = None) -> tuple[dict, dict, dict]:
    """The node run's fields for the calls `meter` recorded (and its claims on the run's
    max_cost, which end with it: see executions/services/budget.py); the amount they add to
    its execution's cost; and the execution's fields they set (an unpriced call: not
    complete). The calls `run` stored before this claim (a node that waited for a decision
    on tool calls) come first: its fields are all its calls, the execution adds the new."""
    if meter is None or not (meter.calls or meter.reserved):
        return {}, {}, {}
    earlier, cost, complete = (run.calls, run.cost, run.cost_complete) if run is not None else ([], 0, True)
    fields = {"calls": [*earlier, *(call.as_dict() for call in meter.calls)], "cost": cost + meter.cost,
              "cost_complete": complete and meter.complete, "cost_reserved": 0}
    return fields, {"cost": meter.cost} if meter.cost else {}, {} if meter.complete else {"cost_complete": False}


# A result in hand was paid for. When the database connection breaks while it is stored (a
# database restarted, a connection terminated), it is stored again on a new connection, for
# up to this long, before it is given up: the sweep would then send the node again, and its
# backend would be called again.
STORE_RETRY_SECONDS = 30.0


def _stored_surely(store: Callable[[bool], T], node_run_id: int) -> T:
    """`store(again)`, tried again on a new connection while the database connection breaks
    under it (`again`: an earlier try may have been stored, and only its answer lost), up
    to STORE_RETRY_SECONDS. Inside a transaction begun by the caller, nothing can be tried
    again: the error goes up."""
    deadline = time.monotonic() + STORE_RETRY_SECONDS
    delay, again = 0.1, False
    while True:
        try:
            return store(again)
        except (OperationalError, InterfaceError):
            if connection.in_atomic_block or time.monotonic() + delay > deadline:
                raise
            logger.warning("node run %s: the database connection broke while its result was stored; storing it "
                           "again on a new connection in %g s", node_run_id, delay, exc_info=True)
            connection.close()  # broken: the next statement opens a new one
            time.sleep(delay)
            delay, again = min(delay * 2, 5.0), True


def _connection_usable() -> bool:
    """Whether this thread's database connection is open and answers."""
    return connection.connection is not None and connection.is_usable()


def _stored_before(run: NodeRun, claim: str, status: str) -> bool:
    """Whether an earlier try of this claim stored the node run as `status`."""
    return NodeRun.objects.filter(pk=run.pk, worker=claim, status=status).exists()


def _node_succeeded(run: NodeRun, claim: str, performed, node, meter: Meter | None = None,
                    chain: Chain | None = None) -> Claimed | None:
    ended = timezone.now()
    calls, added, flags = _metered(meter, run)
    fields = {"output": performed.output, "completed_at": ended, "duration_ms": _ms(run.started_at, ended),
              **_fields(performed.record), **calls}
    return _stored_surely(lambda again: _store_success(run, claim, performed, node, fields, added, flags, again,
                                                       chain), run.pk)


def _store_success(run: NodeRun, claim: str, performed, node, fields: dict, added: dict, flags: dict,
                   again: bool, chain: Chain | None) -> Claimed | None:
    """Store a success and advance the run; returns the next node of the chain, created
    claimed for this worker (a node that settles alone has none)."""
    ended = fields["completed_at"]
    if again and _stored_before(run, claim, NodeRun.Status.SUCCESS):
        # Stored by an earlier try, its cost with it. A success stored together with what
        # follows it is whole; one that settles alone may not have ended its run yet.
        if _settles_alone(run.execution, node, ended):
            run.status, run.output = NodeRun.Status.SUCCESS, performed.output
            _advance_if_nothing_active(run)
        return None
    if _settles_alone(run.execution, node, ended):
        alone = _store_alone(run, claim, fields, added, flags)
        if alone is not None:
            if alone.moved == 1 and not alone.others:  # the last node run to end: the run may be done
                with transaction.atomic():
                    run.status, run.output = NodeRun.Status.SUCCESS, performed.output
                    LockedRun.lock(run.execution).advance(completed=run)
            return None
    with transaction.atomic():
        locked, stored = _store_locked(run, claim, NodeRun.Status.SUCCESS, fields, added, flags)
        if stored != 1:
            return None  # cancelled, or swept and given to another worker: that one's result counts
        run.status, run.output = NodeRun.Status.SUCCESS, performed.output
        locked.apply_output(run, node)
        return locked.advance(completed=run, chain=chain)


def _advance_if_nothing_active(run: NodeRun) -> None:
    """Advance the run of `run`, a success stored alone (_store_alone), unless another of its
    node runs is still to end: what its worker does next, done again when that worker may
    have stopped in between."""
    with transaction.atomic():
        locked = LockedRun.lock(run.execution)
        if locked.execution.status == Execution.Status.RUNNING and not any_node_run_active(locked.execution):
            locked.advance(completed=run)


def _advance_what_a_stopped_worker_left(node_run_id: int, now) -> None:
    """A node run delivered again once it was stored. A success stored alone and its run's
    advance are two transactions: a worker killed between them left the run running with
    nothing active, and this delivery (its message, never acknowledged) advances it. A
    duplicate of anything else changes nothing."""
    run = (NodeRun.objects.select_related("execution__workflow")
           .filter(pk=node_run_id, status=NodeRun.Status.SUCCESS, execution__status=Execution.Status.RUNNING).first())
    if run is None:
        return
    node = execution_graph(run.execution).nodes.get(run.node_id)
    if node is not None and _settles_alone(run.execution, node, now):
        _advance_if_nothing_active(run)


def _settles_alone(execution: Execution, node, now) -> bool:
    """Whether all the run needs after a success of `node` is to know whether any other of
    its node runs is still to end (engine.steps.nothing_follows): no node comes after it,
    it writes nothing to the run's state, the workflow has no gates to pause at, and the
    run is within its wall time. The leaves of a wide DAG."""
    if not Execution.workflow.is_cached(execution):
        return False
    graph = execution_graph(execution)
    plan, policy = plan_and_policy(execution, graph)
    return (nothing_follows(plan, node.node_id) and not node.output_mapping and not graph.has_gates
            and wall_time_exceeded(policy, run_elapsed(execution, now)) is None)


def _store_alone(run: NodeRun, claim: str, fields: dict, added: dict, flags: dict) -> Under | None:
    """Store a success that settles alone (_settles_alone) in one statement, its own
    transaction: the execution's row locked and the node's cost added to it while it is
    running, the node run stored while the claim holds, and whether any other node run of
    the run is still to end (`others`). A node of a wide DAG costs this and its claim.

    None: the run is no longer running, or another worker wrote its row while this one
    waited for the lock, so the answer could be stale (core.status_writes.transition_under);
    nothing was stored, and the caller stores the result in a transaction of its own."""
    touch = Touch(Execution, run.execution.pk, Execution.Status.RUNNING, add=added, fields=flags)
    stored = transition_under(touch, NodeRun, run.pk, NodeRun.Status.RUNNING, NodeRun.Status.SUCCESS,
                              where={"worker": claim}, others=("execution", NodeRun.ACTIVE), **fields)
    return None if stored.touched is None else stored


def node_failed(run: NodeRun, claim: str, failure, meter: Meter | None = None,
                chain: Chain | None = None) -> Claimed | None:
    """Store a failure; with no `meter`, for a claim whose worker is gone (the sweep).
    Returns the node that follows it (an on_failure transition) when it was created claimed
    for this worker (`chain`)."""
    ended = timezone.now()
    calls, added, flags = _metered(meter, run)
    return _stored_surely(lambda again: _store_failure(run, claim, failure, ended, calls, added, flags, again,
                                                       claims_left=meter is None, chain=chain), run.pk)


def _store_failure(run: NodeRun, claim: str, failure, ended, calls: dict, added: dict, flags: dict,
                   again: bool, *, claims_left: bool, chain: Chain | None = None) -> Claimed | None:
    """`claims_left`: the claim's worker is gone, and what it claimed ends here."""
    if again and _stored_before(run, claim, NodeRun.Status.FAILED):
        return None  # stored by an earlier try, with its cost and what follows, in one transaction
    with transaction.atomic():
        locked = LockedRun.lock(run.execution)
        execution = locked.execution
        if claims_left:
            calls, flags = claims_ended(run.pk, claim)
        _charge(execution, added, flags)
        stored = transition(
            NodeRun, run.pk, NodeRun.Status.RUNNING, NodeRun.Status.FAILED, where={"worker": claim},
            error=str(failure), error_code=failure.code, completed_at=ended,
            error_details=getattr(failure, "details", None),
            duration_ms=_ms(run.started_at, ended), **_fields(failure.record), **calls)
        if stored != 1 or execution.status != Execution.Status.RUNNING:
            return None
        run.refresh_from_db()
        return locked.advance(completed=run, retryable=failure.retryable, chain=chain)


def time_limit_failure(message: str) -> NodeFailure:
    """A node past its time limit. Not retryable: another try would most likely take as long
    again, each costing the whole limit; the fallback agent and escalation still apply."""
    return NodeFailure(message, code="NODE_TIME_LIMIT", retryable=False)


def _ms(start, end) -> int:
    return int((end - start).total_seconds() * 1000) if start else 0


STORED_FIELDS = {"backend", "model", "tokens_in", "tokens_out", "prompt", "resolved_inputs", "context_record",
                 "resolution_failures", "compression", "turns", "tool_calls"}


def _fields(record: dict) -> dict:
    return {key: value for key, value in record.items() if key in STORED_FIELDS}


# -- heartbeats -------------------------------------------------------------------------


class _Heartbeats:
    """The node runs this process is performing, and one thread (with its own database
    connection) that touches their heartbeats every NODE_HEARTBEAT_SECONDS. One thread per
    process rather than one per node run: starting a thread for every run of a no-op node
    cost more than the node. Started lazily, so a forked worker child starts its own.

    It also records the local processes the runs' backends start (`record_process`), woken
    to do it at once: written by the node's own thread, the record would keep the call
    from starting while the database is slow or locked, past the node's time limits.

    A beat that touches nothing finds a node run no longer running under its claim: one its
    run's cancel ended, or one the sweep sent again. Its work in flight is stopped then
    (`stop_lost`): the beat is the worker's only question to the database about it. A
    second thread listens for cancels announced over Redis (executions/cancel_notices.py)
    and wakes the beat when one is of a run performed here, so the node stops in a moment
    rather than at the next beat."""

    def __init__(self):
        self.lock = threading.Lock()
        self.runs: dict[int, str] = {}  # node run pk → the claim performing it
        self.cancellations: dict[int, Cancellation] = {}  # node run pk → what stops its work in flight
        self.executions: dict[int, int] = {}  # node run pk → its execution's pk (for cancel notices)
        self.processes: dict[int, dict] = {}  # node run pk → its backend process, to record
        self.wake = threading.Event()
        self.pid = None

    def add(self, node_run_id: int, claim: str, cancellation: Cancellation, execution_pk: int) -> None:
        with self.lock:
            self.runs[node_run_id] = claim
            self.cancellations[node_run_id] = cancellation
            self.executions[node_run_id] = execution_pk
            if self.pid != os.getpid():  # not started in this process yet
                self.pid = os.getpid()
                self.wake = threading.Event()
                threading.Thread(target=self.beat, name="node-run-heartbeats", daemon=True).start()
                threading.Thread(target=cancel_notices.listen, args=(self.cancel_heard,), name="cancel-notices",
                                 daemon=True).start()

    def remove(self, node_run_id: int) -> None:
        with self.lock:
            self.runs.pop(node_run_id, None)
            self.processes.pop(node_run_id, None)
            self.cancellations.pop(node_run_id, None)
            self.executions.pop(node_run_id, None)

    def cancel_heard(self, execution_pk: int) -> None:
        """A cancel of the run `execution_pk` was announced (executions/cancel_notices.py):
        beat now if a node run of it is performed here, and the beat stops it."""
        with self.lock:
            if execution_pk in self.executions.values():
                self.wake.set()

    def record_process(self, node_run_id: int, process: dict) -> None:
        with self.lock:
            if node_run_id in self.runs:
                self.processes[node_run_id] = process
                self.wake.set()

    def beat(self) -> None:
        while True:
            self.wake.wait(settings.NODE_HEARTBEAT_SECONDS)
            self.wake.clear()
            with self.lock:
                runs = list(self.runs.items())
                processes, self.processes = self.processes, {}
            if not runs:
                continue
            try:
                lost = {}
                for node_run_id, claim in runs:
                    recorded = {"backend_process": processes[node_run_id]} if node_run_id in processes else {}
                    touched = NodeRun.objects.filter(pk=node_run_id, worker=claim, status=NodeRun.Status.RUNNING
                                                     ).update(heartbeat_at=timezone.now(), **recorded)
                    processes.pop(node_run_id, None)
                    if not touched:
                        lost[node_run_id] = claim
                if lost:
                    self.stop_lost(lost)
            except Exception:  # the database is away: beat again later, the sweep judges staleness
                logger.warning("could not touch node run heartbeats", exc_info=True)
                with self.lock:  # and record those processes then
                    self.processes = {**processes, **self.processes}
            finally:
                connection.close()  # beats are seconds apart: hold no connection in between

    def stop_lost(self, lost: dict[int, str]) -> None:
        """Stop the work of the node runs whose heartbeat touched nothing (`lost`: pk → claim):
        those a cancel of their run ended (the reason it stored, e.g. "cancelled by ada"),
        and those the sweep gave to another claim, whose result would be dropped. One that
        its own thread has just stored is left alone."""
        found = {pk: (status, worker, error) for pk, status, worker, error in NodeRun.objects.filter(
            pk__in=list(lost)).values_list("pk", "status", "worker", "error")}
        for node_run_id, claim in lost.items():
            status, worker, error = found.get(node_run_id, ("", "", ""))
            if status == NodeRun.Status.CANCELLED:
                reason = error or "cancelled"
            elif not status:
                reason = f"node run {node_run_id} no longer exists"
            elif worker != claim:
                reason = f"node run {node_run_id} was sent to another worker"
            else:  # stored by its own thread, as the beat touched it
                continue
            with self.lock:
                cancellation = self.cancellations.get(node_run_id)
            if cancellation is not None:
                logger.info("node run %s: stopping its work in flight (%s)", node_run_id, reason)
                cancellation.cancel(reason)


_heartbeats = _Heartbeats()


@contextmanager
def heartbeat(node_run_id: int, claim: str, execution_pk: int = 0):
    """Touch the node run's heartbeat while it runs; the work done inside is cancelled
    (core/cancellation.py) when a beat finds the node run cancelled, at once when its run's
    cancel is announced (`execution_pk`, executions/cancel_notices.py)."""
    with cancellable() as cancellation:
        _heartbeats.add(node_run_id, claim, cancellation, execution_pk)
        try:
            yield cancellation
        finally:
            _heartbeats.remove(node_run_id)
