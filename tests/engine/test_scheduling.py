"""Which node runs next, per topology."""
import pytest

from engine.conditions import evaluate_condition
from engine.scheduling import Plan, unhonoured


def test_it_runs_a_sequence_one_node_after_another():
    plan = Plan("seq", ["a", "b", "c"])
    assert plan.ready({}) == ["a"]
    assert plan.ready({"a": "running"}) == []
    assert plan.ready({"a": "success"}) == ["b"]
    assert plan.finished({"a": "success", "b": "success", "c": "skipped"})


def test_it_starts_every_par_node_at_once():
    assert Plan("par", ["a", "b", "c"]).ready({}) == ["a", "b", "c"]


def test_it_dispatches_every_dag_node_whose_dependencies_are_done():
    plan = Plan("dag", ["a", "b", "c", "d"], [("a", "d"), ("b", "d"), ("c", "d")])
    assert plan.ready({}) == ["a", "b", "c"]
    assert plan.ready({"a": "success", "b": "success", "c": "running"}) == []
    assert plan.ready({"a": "success", "b": "success", "c": "skipped"}) == ["d"]
    assert plan.ready({"a": "failed", "b": "success", "c": "success"}) == []
    assert not plan.finished({"a": "success", "b": "success", "c": "success"})


TRANSITIONS = [
    {"from": "draft", "to": "review"},
    {"from": "review", "to": "draft", "condition": "output.verdict == 'revise' and state.rounds < 3"},
    {"from": "review", "to": "publish", "condition": "output.verdict == 'accept' or state.rounds >= 3"},
    {"from": "publish", "to": "compliance", "on_failure": "abort"},
    {"from": "compliance", "to": "publish", "on_success": "end"},
]


def decide(node, output, state):
    plan = Plan("state_machine", ["draft", "review", "publish", "compliance"], transitions=TRANSITIONS)
    return plan.next_state(node, evaluate=evaluate_condition, output=output, state=state, input={})


def test_it_chooses_the_next_state_by_the_first_condition_that_holds():
    back = decide("review", {"verdict": "revise"}, {"rounds": 1})
    assert (back.action, back.node_id, back.transition, back.condition_value) == ("node", "draft", 1, True)
    forward = decide("review", {"verdict": "revise"}, {"rounds": 3})
    assert (forward.node_id, [e[2] for e in forward.evaluated]) == ("publish", [False, True])
    assert decide("draft", {}, {}).node_id == "review"


def test_it_ends_on_end_or_when_no_transition_holds():
    assert decide("compliance", {}, {}).action == "end"
    plan = Plan("state_machine", ["a", "b"], transitions=[{"from": "a", "to": "b", "condition": "output.ok"}])
    stop = plan.next_state("a", evaluate=evaluate_condition, output={"ok": False}, state={}, input={})
    assert stop.action == "end" and stop.as_dict()["evaluated"] == [{"transition": 0, "condition": "output.ok",
                                                                      "value": False}]


def test_it_says_which_node_ended_a_state_machine_and_why():
    plan = Plan("state_machine", ["a", "b"], transitions=[
        {"from": "a", "to": "b", "condition": "output.ok"},
        {"from": "a", "to": "a", "condition": "state.rounds < input.max_rounds"}])
    stop = plan.next_state("a", evaluate=evaluate_condition, output={"ok": False}, state={"rounds": 1}, input={})
    assert stop.action == "end"
    assert stop.reason == ("node 'a' ended the run: no transition matched (#0, #1 were false); the conditions "
                           "read fields that are not there: input.max_rounds")
    assert stop.as_dict()["evaluated"][1] == {"transition": 1, "condition": "state.rounds < input.max_rounds",
                                              "value": False, "missing": ["input.max_rounds"]}
    assert stop.as_dict()["reason"] == stop.reason
    last = plan.next_state("b", evaluate=evaluate_condition, output={}, state={}, input={})
    assert last.reason == "node 'b' ended the run: it has no outgoing transition"
    assert decide("compliance", {}, {}).reason == "node 'compliance' ended the run: transition #4 says on_success end"


def test_it_reads_the_failure_action_of_a_node():
    plan = Plan("state_machine", ["draft", "review", "publish"], transitions=TRANSITIONS)
    assert (plan.failure_action("publish"), plan.failure_action("draft")) == ("abort", "escalate")


CHOOSING = {"from": "a", "to": "b", "condition": "output.ok", "on_success": "c", "on_failure": "c"}


@pytest.mark.parametrize("topology", ["seq", "dag", "par"])
def test_it_names_every_field_that_chooses_the_next_node_outside_a_state_machine(topology):
    found = unhonoured(topology, CHOOSING)
    assert [field for field, _ in found] == ["condition", "on_success", "on_failure"]
    condition, on_success, on_failure = (why for _, why in found)
    assert condition.startswith("a condition chooses the next node only in a state_machine; ")
    assert condition.endswith("so 'b' would run whatever the condition says")
    assert on_success.startswith("on_success 'c' goes on to the node it names only in a state_machine")
    assert "the failed 'a' is never done" in on_failure and "(use skip, abort or escalate)" in on_failure
    assert unhonoured(topology, {"from": "a", "to": "b", "on_success": "end"})[0][1].startswith(
        "on_success 'end' ends a run early only in a state_machine")


@pytest.mark.parametrize("topology", ["seq", "dag", "par", "state_machine"])
def test_it_honours_the_failure_actions_and_continue_in_every_topology(topology):
    for on_failure in ("escalate", "abort", "skip"):
        transition = {"from": "a", "to": "b", "on_success": "continue", "on_failure": on_failure}
        assert unhonoured(topology, transition) == []
        assert Plan(topology, ["a", "b"], [("a", "b")], [transition]).failure_action("a") == on_failure


def test_it_honours_every_field_in_a_state_machine():
    assert unhonoured("state_machine", CHOOSING) == []
    assert unhonoured("state_machine", {"from": "a", "to": "b", "on_success": "end"}) == []
