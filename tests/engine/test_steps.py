"""What a run does next: `engine.steps.next_step`, by example and by random runs.

The random runs drive the engine the way the Django side does — store each step, finish
node runs in any order with any outcome, let a person take an escalation — with a small
in-memory store, and check what must hold whatever happened."""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.scheduling import DONE, Plan
from engine.steps import Outcome, Policy, Progress, Step, next_step, nothing_follows, wall_time_exceeded


class Store:
    """Node runs in memory, as the executions app keeps them: the latest run of a node counts."""

    def __init__(self):
        self.runs: list[dict] = []
        self.elapsed = 0.0
        self.state: dict = {}

    def add(self, node_id, status="pending", kind="first", attempt=1, agent=None) -> dict:
        run = {"node_id": node_id, "status": status, "kind": kind, "attempt": attempt, "agent": agent}
        self.runs.append(run)
        return run

    def statuses(self, node_ids) -> dict:
        return {run["node_id"]: run["status"] for run in self.runs if run["node_id"] in node_ids}

    def active(self) -> list[dict]:
        return [run for run in self.runs if run["status"] in ("pending", "running")]

    def progress(self) -> Progress:
        return Progress(self.elapsed, self.statuses, lambda: bool(self.active()),
                        lambda: sum(run["kind"] == "first" for run in self.runs), state=self.state, input={})


def outcome(run: dict, **changes) -> Outcome:
    fields = {key: run[key] for key in ("node_id", "status", "kind", "attempt", "agent")}
    return Outcome(**{**fields, **changes})


# -- by example -------------------------------------------------------------------------


def test_a_run_starts_every_node_without_dependencies_at_once():
    plan = Plan("dag", ["a", "b", "c"], [("a", "c"), ("b", "c")], agents={"a": 1, "b": 2, "c": 3})
    assert next_step(plan, Policy(), Store().progress(), None) == Step("start", ("a", "b"))


def test_a_node_whose_dependencies_are_done_starts_and_one_still_running_waits():
    plan = Plan("dag", ["a", "b", "c"], [("a", "c"), ("b", "c")])
    store = Store()
    a, b = store.add("a", "success"), store.add("b", "running")
    assert next_step(plan, Policy(), store.progress(), outcome(a)).action == "wait"
    b["status"] = "success"
    assert next_step(plan, Policy(), store.progress(), outcome(b)) == Step("start", ("c",))


def test_the_last_node_ends_the_run_in_success():
    plan = Plan("seq", ["a", "b"])
    store = Store()
    store.add("a", "success")
    b = store.add("b", "success")
    assert next_step(plan, Policy(), store.progress(), outcome(b)) == Step("end", status="success")


def test_a_failure_is_retried_with_a_doubling_delay_then_the_fallback_then_a_person():
    plan = Plan("seq", ["a"], agents={"a": 7})
    policy = Policy(retry_count=2, backoff_seconds=1.5, fallback_agent=9, escalate_to=4)
    store = Store()
    first = store.add("a", "failed", agent=7)
    assert next_step(plan, policy, store.progress(), outcome(first, error_code="BACKEND_ERROR")) == \
        Step("retry", ("a",), agent=7, attempt=2, delay=1.5)
    second = store.add("a", "failed", kind="retry", attempt=2, agent=7)
    assert next_step(plan, policy, store.progress(), outcome(second)).delay == 3.0
    third = store.add("a", "failed", kind="retry", attempt=3, agent=7)
    assert next_step(plan, policy, store.progress(), outcome(third)) == Step("fallback", ("a",), agent=9, attempt=4)
    fallback = store.add("a", "failed", kind="fallback", attempt=4, agent=9)
    assert next_step(plan, policy, store.progress(), outcome(fallback, error_code="X")) == \
        Step("escalate", ("a",), agent=4, reason="node 'a' failed: X")


def test_a_failure_that_is_not_retryable_goes_to_the_fallback_at_once():
    plan = Plan("seq", ["a"])
    store = Store()
    failed = store.add("a", "failed", agent=7)
    step = next_step(plan, Policy(retry_count=3, fallback_agent=9), store.progress(), outcome(failed, retryable=False))
    assert (step.action, step.agent) == ("fallback", 9)


def test_a_node_stopped_by_a_cost_limit_ends_the_run_or_goes_to_a_person_never_to_another_attempt():
    plan = Plan("seq", ["a"], agents={"a": 7})
    store = Store()
    stopped = store.add("a", "failed", agent=7)
    why = "the next call (up to $0.0012) would take the run past its max_cost $0.0015 (spent $0.0003)"
    budget = outcome(stopped, error_code="BUDGET_EXCEEDED", error=why, retryable=False)
    policy = Policy(retry_count=3, fallback_agent=9, escalate_to=4)
    assert next_step(plan, policy, store.progress(), budget) == Step(
        "end", status="failed", reason=f"BUDGET_EXCEEDED at node 'a': {why}")
    escalating = Policy(retry_count=3, fallback_agent=9, escalate_to=4, on_budget="escalate")
    assert next_step(plan, escalating, store.progress(), budget) == Step(
        "escalate", ("a",), agent=4, reason=f"BUDGET_EXCEEDED at node 'a': {why}")
    long = next_step(plan, policy, store.progress(), outcome(stopped, error_code="BUDGET_EXCEEDED", error="x" * 300))
    assert len(long.reason) == 200 and long.reason.endswith("…")


def test_a_gate_decision_is_never_retried_nor_handed_to_the_fallback_agent():
    plan = Plan("seq", ["a"], agents={"a": 7})
    store = Store()
    rejected = store.add("a", "failed", agent=7)
    decided = outcome(rejected, error_code="GATE_REJECTED", gate={"decision": "reject"})
    assert next_step(plan, Policy(retry_count=3, fallback_agent=9, escalate_to=4), store.progress(), decided) == \
        Step("escalate", ("a",), agent=4, reason="node 'a' failed: GATE_REJECTED")
    assert next_step(plan, Policy(retry_count=3, fallback_agent=9), store.progress(), decided) == \
        Step("end", status="failed", reason="node 'a' failed: GATE_REJECTED")


def test_with_no_one_to_escalate_to_the_run_fails_naming_the_node_and_code():
    store = Store()
    failed = store.add("a", "failed", agent=7)
    step = next_step(Plan("seq", ["a"]), Policy(), store.progress(), outcome(failed, error_code="NODE_TIME_LIMIT"))
    assert step == Step("end", status="failed", reason="node 'a' failed: NODE_TIME_LIMIT")


def test_a_run_that_fails_at_a_node_says_what_the_node_said():
    store = Store()
    failed = store.add("solve", "failed", agent=7)
    why = "the run gives no problem: its input needs `numbers` (e.g. [4, 9, 10, 13]) or `problem` (a text)"
    step = next_step(Plan("seq", ["solve"]), Policy(), store.progress(),
                     outcome(failed, error_code="INVALID_INPUT", error=why, retryable=False))
    assert step == Step("end", status="failed", reason=f"node 'solve' failed: INVALID_INPUT: {why}")
    aborted = next_step(Plan("seq", ["solve"], transitions=[{"from": "solve", "to": "solve", "on_failure": "abort"}]),
                        Policy(), store.progress(), outcome(failed, error_code="E", error="<b>x</b>"))
    assert aborted.reason == "node 'solve' failed (E); on_failure is abort: <b>x</b>"
    long = next_step(Plan("seq", ["solve"]), Policy(), store.progress(), outcome(failed, error_code="E", error="x" * 300))
    assert len(long.reason) == 200 and long.reason.startswith("node 'solve' failed: E: xx") and long.reason.endswith("…")


def test_abort_fails_the_run_at_once_whatever_the_retries():
    plan = Plan("dag", ["a", "b"], [("a", "b")], [{"from": "a", "to": "b", "on_failure": "abort"}])
    store = Store()
    failed = store.add("a", "failed")
    step = next_step(plan, Policy(retry_count=3, escalate_to=4), store.progress(), outcome(failed, error_code="E"))
    assert step == Step("end", status="failed", reason="node 'a' failed (E); on_failure is abort")


def test_skip_passes_over_the_node_and_starts_what_depends_on_it():
    plan = Plan("dag", ["a", "b"], [("a", "b")], [{"from": "a", "to": "b", "on_failure": "skip"}])
    store = Store()
    failed = store.add("a", "failed")
    assert next_step(plan, Policy(), store.progress(), outcome(failed)) == Step("start", ("b",), skipped="a")


def test_a_state_machine_records_the_transition_it_took_with_each_condition():
    transitions = [{"from": "review", "to": "draft", "condition": "output.score < 5"},
                   {"from": "review", "to": "publish", "condition": "output.score >= 5"}]
    plan = Plan("state_machine", ["review", "draft", "publish"], transitions=transitions)
    store = Store()
    review = store.add("review", "success")
    step = next_step(plan, Policy(), store.progress(), outcome(review, output={"score": 8}))
    assert step.nodes == ("publish",)
    assert [(i, value) for i, _, value, _ in step.decision.evaluated] == [(0, False), (1, True)]


def test_a_state_machine_that_loops_stops_at_max_steps():
    plan = Plan("state_machine", ["a"], transitions=[{"from": "a", "to": "a"}])
    store = Store()
    for _ in range(3):
        last = store.add("a", "success")
    step = next_step(plan, Policy(max_steps=3), store.progress(), outcome(last))
    assert step == Step("end", status="failed", reason="max_steps: the run reached its bound of 3 steps")
    assert step.decision.node_id == "a"  # the transition it would have taken is still on the record


def test_a_run_past_its_wall_time_ends_whatever_the_node_did():
    store = Store()
    store.elapsed = 61
    done = store.add("a", "success")
    ended = Step("end", status="failed", reason="max_wall_seconds: the run exceeded its 60 s")
    assert next_step(Plan("seq", ["a", "b"]), Policy(max_wall_seconds=60), store.progress(), outcome(done)) == ended
    assert wall_time_exceeded(Policy(max_wall_seconds=60), 60) is None


def test_it_gives_the_status_an_end_step_ends_with_and_refuses_any_other_step():
    ended = wall_time_exceeded(Policy(max_wall_seconds=60), 61)
    assert ended is not None and ended.end_status == "failed"
    assert Step("end", status="success").end_status == "success"
    for step in (Step("wait"), Step("start", nodes=("a",)), Step("end")):
        with pytest.raises(ValueError, match=f"a '{step.action}' step does not end the run"):
            _ = step.end_status


def test_a_branch_that_finished_while_the_run_waited_for_a_person_goes_on_after_it():
    # a → c and b → d; b failed and waited for a person while a finished (its success
    # stored, nothing advanced) and c's run was cancelled by the worker that took it.
    plan = Plan("dag", ["a", "b", "c", "d"], [("a", "c"), ("b", "d")])
    store = Store()
    store.add("a", "success")
    store.add("b", "failed")
    store.add("c", "cancelled")
    resumed = store.add("b", "success", kind="manual")
    assert next_step(plan, Policy(), store.progress(), outcome(resumed)) == Step("start", ("d",))
    store.add("d", "running")
    assert next_step(plan, Policy(), store.progress(), outcome(resumed)).action == "wait"
    store.runs[-1]["status"] = "success"
    assert next_step(plan, Policy(), store.progress(), outcome(store.runs[-1])) == Step("start", ("c",))


def test_a_run_with_nothing_left_that_can_run_fails_saying_why_instead_of_hanging():
    plan = Plan("dag", ["a", "b", "c"], [("b", "c")])
    store = Store()
    store.add("b", "failed")  # stored while the run waited for a person: its failure was never handled
    done = store.add("a", "success")
    step = next_step(plan, Policy(), store.progress(), outcome(done))
    assert step == Step("end", status="failed",
                        reason="no node can run and the run is not finished: 'b' is failed, 'c' is waiting")


# -- random runs: seq, par, dag ----------------------------------------------------------

FAILURE_ACTIONS = [None, "escalate", "abort", "skip"]


@st.composite
def graphs(draw):
    topology = draw(st.sampled_from(["seq", "par", "dag"]))
    nodes = [f"n{i}" for i in range(draw(st.integers(1, 6)))]
    edges = []
    if topology == "dag":
        pairs = [(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:]]
        edges = draw(st.lists(st.sampled_from(pairs), unique=True)) if pairs else []
    transitions = [{"from": node, "to": node, "on_failure": action}
                   for node in nodes if (action := draw(st.sampled_from(FAILURE_ACTIONS)))]
    plan = Plan(topology, nodes, edges, transitions, agents={node: index for index, node in enumerate(nodes)})
    policy = Policy(retry_count=draw(st.integers(0, 2)), backoff_seconds=1,
                    fallback_agent=draw(st.sampled_from([None, 99])), escalate_to=draw(st.sampled_from([None, 42])))
    return plan, policy


@dataclass
class Driver:
    """Stores each step as the executions app does and checks it on the way."""

    plan: Plan
    policy: Policy
    store: Store = field(default_factory=Store)
    status: str = "running"
    reason: str = ""
    steps: int = 0

    def apply(self, step: Step, after: dict | None) -> None:
        self.steps += 1
        assert self.steps < 500, "the run does not end"
        if step.skipped:
            assert after["status"] == "failed" and self.plan.failure_action(step.skipped) == "skip"
            self.store.add(step.skipped, "skipped", kind="manual", attempt=after["attempt"])
        if step.action == "start":
            statuses = self.store.statuses(self.plan.nodes)
            for node_id in step.nodes:
                assert statuses.get(node_id) in (None, "cancelled"), f"{node_id} started twice"
                assert all(statuses.get(dep) in DONE for dep in self.plan.dependencies(node_id)), \
                    f"{node_id} started before its dependencies were done"
                self.store.add(node_id, agent=self.plan.agents[node_id])
        elif step.action in ("retry", "fallback"):
            assert after["status"] == "failed" and self.plan.failure_action(after["node_id"]) == "escalate"
            if step.action == "retry":
                assert step.attempt <= self.policy.retry_count + 1
                assert step.delay == self.policy.backoff_seconds * 2 ** (step.attempt - 2)
            else:
                assert step.agent == self.policy.fallback_agent and after["kind"] != "fallback"
            self.store.add(step.nodes[0], kind=step.action, attempt=step.attempt, agent=step.agent)
        elif step.action == "escalate":
            assert step.agent == self.policy.escalate_to
            self.status = "escalated"
        elif step.action == "end":
            assert step.status == "failed" or self.plan.finished(self.store.statuses(self.plan.nodes))
            assert step.status == "success" or step.reason
            if step.reason.startswith("no node can run"):  # only a failure stored while a person had the run
                assert "failed" in self.store.statuses(self.plan.nodes).values()
            self.status, self.reason = step.status, step.reason
        else:
            assert step.action == "wait" and self.store.active(), "waiting with nothing running"


@settings(max_examples=300, deadline=None)
@given(graphs(), st.data())
def test_every_random_run_ends_and_its_end_is_true(graph, data):
    plan, policy = graph
    driver = Driver(plan, policy)
    driver.apply(next_step(plan, policy, driver.store.progress(), None), None)
    while driver.status in ("running", "escalated"):
        if driver.status == "escalated":
            escalated = next(run for run in reversed(driver.store.runs) if run["status"] == "failed")
            # Workers go on meanwhile: a running node's result is stored (nothing advances),
            # a pending one is cancelled by the worker that takes it.
            for run in driver.store.active():
                run["status"] = data.draw(st.sampled_from(["success", "failed"])) if run["status"] == "running" \
                    else "cancelled"
            if data.draw(st.booleans(), label="the person aborts"):
                driver.status = "failed"
                break
            driver.status = "running"
            resumed = driver.store.add(escalated["node_id"], "success", kind="manual")
            driver.apply(next_step(plan, policy, driver.store.progress(), outcome(resumed)), resumed)
            continue
        active = driver.store.active()
        assert active, "the run is running with nothing to run and no end"
        run = data.draw(st.sampled_from(active), label="the node run that finishes next")
        if run["status"] == "pending" and data.draw(st.booleans(), label="it only starts"):
            run["status"] = "running"
            continue
        run["status"] = data.draw(st.sampled_from(["success", "failed"]), label="its outcome")
        retryable = data.draw(st.booleans(), label="retryable")
        driver.apply(next_step(plan, policy, driver.store.progress(), outcome(run, retryable=retryable)), run)
    statuses = driver.store.statuses(plan.nodes)
    if driver.status == "success":
        assert plan.finished(statuses)
    if plan.topology == "seq":
        firsts = [run["node_id"] for run in driver.store.runs if run["kind"] == "first"]
        assert firsts == plan.nodes[:len(firsts)], "a seq starts its nodes in order"


# -- random runs: state machines ---------------------------------------------------------


@st.composite
def machines(draw):
    nodes = [f"s{i}" for i in range(draw(st.integers(1, 5)))]
    transitions = []
    for node in nodes:
        for _ in range(draw(st.integers(0, 3))):
            threshold = draw(st.integers(0, 9))
            transitions.append({"from": node, "to": draw(st.sampled_from(nodes)),
                                "condition": draw(st.sampled_from(["", f"output.n > {threshold}"])),
                                "on_success": draw(st.sampled_from(["continue", "continue", "end"]))})
    return Plan("state_machine", nodes, transitions=transitions), draw(st.integers(1, 12))


def expected_transition(plan: Plan, node_id: str, n: int) -> dict | None:
    """The first outgoing transition whose condition holds, worked out here without the
    condition language."""
    for transition in plan.transitions:
        if transition["from"] == node_id:
            condition = transition["condition"]
            if not condition or n > int(condition.rsplit(" ", 1)[1]):
                return transition
    return None


@settings(max_examples=300, deadline=None)
@given(machines(), st.data())
def test_a_state_machine_follows_the_first_transition_that_holds_and_stops_at_max_steps(machine, data):
    plan, max_steps = machine
    store = Store()
    step = next_step(plan, Policy(max_steps=max_steps), store.progress(), None)
    assert step == Step("start", (plan.start,))
    while step.action == "start":
        (node_id,) = step.nodes
        n = data.draw(st.integers(0, 10), label=f"{node_id}'s output")
        run = store.add(node_id, "success")
        step = next_step(plan, Policy(max_steps=max_steps), store.progress(), outcome(run, output={"n": n}))
        expected = expected_transition(plan, node_id, n)
        if expected is None:
            assert (step.action, step.status, step.decision.transition) == ("end", "success", None)
            assert step.reason.startswith(f"node '{node_id}' ended the run: ")
            break
        assert plan.transitions[step.decision.transition] is expected
        values = [value for _, _, value, _ in step.decision.evaluated]
        assert values[-1] is True and not any(values[:-1])
        if expected["on_success"] == "end":
            assert step == Step("end", status="success", reason=f"node '{node_id}' ended the run: transition "
                                                                f"#{step.decision.transition} says on_success end")
        elif len(store.runs) >= max_steps:
            assert step.reason == f"max_steps: the run reached its bound of {max_steps} steps"
        else:
            assert step.nodes == (expected["to"],)
    assert len(store.runs) <= max_steps


@pytest.mark.parametrize("topology", ["seq", "par", "dag", "state_machine"])
def test_on_failure_means_the_same_in_every_topology(topology):
    for action, expected in [("abort", "end"), ("escalate", "escalate"), ("skip", None)]:
        plan = Plan(topology, ["a", "b"], [("a", "b")] if topology == "dag" else [],
                    [{"from": "a", "to": "b", "on_failure": action}])
        store = Store()
        failed = store.add("a", "failed")
        step = next_step(plan, Policy(escalate_to=1), store.progress(), outcome(failed))
        if action == "skip":
            assert step.skipped == "a" and step.action in ("start", "wait", "end")
        else:
            assert step.action == expected


def test_only_a_node_with_no_successors_outside_a_state_machine_makes_nothing_ready():
    dag = Plan("dag", ["a", "b", "c"], [("a", "c")])
    assert [nothing_follows(dag, node_id) for node_id in "abc"] == [False, True, True]
    assert [nothing_follows(Plan("seq", ["a", "b"]), node_id) for node_id in "ab"] == [False, True]
    assert nothing_follows(Plan("par", ["a", "b"]), "a")
    machine = Plan("state_machine", ["a", "b"], [{"from": "a", "to": "b"}])
    assert not nothing_follows(machine, "b")  # where a state machine goes is its transitions' to say
    # What nothing_follows promises: after such a success, the step is to wait while a run is active.
    store = Store()
    store.add("a", "success"), store.add("b", "running"), store.add("c", "success")
    assert next_step(dag, Policy(), store.progress(), Outcome("c", "success")).action == "wait"
