"""The run core: a run whose execution row is locked for this transaction (`LockedRun`),
the one door through which a run is advanced, its nodes started, an output applied to its
state and the run ended. Starting a run, a node run's result or failure, a gate's decision,
a re-run and the sweep all go through it.

The engine decides what comes next (`engine.steps.next_step`); `LockedRun.advance` reads the
run for it and stores the step: the next nodes (created and sent to a worker), a retry, the
fallback agent's attempt, an escalation, the end of the run. It holds the execution row's
lock (`LockedRun.lock`, core.status_writes.lock_row), so two workers finishing parallel
nodes at once never both schedule the same node. The next node of a chain that a worker
runs itself comes back from `advance` as a value (services/inline.py)."""
from __future__ import annotations

import uuid
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from agents.models import AgentVersion
from core.rows import cursor, insert_rows
from core.status_writes import change_status, lock_row, transition_all
from core.tasks import send_after_commit, send_all_after_commit
from engine.context.errors import RefError
from engine.context.resolution import select_path
from engine.replay import ROUND_STARTS
from engine.scheduling import Plan
from engine.steps import Outcome, Policy, Progress, Step, bounded, next_step, wall_time_exceeded
from executions import cancel_notices
from executions.models import Execution, NodeRun
from executions.run_graphs import Graph, execution_graph
from executions.services.inline import Chain, Claimed
from executions.signals import send_run_ended


class LockedRun:
    """A run, its execution's row locked until the transaction ends (`lock`). `execution` is
    that row as read under the lock. What changes a run's course or its node runs goes
    through here, so it is always done under that lock. Made directly only for a row this
    transaction has locked another way (a worker's result stored under a touch of the row,
    core.status_writes.transition_under)."""

    def __init__(self, execution: Execution):
        self.execution = execution

    @classmethod
    def lock(cls, execution: Execution) -> LockedRun:
        """The execution's row read again under its lock, taken by writing to the row
        (`lock_row`): whoever changes a run's node runs takes it, and a worker that stores a
        node's result and asks in the same statement whether any other is still to end
        (node_run's fast path) can tell that someone did while it waited. The workflow
        already read with it is kept. Inside a transaction only."""
        locked = lock_row(Execution, execution.pk)
        if Execution.workflow.is_cached(execution):
            locked.workflow = execution.workflow
        return cls(locked)

    def advance(self, *, completed: NodeRun | None, retryable: bool = True,
                chain: Chain | None = None) -> Claimed | None:
        """Ask the engine what follows `completed` (None: the run starts) and store it.
        `chain`: the worker that stored `completed` may run the next node itself; the node
        run created claimed for it is returned, for it to run once this transaction commits
        (None: nothing for it)."""
        execution = self.execution
        if execution.status != Execution.Status.RUNNING:
            return None
        graph = execution_graph(execution)
        plan, policy = plan_and_policy(execution, graph)
        reads = _Reads(execution)
        step = next_step(plan, policy, reads.progress(),
                         None if completed is None else _outcome(completed, retryable, graph))
        claimed = None
        if step.skipped:  # the failed node is passed over: what follows, follows its skipped run
            assert completed is not None, "only a node run that ended is passed over"
            completed = self.add_node_run(step.skipped, agent_id=completed.agent_id, kind="manual",
                                          attempt=completed.attempt, status=NodeRun.Status.SKIPPED)
            reads.last_sequence = None  # a run was added since
        if step.decision:
            assert completed is not None, "a state machine's transition is taken on a node run's outcome"
            NodeRun.objects.filter(pk=completed.pk).update(decision=step.decision.as_dict())
        if step.action == "start":
            claimed = self.start_nodes(plan, list(step.nodes), graph, last=reads.last_sequence, steps=reads.steps,
                                       chain=chain)
        elif step.action in ("retry", "fallback"):
            self.add_node_run(step.nodes[0], agent_id=step.agent, kind=step.action, attempt=step.attempt,
                              delay=step.delay)
        elif step.action == "escalate":
            assert completed is not None, "a node run that ended is escalated"
            assert graph.settings.escalate_to is not None, "the engine escalates only to the agent the workflow names"
            change_status(execution, Execution.STATES, Execution.Status.ESCALATED, escalation={
                "node_id": completed.node_id, "node_run": completed.pk, "error_code": completed.error_code,
                "error": completed.error, "escalate_to": graph.settings.escalate_to.agent_id,
                "at": timezone.now().isoformat(),
            }, paused_at=timezone.now())
        elif step.action == "end":
            self.end(step.end_status, step.reason)
        if graph.has_gates and step.action in ("start", "wait"):
            self.pause_at_gates()
        return claimed

    def start_nodes(self, plan: Plan, node_ids: list[str], graph: Graph, *, last: int | None = None,
                    steps: int | None = None, chain: Chain | None = None) -> Claimed | None:
        """Start the first attempts of nodes that became ready together, in one INSERT; with
        a `chain` still open, the first that is not a gate is created claimed for that
        worker and returned, for it to run next (see node_run.node_run_execute). A gate
        opens, waiting for a person, and goes to no worker. `last`: the run's last sequence
        number, when it has just been read under the lock; `steps`: the steps it has taken,
        when they were (a state machine's), which number the runs started."""
        execution = self.execution
        now = timezone.now()
        last = _last_sequence(execution) if last is None else last
        pinned = execution.agent_versions
        opened = {}  # the nodes whose runs open without a worker (a gate waits for a person)
        for node_id in node_ids:
            opening = graph.kinds[node_id].opening(execution, graph, graph.nodes[node_id], now)
            if opening is not None:
                opened[node_id] = opening
        # Only a state machine comes back to a node: elsewhere a node's first attempt is its first round.
        rounds = next_rounds(execution, node_ids) if steps is not None else {}
        inline = chain is not None and chain.open()
        first = next((node_id for node_id in node_ids if node_id not in opened), None) if inline else None
        claim = f"{chain.worker}/{uuid.uuid4().hex[:8]}" if chain is not None and first is not None else ""
        runs = insert_rows([
            NodeRun(execution=execution, node_id=node_id, agent_id=plan.agents[node_id],
                    agent_version_id=pinned.get(node_id) or graph.versions.get(plan.agents[node_id]), kind="first",
                    attempt=1, round=rounds.get(node_id, 1), sequence=last + offset,
                    step=None if steps is None else steps + offset,
                    available_at=now, heartbeat_at=now,
                    dispatches=int(node_id not in opened),
                    **(opened.get(node_id) or ({"status": NodeRun.Status.RUNNING, "worker": claim, "started_at": now}
                                              if node_id == first else {"status": NodeRun.Status.PENDING})))
            for offset, node_id in enumerate(node_ids, start=1)
        ])
        dispatch_after_commit(*(run.pk for run in runs if run.node_id != first and run.node_id not in opened))
        if first is None:
            return None
        return Claimed(next(run for run in runs if run.node_id == first), claim)

    def add_node_run(self, node_id: str, *, agent_id: int, kind: str, attempt: int, delay: float = 0,
                     status: str = NodeRun.Status.PENDING) -> NodeRun:
        """Start one node run outside a layer: a retry, the fallback agent's attempt, a node
        run again after an escalation, a skipped node's run, an output a person gave."""
        execution = self.execution
        now = timezone.now()
        sequence = _last_sequence(execution) + 1
        version = (kind != "fallback" and execution.agent_versions.get(node_id)  # pinned by a re-run
                   or AgentVersion.objects.filter(agent_id=agent_id).values_list("pk", flat=True).first())  # latest
        graph = execution_graph(execution)
        latest = next_rounds(execution, [node_id])[node_id] - 1
        round_ = latest + 1 if kind == NodeRun.Kind.FIRST else max(1, latest)  # a retry keeps its round
        opened: dict = {}
        if status == NodeRun.Status.PENDING:  # a gate asked again opens waiting, as it did the first time
            opened = graph.kinds[node_id].opening(execution, graph, graph.nodes[node_id], now) or {}
            status = opened.pop("status", status)
        run = NodeRun.objects.create(
            execution=execution, node_id=node_id, agent_id=agent_id, agent_version_id=version,
            kind=kind, attempt=attempt, round=round_, sequence=sequence, status=status,
            available_at=now + timedelta(seconds=delay), heartbeat_at=now,
            dispatches=int(status == NodeRun.Status.PENDING),
            completed_at=now if status == NodeRun.Status.SKIPPED else None, **opened,
        )
        if status == NodeRun.Status.PENDING:
            dispatch_after_commit(run.pk, delay=delay)
        elif opened:
            self.pause_at_gates()
        return run

    def apply_output(self, run: NodeRun, node=None) -> None:
        """Put a successful node run's output in the run's state, as its node's
        `output_mapping` says."""
        execution = self.execution
        node = node or execution_graph(execution).nodes[run.node_id]
        if not node.output_mapping:
            return
        execution.state = mapped_state(execution.state, node, run.output)
        Execution.objects.filter(pk=execution.pk).update(state=execution.state, updated_at=timezone.now())

    def resume(self, now, **fields) -> None:
        """The run runs again after a pause (escalated, or waiting at gates); `fields` are
        written with its status."""
        execution = self.execution
        change_status(execution, Execution.STATES, Execution.Status.RUNNING, **fields, **_unpaused(execution, now))

    def pause_at_gates(self) -> None:
        """A running run whose only unfinished node runs are gates waits for people: that
        time is not its own."""
        execution = self.execution
        open_ = set(execution.node_runs.filter(status__in=NodeRun.ACTIVE).values_list("status", flat=True))
        if execution.status == Execution.Status.RUNNING and open_ == {NodeRun.Status.WAITING}:
            change_status(execution, Execution.STATES, Execution.Status.WAITING, paused_at=timezone.now())

    def end(self, status: str, reason: str) -> None:
        """End the run: its pending node runs and open gates are cancelled unless it
        succeeded; a run that succeeded or failed is judged."""
        execution = self.execution
        now = timezone.now()
        # An ended run copies nothing more of the node runs a re-run reuses (rerun.rerun_copy).
        change_status(execution, Execution.STATES, status, completed_at=now, ended_reason=bounded(reason),
                      escalation=None, copying=None, **_unpaused(execution, now))
        if status != Execution.Status.SUCCESS:
            transition_all(execution.node_runs, (NodeRun.Status.PENDING, NodeRun.Status.WAITING),
                           NodeRun.Status.CANCELLED, completed_at=now)
            self.cancel_children(status)
        if execution.parent_node_run_id is not None:  # a child run: its parent's node settles (services/subworkflows.py)
            send_after_commit("executions.child_ended", execution.pk)
        if execution.experiment:  # its experiment scores it, and judges it if it asks (experiments/)
            send_after_commit("experiments.run_ended", execution.pk)
        # A cancelled run is not judged, nor is a node tried alone.
        elif status in (Execution.Status.SUCCESS, Execution.Status.FAILED) and not execution.trial:
            evaluate_after_commit(execution.pk)
        # Apps above the run core hear of the end once it is committed (a trigger's callback).
        pk = execution.pk
        transaction.on_commit(lambda: send_run_ended(pk, status))

    def cancel_children(self, status: str) -> None:
        """Cancel the child runs still going of the run's sub-workflow nodes, and theirs in
        turn: the run ended `status` without them. Locked after the run, as a child's lock
        always is."""
        execution = self.execution
        if not execution_graph(execution).runs_workflows:
            return
        going = Execution.objects.filter(parent_node_run__execution=execution).exclude(status__in=ENDED)
        for child in going.select_related("workflow"):
            locked = LockedRun.lock(child)
            if locked.execution.status not in ENDED:
                locked.cancel(f"its parent run {execution.execution_id} ended {status} while it ran")

    def cancel(self, reason: str, *, by: str = "") -> None:
        """Stop the run: its pending node runs and open gates are cancelled, and its running
        ones, whose workers stop their work in flight when their heartbeat finds them
        cancelled (services/node_run.py; woken by the cancel's notice, cancel_notices.py)
        and store nothing. Each says why (`reason`, its `error`, code CANCELLED) and,
        cancelled by a person, who (`error_details`' `cancelled_by`)."""
        now = timezone.now()
        why = {"error": bounded(reason), "error_code": "CANCELLED",
               "error_details": {"cancelled_by": by} if by else None}
        # What a running node run claimed from the run's max_cost ends with it.
        transition_all(self.execution.node_runs, NodeRun.Status.RUNNING, NodeRun.Status.CANCELLED,
                       completed_at=now, cost_reserved=0, **why)
        transition_all(self.execution.node_runs, (NodeRun.Status.PENDING, NodeRun.Status.WAITING),
                       NodeRun.Status.CANCELLED, completed_at=now, **why)
        self.end(Execution.Status.CANCELLED, reason)
        # The workers performing its nodes hear of it at once (else at their next heartbeat).
        transaction.on_commit(partial(cancel_notices.announce, self.execution.pk))


ENDED = (Execution.Status.SUCCESS, Execution.Status.FAILED, Execution.Status.CANCELLED)


def plan_and_policy(execution: Execution, graph: Graph) -> tuple[Plan, Policy]:
    """The plan and policy of the run's version of the workflow; a trial's plan is its one
    node, run once: no retry, no fallback agent, no person to escalate to."""
    if not execution.trial:
        return graph.plan, _policy(graph)
    assert execution.rerun is not None, "a trial is made from a re-run's settings"
    node_id = execution.rerun["from_node"]
    return (Plan("par", [node_id], agents={node_id: graph.plan.agents[node_id]}),
            Policy(max_steps=1, max_wall_seconds=graph.settings.max_wall_seconds))


def _policy(graph: Graph) -> Policy:
    chosen = graph.settings
    return Policy(retry_count=chosen.retry_count, backoff_seconds=settings.NODE_RETRY_BACKOFF_SECONDS,
                  fallback_agent=chosen.fallback_agent and chosen.fallback_agent.pk,
                  escalate_to=chosen.escalate_to and chosen.escalate_to.pk,
                  max_steps=chosen.max_steps, max_wall_seconds=chosen.max_wall_seconds, on_budget=chosen.on_budget)


class _Reads:
    """What advancing a run reads of it, under its execution's lock, for the engine. The
    statuses come with the run's last sequence number (`last_sequence`; None until read),
    so that starting the nodes they make ready reads nothing more: a chain's node costs
    one statement fewer. The steps taken (`steps`; None until read) number the runs that
    the step starts. Nothing here reads more of a run the longer it has gone on."""

    def __init__(self, execution: Execution):
        self.execution = execution
        self.last_sequence: int | None = None
        self.steps: int | None = None

    def progress(self) -> Progress:
        execution = self.execution
        return Progress(elapsed_seconds=run_elapsed(execution, timezone.now()), statuses=self.statuses,
                        any_active=lambda: any_node_run_active(execution), steps_taken=self.steps_taken,
                        state=execution.state, input=execution.input, start=(execution.rerun or {}).get("from_node"))

    def steps_taken(self) -> int:
        """The runs that started a step so far (first attempts, and the steps a re-run
        copied): the `step` of the latest of them, found from the run's last node run
        backwards past the retries of its last round only. Counted, once, where that run
        has no number (written before runs were numbered)."""
        table = connection.ops.quote_name(NodeRun._meta.db_table)
        kinds = sorted(ROUND_STARTS)
        with cursor() as reading:
            reading.execute(f"SELECT step FROM {table} WHERE execution_id = %s AND kind IN "
                            f"({', '.join(['%s'] * len(kinds))}) ORDER BY sequence DESC, id DESC LIMIT 1",
                            [self.execution.pk, *kinds])
            row = reading.fetchone()
        if row is None:
            self.steps = 0
        elif row[0] is not None:
            self.steps = row[0]
        else:
            self.steps = self.execution.node_runs.filter(kind__in=kinds).count()
        return self.steps

    def statuses(self, node_ids) -> dict[str, str]:
        """The status of the latest run of each of `node_ids` that has run. Plain SQL, asked
        after every node run that has nodes after it (see any_node_run_active)."""
        node_ids = list(node_ids)
        if not node_ids:
            return {}
        table = connection.ops.quote_name(NodeRun._meta.db_table)
        with cursor() as reading:
            reading.execute(f"SELECT node_id, status, (SELECT MAX(sequence) FROM {table} WHERE execution_id = %s) "
                            f"FROM {table} WHERE execution_id = %s AND node_id IN "
                            f"({', '.join(['%s'] * len(node_ids))}) ORDER BY sequence, id",
                            [self.execution.pk, self.execution.pk, *node_ids])
            rows = reading.fetchall()
        if rows:
            self.last_sequence = rows[0][2]
        return {node_id: status for node_id, status, _ in rows}  # the latest run of each node wins


def _outcome(run: NodeRun, retryable: bool, graph: Graph) -> Outcome:
    return Outcome(run.node_id, run.status, kind=run.kind, attempt=run.attempt, agent=run.agent_id,
                   retryable=retryable, error_code=run.error_code, error=run.error, output=run.output,
                   gate=graph.kinds[run.node_id].decision(run))


def _unpaused(execution: Execution, now) -> dict:
    """The fields that end a pause (escalated, or waiting at gates): its time is added to the
    run's `paused_seconds`, which its wall time leaves out."""
    paused = (now - execution.paused_at).total_seconds() if execution.paused_at else 0.0
    execution.paused_seconds += paused
    return {"paused_seconds": execution.paused_seconds, "paused_at": None}


def dispatch_after_commit(*node_run_ids: int, delay: float = 0) -> None:
    """Send the node runs to workers once the transaction commits, together (counted in
    `dispatches` by whoever calls this: creation sets 1, the sweep adds one)."""
    if node_run_ids:
        send_all_after_commit("executions.run_node", [(pk,) for pk in node_run_ids], countdown=delay,
                              soft_time_limit=settings.NODE_SOFT_TIME_LIMIT_SECONDS,
                              time_limit=settings.NODE_HARD_TIME_LIMIT_SECONDS)


def mapped_state(state: dict, node, output) -> dict:
    """The run's state once `node`'s `output_mapping` has put `output` in it."""
    state = dict(state)
    for key, path in node.output_mapping.items():
        try:
            state[key] = select_path(output, path)
        except RefError:
            state.pop(key, None)  # the output does not have it: the key is absent, not stale
    return state


def evaluate_after_commit(execution_pk: int) -> None:
    send_after_commit("executions.evaluate", execution_pk)


def any_node_run_active(execution: Execution) -> bool:
    """Whether any node run of the execution is pending, running or a gate waiting. Asked after every
    node run that makes nothing ready, so it is plain SQL: the ORM took longer to build
    this query than the database took to answer it."""
    table = connection.ops.quote_name(NodeRun._meta.db_table)
    with cursor() as reading:
        reading.execute(f"SELECT 1 FROM {table} WHERE execution_id = %s AND status IN "
                        f"({', '.join(['%s'] * len(NodeRun.ACTIVE))}) LIMIT 1", [execution.pk, *NodeRun.ACTIVE])
        return reading.fetchone() is not None


def next_rounds(execution: Execution, node_ids: list[str]) -> dict[str, int]:
    """The round each node's next first attempt opens: one after its latest run's (1: it has
    not run). One read of the index on (execution, node_id, sequence) per node, from its end."""
    runs = NodeRun.objects.filter(execution=execution).order_by("-sequence")
    return {node_id: (runs.filter(node_id=node_id).values_list("round", flat=True).first() or 0) + 1
            for node_id in node_ids}


def _last_sequence(execution: Execution) -> int:
    """The sequence number of the execution's latest node run (0: none yet)."""
    table = connection.ops.quote_name(NodeRun._meta.db_table)
    with cursor() as reading:
        reading.execute(f"SELECT MAX(sequence) FROM {table} WHERE execution_id = %s", [execution.pk])
        return reading.fetchone()[0] or 0


def run_elapsed(execution: Execution, now) -> float:
    """The run's own time: since it started, less the time it waited for people."""
    return (now - execution.started_at).total_seconds() - execution.paused_seconds if execution.started_at else 0.0


def wall_time_end(execution: Execution, now) -> Step | None:
    """The end of a run past its wall time (asked before a node starts work, and by the sweep)."""
    return wall_time_exceeded(_policy(execution_graph(execution)), run_elapsed(execution, now))
