"""Re-running a past run from one of its nodes: which of its node runs are reused (their
stored outputs copied, not run again) and which nodes run again; and whether the workflow
still has the shape the past run read, since outputs reused under another shape would be
passed as if they were right.

Pure: `executions.services.rerun` reads the past run's node runs and the workflow, asks
here, and stores the answer. What starts the re-run is the engine's `next_step`, asked as
for any run, with the reused runs already done (and, in a state machine, `Progress.start`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.errors import EngineError
from engine.scheduling import DONE, Plan

ROUND_STARTS = frozenset({"first", "reused", "edited"})  # a run of one of these kinds starts a node's round


class RerunRefused(EngineError):
    """A re-run that cannot be made as asked; `where` names the field of the request."""

    code = "RERUN_REFUSED"

    def __init__(self, message: str, *, where: str = "from_node"):
        super().__init__(message)
        self.where = where


@dataclass(frozen=True, slots=True)  # (slots: a long run's past runs are many)
class PastRun:
    """A node run of the past run, as the split reads it (`key` is the caller's id of it)."""

    node_id: str
    status: str
    kind: str
    key: Any = None


@dataclass(frozen=True)
class Split:
    """What a re-run does: `reused` (in the past run's order) are copied; `start` runs first,
    and after it the nodes in `runs` may run. `step` is the position of `start` on a state
    machine's recorded path (1-based), None in the other topologies."""

    reused: tuple[PastRun, ...]
    start: str
    runs: frozenset[str]
    step: int | None = None


def recorded_path(runs: list[PastRun]) -> list[PastRun]:
    """A state machine's steps, in order: each node's round (its first attempt, then any
    retry, fallback, a person's output) ends with the run that decided how it went."""
    path: list[PastRun] = []
    for run in runs:
        if run.kind in ROUND_STARTS or not path or path[-1].node_id != run.node_id:
            path.append(run)
        else:
            path[-1] = run
    return path


def split(plan: Plan, runs: list[PastRun], from_node: str, step: int | None = None) -> Split:
    """Which of `runs` (the past run's node runs, in order) a re-run from `from_node` reuses."""
    if from_node not in plan.nodes:
        raise RerunRefused(f"node '{from_node}' is not in the workflow (its nodes: {', '.join(plan.nodes)})")
    if plan.topology == "state_machine":
        return _split_path(plan, runs, from_node, step)
    if step is not None:
        raise RerunRefused(f"a {plan.topology} runs each node once: `step` chooses a step of a state machine's "
                           "recorded path only", where="step")
    again = {from_node} | descendants(plan, from_node)
    latest = {run.node_id: run for run in runs}
    reused = []
    for node_id in plan.nodes:
        if node_id in again:
            continue
        run = latest.get(node_id)
        if run is None or run.status not in DONE:
            how = "never ran" if run is None else f"ended {run.status}"
            raise RerunRefused(f"node '{node_id}', whose output a re-run from '{from_node}' reuses, {how} in the "
                               f"past run: re-run from '{node_id}' or a node before it")
        reused.append(run)
    order = {id(run): position for position, run in enumerate(runs)}
    return Split(tuple(sorted(reused, key=lambda run: order[id(run)])), from_node, frozenset(again))


def _split_path(plan: Plan, runs: list[PastRun], from_node: str, step: int | None) -> Split:
    path = recorded_path(runs)
    shown = " → ".join(run.node_id for run in path) or "nothing ran"
    if step is None:
        steps = [position for position, run in enumerate(path, start=1) if run.node_id == from_node]
        if not steps:
            raise RerunRefused(f"node '{from_node}' is not on the past run's path ({shown})")
        step = steps[-1]
    elif not 1 <= step <= len(path) or path[step - 1].node_id != from_node:
        found = f"is '{path[step - 1].node_id}'" if 1 <= step <= len(path) else "does not exist"
        raise RerunRefused(f"step {step} of the past run's path ({shown}) {found}, not '{from_node}'", where="step")
    # Every step before it keeps what it did; a step that failed produced nothing to reuse.
    reused = tuple(run for run in path[:step - 1] if run.status in DONE)
    return Split(reused, from_node, frozenset(plan.nodes), step)


def descendants(plan: Plan, node_id: str) -> set[str]:
    """Every node that runs after `node_id` because it did (seq, par, dag)."""
    found: set[str] = set()
    frontier = [node_id]
    while frontier:
        for successor in plan.successors(frontier.pop()):
            if successor not in found:
                found.add(successor)
                frontier.append(successor)
    return found


def shape_changes(recorded: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """How the workflow's shape (topology, nodes, what each node reads and depends on,
    transitions; see `executions.run_graphs`) changed since a run recorded it."""
    changes = []
    if recorded["topology"] != current["topology"]:
        changes.append(f"its topology was {recorded['topology']}, it is {current['topology']} now")
    then, now = recorded["nodes"], current["nodes"]
    changes += [f"node '{node_id}' was removed" for node_id in then if node_id not in now]
    changes += [f"node '{node_id}' was added" for node_id in now if node_id not in then]
    for node_id in (node_id for node_id in then if node_id in now):
        before, after = then[node_id], now[node_id]
        keys = sorted(key for key in before["input_mapping"].keys() | after["input_mapping"].keys()
                      if before["input_mapping"].get(key) != after["input_mapping"].get(key))
        if keys:
            changes.append(f"node '{node_id}' reads its inputs differently now: input_mapping "
                           + ", ".join(f"'{key}'" for key in keys) + " changed")
        if sorted(before["depends_on"]) != sorted(after["depends_on"]):
            changes.append(f"node '{node_id}' depended on {_names(before['depends_on'])}, "
                           f"it depends on {_names(after['depends_on'])} now")
    for index in range(max(len(recorded["transitions"]), len(current["transitions"]))):
        before = recorded["transitions"][index] if index < len(recorded["transitions"]) else None
        after = current["transitions"][index] if index < len(current["transitions"]) else None
        if before != after:
            changes.append(f"transition {index} was {_transition(before)}, it is {_transition(after)} now")
    return changes


def _names(node_ids: list[str]) -> str:
    return ", ".join(f"'{node_id}'" for node_id in sorted(node_ids)) or "nothing"


def _transition(transition: dict[str, Any] | None) -> str:
    if transition is None:
        return "absent"
    extra = ", ".join(f"{key} {transition[key]!r}" for key in ("condition", "on_success", "on_failure")
                      if transition.get(key))
    return f"'{transition['from']}' → '{transition['to']}'" + (f" ({extra})" if extra else "")
