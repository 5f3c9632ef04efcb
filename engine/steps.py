"""What a run does next: one pure function, `next_step`, for all four topologies.

It is asked when a run starts, and every time a node run is stored (a success, a failure,
a person's output for an escalated node). It answers with one `Step`: the nodes whose
first attempt starts now, a retry with its delay, the fallback agent's attempt, an
escalation to a person, the end of the run with its status and reason, or nothing yet
(`wait`: other nodes are still running). A failed node passed over (`on_failure: skip`)
and a state machine's transition, with every condition's value, come with the step.

The Django side (`executions.services.run`, `LockedRun.advance`) reads the run into a `Progress`, asks,
and stores what the step says; it decides nothing itself. Reads that cost a query are
callables in `Progress`, asked only when the answer needs them: after a node of a wide
DAG only that node's successors are read.
"""
from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from typing import Any

from engine.conditions import evaluate_condition
from engine.gates import TIMED_OUT
from engine.scheduling import DONE, Decision, Plan

BUDGET_EXCEEDED = "BUDGET_EXCEEDED"  # a call that could cross a cost limit was not made (agents/backends/metering.py)
REASON_LIMIT = 200  # characters of the reason a run ended (Execution.ended_reason)


@dataclass(frozen=True)
class Policy:
    """A workflow's limits and what it does when a node fails (core-data-structures §4.1)."""

    retry_count: int = 0
    backoff_seconds: float = 1.0  # the first retry's delay; it doubles with each attempt
    fallback_agent: Any = None  # the agent that makes one more attempt after the retries
    escalate_to: Any = None  # who takes a node that still failed; none: the run fails
    max_steps: int = 50  # a state machine's bound on the nodes it starts (it may loop)
    max_wall_seconds: float = 3600
    on_budget: str = "fail"  # a node stopped by a cost limit fails the run, or escalates to a person


@dataclass(frozen=True)
class Outcome:
    """The node run just stored: how it ended, and what the next step reads of it."""

    node_id: str
    status: str  # success | failed | skipped
    kind: str = "first"  # first | retry | fallback | manual
    attempt: int = 1
    agent: Any = None
    retryable: bool = True
    error_code: str = ""
    error: str = ""
    output: Any = None
    gate: dict[str, Any] | None = None  # a gate's decision (engine/gates.py): never retried, never the fallback agent's


@dataclass(frozen=True)
class Progress:
    """What the engine reads of a run besides the outcome."""

    elapsed_seconds: float
    statuses: Callable[[Collection[str]], dict[str, str]]  # node ids → the latest status of each started one
    any_active: Callable[[], bool]  # is any node run pending or running
    steps_taken: Callable[[], int]  # first attempts started so far, and the steps a re-run reused
    state: Any = None
    input: Any = None
    evaluate: Callable[..., bool] = evaluate_condition
    start: str | None = None  # a state machine re-run from a step of its path starts there (engine.replay)


@dataclass(frozen=True)
class Step:
    """What happens next. `action` is one of:

    - `start`: the first attempts of `nodes` start now (together: they run in parallel);
    - `retry` / `fallback`: `nodes[0]` runs again, by `agent`, as `attempt`, after `delay` s;
    - `escalate`: the run waits for a person to take `nodes[0]` (`agent` is who);
    - `end`: the run ends with `status` (success | failed) for `reason`;
    - `wait`: nothing yet: other node runs are still pending or running.
    """

    action: str
    nodes: tuple[str, ...] = ()
    agent: Any = None
    attempt: int = 1
    delay: float = 0.0
    status: str | None = None
    reason: str = ""
    skipped: str | None = None  # a failed node passed over (on_failure skip) before this step
    # A state machine's transition taken, with every condition's value: why, not what, so
    # two steps that do the same thing are equal whatever led to them.
    decision: Decision | None = field(default=None, compare=False)

    @property
    def end_status(self) -> str:
        """The status an `end` step ends the run with; any other step ends nothing."""
        if self.action != "end" or self.status is None:
            raise ValueError(f"a '{self.action}' step does not end the run")
        return self.status


WAIT = Step("wait")


def wall_time_exceeded(policy: Policy, elapsed_seconds: float) -> Step | None:
    """The end of a run past its wall time, or None. Also asked before a node starts work."""
    if elapsed_seconds > policy.max_wall_seconds:
        return _failed(f"max_wall_seconds: the run exceeded its {policy.max_wall_seconds:g} s")
    return None


def next_step(plan: Plan, policy: Policy, progress: Progress, outcome: Outcome | None) -> Step:
    """What happens after `outcome` (None: the run starts)."""
    ended = wall_time_exceeded(policy, progress.elapsed_seconds)
    if ended:
        return ended
    if outcome is not None and outcome.status == "failed":
        return _after_failure(plan, policy, progress, outcome)
    return _after_success(plan, policy, progress, outcome)


def _after_failure(plan: Plan, policy: Policy, progress: Progress, outcome: Outcome) -> Step:
    """The node's `on_failure`: escalate (the default) means retries with a doubling delay up
    to `retry_count`, then one attempt by the fallback agent, then a person (the run fails
    when there is no `escalate_to`); abort fails the run; skip passes over the node and goes
    on as if it were done; a node id goes there (state machines). A gate's rejection goes
    straight to the person; its time-out with on_timeout escalate, whatever on_failure says.
    A node stopped by a cost limit ends the run (BUDGET_EXCEEDED, with the figures), or
    escalates when the workflow's on_budget says so."""
    node_id, action = outcome.node_id, plan.failure_action(outcome.node_id)
    if outcome.error_code == BUDGET_EXCEEDED:  # another attempt, or another agent, would spend more
        reason = bounded(f"BUDGET_EXCEEDED at node '{node_id}': {outcome.error}")
        if policy.on_budget == "escalate" and policy.escalate_to is not None:
            return Step("escalate", (node_id,), agent=policy.escalate_to, reason=reason)
        return _failed(reason)
    if outcome.error_code == TIMED_OUT:  # a gate nobody decided, on_timeout escalate: to a person, always
        action = "escalate"
    if action == "abort":
        return _failed(f"node '{node_id}' failed ({outcome.error_code}); on_failure is abort"
                       + (f": {outcome.error}" if outcome.error else ""))
    if action == "skip":
        skipped = replace(outcome, status="skipped", output=None)
        return replace(_after_success(plan, policy, _with_status(progress, node_id, "skipped"), skipped),
                       skipped=node_id)
    if action != "escalate":
        return _start_state(plan, policy, progress, action)
    decided = outcome.gate is not None  # asking again, or asking an agent, would not change a person's decision
    if (not decided and outcome.retryable and outcome.kind in ("first", "retry")
            and outcome.attempt <= policy.retry_count):
        return Step("retry", (node_id,), agent=outcome.agent, attempt=outcome.attempt + 1,
                    delay=policy.backoff_seconds * 2 ** (outcome.attempt - 1))
    if (not decided and outcome.kind != "fallback" and policy.fallback_agent is not None
            and policy.fallback_agent != outcome.agent):
        return Step("fallback", (node_id,), agent=policy.fallback_agent, attempt=outcome.attempt + 1)
    if policy.escalate_to is not None:
        return Step("escalate", (node_id,), agent=policy.escalate_to, reason=node_failed(outcome))
    return _failed(node_failed(outcome))


def node_failed(outcome: Outcome) -> str:
    """Why a run stopped at a failed node: the node, the code and the node's own message,
    which says what to do about it (the code alone rarely does)."""
    reason = f"node '{outcome.node_id}' failed: {outcome.error_code}"
    return bounded(f"{reason}: {outcome.error}" if outcome.error else reason)


def bounded(reason: str) -> str:
    """A reason as long as a run keeps one; the node run keeps the whole text."""
    return reason if len(reason) <= REASON_LIMIT else reason[:REASON_LIMIT - 1] + "…"


def nothing_follows(plan: Plan, node_id: str) -> bool:
    """Whether a success of `node_id` can make no node ready: then, within the run's wall
    time, the step after it is `wait` while any other node run is active, and only once
    none is does it need more of the run (`next_step` reads the rest then)."""
    return plan.topology != "state_machine" and not plan.successors(node_id)


def _after_success(plan: Plan, policy: Policy, progress: Progress, outcome: Outcome | None) -> Step:
    if plan.topology == "state_machine":
        if outcome is None:
            return _start_state(plan, policy, progress, progress.start or plan.start)
        decision = plan.next_state(outcome.node_id, evaluate=progress.evaluate, output=outcome.output,
                                   state=progress.state, input=progress.input, gate=outcome.gate)
        if decision.action == "end":
            step = Step("end", status="success", reason=bounded(decision.reason))
        else:
            assert decision.node_id is not None, "a decision to go on names the node it goes to"
            step = _start_state(plan, policy, progress, decision.node_id)
        return replace(step, decision=decision)
    # Only the finished node's successors can have become ready: read the statuses of those
    # and of their dependencies, not of the whole run.
    candidates = plan.nodes if outcome is None else plan.successors(outcome.node_id)
    relevant = set(candidates) | {dep for node_id in candidates for dep in plan.dependencies(node_id)}
    ready = plan.ready(progress.statuses(relevant) if relevant else {}, candidates)
    if ready:
        return Step("start", tuple(ready))
    if progress.any_active():
        return WAIT
    # Nothing is running: the run is finished, or a node became ready while the run was not
    # running (a branch that finished while another waited for a person), or it is stuck.
    statuses = progress.statuses(plan.nodes)
    if plan.finished(statuses):
        return Step("end", status="success")
    ready = plan.ready(statuses)
    if ready:
        return Step("start", tuple(ready))
    blocked = [node_id for node_id in plan.nodes if statuses.get(node_id) not in DONE]
    return _failed("no node can run and the run is not finished: "
                   + ", ".join(f"'{node_id}' is {statuses.get(node_id, 'waiting')}" for node_id in blocked))


def _start_state(plan: Plan, policy: Policy, progress: Progress, node_id: str) -> Step:
    """Start a state machine's next node. It may loop, so it starts at most `max_steps`."""
    if progress.steps_taken() >= policy.max_steps:
        return _failed(f"max_steps: the run reached its bound of {policy.max_steps} steps")
    return Step("start", (node_id,))


def _with_status(progress: Progress, node_id: str, status: str) -> Progress:
    """`progress` as it reads once `node_id`'s latest run has `status`."""
    read = progress.statuses

    def statuses(node_ids: Collection[str]) -> dict[str, str]:
        found = read(node_ids)
        return {**found, node_id: status} if node_id in node_ids else found

    return replace(progress, statuses=statuses)


def _failed(reason: str) -> Step:
    return Step("end", status="failed", reason=bounded(reason))
