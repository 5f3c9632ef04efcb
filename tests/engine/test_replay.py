"""engine.replay: which node runs a re-run reuses, and how a workflow's shape changed."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.replay import PastRun, RerunRefused, descendants, recorded_path, shape_changes, split
from engine.scheduling import Plan
from engine.steps import Policy, Progress, next_step

DIAMOND = Plan("dag", ["a", "b", "c", "d"], [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])


def ran(*specs: str) -> list[PastRun]:
    """'node:status:kind' (status and kind default to success and first)."""
    runs = []
    for spec in specs:
        node_id, status, kind = (spec.split(":") + ["success", "first"])[:3]
        runs.append(PastRun(node_id, status, kind, key=len(runs)))
    return runs


def test_a_dag_rerun_from_a_branch_reuses_every_node_that_does_not_follow_it():
    cut = split(DIAMOND, ran("a", "b", "c", "d"), "b")
    assert [run.node_id for run in cut.reused] == ["a", "c"]
    assert cut.start == "b" and cut.runs == {"b", "d"} and cut.step is None


def test_a_seq_rerun_reuses_what_came_before_and_a_par_everything_else():
    chain = Plan("seq", ["x", "y", "z"])
    assert [r.node_id for r in split(chain, ran("x", "y", "z"), "y").reused] == ["x"]
    fan = Plan("par", ["x", "y", "z"])
    assert [r.node_id for r in split(fan, ran("x", "y", "z"), "y").reused] == ["x", "z"]


def test_a_node_to_reuse_that_did_not_succeed_is_named():
    with pytest.raises(RerunRefused, match="node 'c', whose output a re-run from 'b' reuses, ended failed"):
        split(DIAMOND, ran("a", "b", "c:failed", "d:cancelled"), "b")
    with pytest.raises(RerunRefused, match="node 'c', whose output a re-run from 'd' reuses, never ran"):
        split(DIAMOND, ran("a", "b"), "d")
    # Its latest run counts: a failure retried to success is reused.
    assert [r.key for r in split(DIAMOND, ran("a", "c:failed", "c:success:retry", "b"), "d").reused] == [0, 2, 3]


def test_a_skipped_node_is_reused_as_skipped():
    cut = split(DIAMOND, ran("a", "b:failed", "b:skipped:manual", "c", "d"), "d")
    assert [(r.node_id, r.status) for r in cut.reused] == [("a", "success"), ("b", "skipped"), ("c", "success")]


def test_a_state_machine_path_has_one_step_per_round_ending_with_the_run_that_decided_it():
    runs = ran("draft", "review", "draft", "review", "publish:failed", "publish:failed:retry",
               "publish:success:fallback")
    assert [(r.node_id, r.kind) for r in recorded_path(runs)] == [
        ("draft", "first"), ("review", "first"), ("draft", "first"), ("review", "first"), ("publish", "fallback")]


def test_a_state_machine_rerun_starts_at_a_step_and_reuses_the_steps_before_it():
    plan = Plan("state_machine", ["draft", "review", "publish"])
    runs = ran("draft", "review", "draft", "review", "publish")
    last = split(plan, runs, "review")
    assert last.step == 4 and [r.key for r in last.reused] == [0, 1, 2]
    first = split(plan, runs, "review", step=2)
    assert first.step == 2 and [r.key for r in first.reused] == [0]
    with pytest.raises(RerunRefused, match=r"step 3 of the past run's path \(draft → review → draft → review → "
                                           r"publish\) is 'draft', not 'review'") as refused:
        split(plan, runs, "review", step=3)
    assert refused.value.where == "step"
    with pytest.raises(RerunRefused, match="step 9 .* does not exist"):
        split(plan, runs, "review", step=9)
    with pytest.raises(RerunRefused, match="node 'publish' is not on the past run's path"):
        split(plan, ran("draft", "review"), "publish")


def test_a_failed_step_before_the_start_is_not_reused():
    plan = Plan("state_machine", ["a", "b", "c"])
    cut = split(plan, ran("a:failed", "b", "c"), "c")
    assert [r.node_id for r in cut.reused] == ["b"]


def test_a_node_not_in_the_workflow_or_a_step_outside_a_state_machine_is_refused():
    with pytest.raises(RerunRefused, match=r"node 'q' is not in the workflow \(its nodes: a, b, c, d\)"):
        split(DIAMOND, ran("a"), "q")
    with pytest.raises(RerunRefused, match="`step` chooses a step of a state machine") as refused:
        split(DIAMOND, ran("a", "b", "c", "d"), "b", step=1)
    assert refused.value.where == "step"


SHAPE = {"topology": "dag", "transitions": [{"from": "a", "to": "b", "condition": None, "on_success": None,
                                              "on_failure": None}],
         "nodes": {"a": {"agent": "A", "input_mapping": {"x": "$.input.x"}, "depends_on": []},
                   "b": {"agent": "B", "input_mapping": {"y": "$.nodes.a"}, "depends_on": ["a"]}}}


def test_an_unchanged_shape_has_no_changes_even_with_other_agents():
    other_agent = {**SHAPE, "nodes": {**SHAPE["nodes"], "b": {**SHAPE["nodes"]["b"], "agent": "C"}}}
    assert shape_changes(SHAPE, SHAPE) == [] and shape_changes(SHAPE, other_agent) == []


def test_each_change_of_shape_is_named():
    changed = {
        "topology": "dag",
        "transitions": [{"from": "a", "to": "b", "condition": None, "on_success": None, "on_failure": "skip"}],
        "nodes": {"a": {"agent": "A", "input_mapping": {"x": "$.input.z"}, "depends_on": []},
                  "b": {"agent": "B", "input_mapping": {"y": "$.nodes.a"}, "depends_on": ["a", "c"]},
                  "c": {"agent": "C", "input_mapping": {}, "depends_on": []}},
    }
    assert shape_changes(SHAPE, changed) == [
        "node 'c' was added",
        "node 'a' reads its inputs differently now: input_mapping 'x' changed",
        "node 'b' depended on 'a', it depends on 'a', 'c' now",
        "transition 0 was 'a' → 'b', it is 'a' → 'b' (on_failure 'skip') now",
    ]
    assert shape_changes(changed, SHAPE)[0] == "node 'c' was removed"
    assert shape_changes(SHAPE, {**SHAPE, "topology": "seq"}) == ["its topology was dag, it is seq now"]


@st.composite
def dags(draw):
    nodes = [f"n{i}" for i in range(draw(st.integers(1, 7)))]
    pairs = [(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:]]
    edges = draw(st.lists(st.sampled_from(pairs), unique=True)) if pairs else []
    return Plan(draw(st.sampled_from(["seq", "par", "dag"])), nodes, edges)


@settings(max_examples=300, deadline=None)
@given(dags(), st.data())
def test_a_rerun_reuses_exactly_what_does_not_follow_the_node_and_the_engine_starts_only_that_node(plan, data):
    from_node = data.draw(st.sampled_from(plan.nodes))
    cut = split(plan, ran(*plan.nodes), from_node)
    reused = {run.node_id for run in cut.reused}
    assert reused | cut.runs == set(plan.nodes) and not reused & cut.runs
    for node_id in reused:  # nothing reused depends, however indirectly, on the node run again
        assert from_node not in ancestors(plan, node_id)
    statuses = {node_id: "success" for node_id in reused}
    progress = Progress(0.0, lambda ids: {n: s for n, s in statuses.items() if n in ids}, lambda: False,
                        lambda: len(reused))
    step = next_step(plan, Policy(), progress, None)
    assert step.action == "start" and step.nodes == (from_node,)


def ancestors(plan: Plan, node_id: str) -> set[str]:
    return {other for other in plan.nodes if node_id in descendants(plan, other)}
