import pytest

from agents.models import Agent, DeriveRequest
from core.errors import IllegalTransition
from core.state_machine import Guard, StateMachine
from executions.models import Execution, NodeRun


@pytest.mark.parametrize(
    "machine,current,new,allowed",
    [
        (Execution.STATES, "pending", "running", True),
        (Execution.STATES, "running", "escalated", True),
        (Execution.STATES, "escalated", "running", True),
        (Execution.STATES, "success", "running", False),
        (Execution.STATES, "pending", "success", False),
        (NodeRun.STATES, "running", "pending", True),
        (NodeRun.STATES, "success", "failed", False),
        (NodeRun.STATES, "pending", "success", False),
        (NodeRun.STATES, "pending", "skipped", False),  # a skipped run is created skipped
        (DeriveRequest.STATES, "pending", "approved", True),
        (DeriveRequest.STATES, "approved", "approved", False),
        (DeriveRequest.STATES, "rejected", "approved", False),
        (Agent.STATES, "deprecated", "inactive", False),
    ],
)
def test_it_allows_exactly_the_transitions_of_each_machine(machine, current, new, allowed):
    if allowed:
        machine.check(current, new)
    else:
        with pytest.raises(IllegalTransition, match=f"cannot go from '{current}' to '{new}'"):
            machine.check(current, new)


def test_it_refuses_unknown_statuses():
    with pytest.raises(IllegalTransition, match="unknown status 'done'"):
        Execution.STATES.check("running", "done")


def test_it_names_the_guard_of_a_move_that_enters_or_leaves_its_statuses_only():
    machine = StateMachine("m", {"a": {"b", "c"}, "b": {"a", "c"}, "c": set()},
                           guard=Guard("parent", frozenset({"a", "b"})))
    assert machine.guarded(("a",), "b") is None  # still among them
    assert machine.guarded(("a", "b"), "c") == Guard("parent", frozenset({"a", "b"}))
    assert StateMachine("m", {"a": {"c"}}).guarded(("a",), "c") is None  # no guard
    # A node run that stops being one still to end writes its execution; a claim does not.
    assert NodeRun.STATES.guarded(("running",), "success").key == "execution"
    assert NodeRun.STATES.guarded(("waiting",), "failed").key == "execution"
    assert NodeRun.STATES.guarded(("pending",), "running") is None
    assert set(NodeRun.STATES.guard.statuses) == set(NodeRun.ACTIVE)
