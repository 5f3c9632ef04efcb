"""Which nodes run next, per topology (core-data-structures §4.1).

Pure: a `Plan` is built from a workflow's nodes, dependency edges and transitions (plain
data), and answers from the latest status of each node. The services hold the database
side; Celery only ever carries ids.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

DONE = {"success", "skipped"}
ACTIVE = {"pending", "running", "waiting"}  # waiting: a gate open for a person

# What a transition's fields mean, the same in every topology:
# - `to` runs after `from` succeeded (seq, dag: a dependency; state_machine: the next node);
# - `condition`, `on_success` other than `continue`, and `on_failure` naming a node choose
#   which node comes next. Only a state machine chooses: a seq, dag or par runs every node
#   once the nodes before it are done. Validation refuses these fields there (`unhonoured`)
#   rather than run the workflow as if they were not written;
# - `on_failure` `escalate` (the default), `abort` or `skip` applies in every topology
#   (`Plan.failure_action`).
RUNS_EVERY_NODE = {
    "seq": "a seq runs every node, in order, each once the one before it is done",
    "dag": "a dag runs every node once the nodes it depends on are done",
    "par": "a par runs every node at once",
}
FAILURE_ACTIONS = {"escalate", "abort", "skip"}


def unhonoured(topology: str, transition: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, why) for each field of `transition` that `topology` cannot honour."""
    if topology not in RUNS_EVERY_NODE:
        return []
    runs = RUNS_EVERY_NODE[topology]
    found = []
    if transition.get("condition"):
        found.append(("condition", f"a condition chooses the next node only in a state_machine; {runs}, "
                                   f"so '{transition['to']}' would run whatever the condition says"))
    then = transition.get("on_success")
    if then == "end":
        found.append(("on_success", f"on_success 'end' ends a run early only in a state_machine; {runs}"))
    elif then and then != "continue":
        found.append(("on_success", f"on_success '{then}' goes on to the node it names only in a state_machine; "
                                    f"{runs}"))
    failed = transition.get("on_failure")
    if failed and failed not in FAILURE_ACTIONS:
        found.append(("on_failure", f"on_failure '{failed}' goes on to the node it names only in a state_machine; "
                                    f"in a {topology} the failed '{transition['from']}' is never done, so what "
                                    "depends on it could never run (use skip, abort or escalate)"))
    return found


@dataclass(frozen=True)
class Decision:
    """What follows a state-machine node: `node` to run next, or `end`."""

    action: str  # "node" | "end"
    node_id: str | None = None
    transition: int | None = None  # index of the transition taken
    condition: str | None = None
    condition_value: bool | None = None
    # (index, condition, value, missing) of every transition looked at, in order; missing:
    # the paths its condition read that are not there (they read as null)
    evaluated: tuple[Any, ...] = ()
    reason: str = ""  # an end: which node ended the run, and why

    def as_dict(self) -> dict[str, Any]:
        looked = []
        for index, condition, value, missing in self.evaluated:
            entry = {"transition": index, "condition": condition, "value": value}
            if missing:
                entry["missing"] = list(missing)
            looked.append(entry)
        described = {"action": self.action, "node_id": self.node_id, "transition": self.transition,
                     "condition": self.condition, "condition_value": self.condition_value, "evaluated": looked}
        if self.reason:
            described["reason"] = self.reason
        return described


@dataclass
class Plan:
    topology: str
    nodes: list[str]
    edges: list[tuple[str, str]] = field(default_factory=list)  # (upstream, downstream)
    transitions: list[dict[str, Any]] = field(default_factory=list)
    agents: dict[str, Any] = field(default_factory=dict)  # node id → the id of the agent that runs it

    def dependencies(self, node_id: str) -> list[str]:
        if self.topology == "seq":
            position = self._positions[node_id]
            return self.nodes[position - 1: position] if position else []
        if self.topology == "par":
            return []
        return list(self._upstream.get(node_id, ()))

    def successors(self, node_id: str) -> list[str]:
        """The nodes that may become ready when `node_id` is done (seq, par, dag)."""
        if self.topology == "seq":
            position = self._positions[node_id]
            return self.nodes[position + 1: position + 2]
        if self.topology == "par":
            return []
        return list(self._downstream.get(node_id, ()))

    def downstream(self, node_id: str) -> set[str]:
        """Every node this node's output may reach next: the next node of a seq, the
        targets of its edges (dependencies, references) and of its transitions."""
        return set(self.successors(node_id)) | self._reaches.get(node_id, set())

    # Indexed once per plan (the services build one per version of a workflow and ask it on
    # every node run): asked by scanning, a layer of 2,000 nodes cost 2,000 scans of every edge.

    @cached_property
    def _positions(self) -> dict[str, int]:
        return {node_id: position for position, node_id in enumerate(self.nodes)}

    @cached_property
    def _upstream(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for upstream, downstream in self.edges:
            found.setdefault(downstream, []).append(upstream)
        return found

    @cached_property
    def _reaches(self) -> dict[str, set[str]]:
        """Each node's targets, of its edges and of its transitions."""
        found: dict[str, set[str]] = {}
        for upstream, downstream in [*self.edges, *((t["from"], t["to"]) for t in self.transitions)]:
            found.setdefault(upstream, set()).add(downstream)
        return found

    @cached_property
    def _downstream(self) -> dict[str, list[str]]:
        found: dict[str, dict[str, None]] = {}
        for upstream, downstream in self.edges:
            found.setdefault(upstream, {})[downstream] = None  # in edge order, once each
        return {node_id: list(targets) for node_id, targets in found.items()}

    def ready(self, statuses: dict[str, str], candidates: list[str] | None = None) -> list[str]:
        """seq, par, dag: every node not started yet (of `candidates`, if given) whose
        dependencies are all done — all of them at once, so independent nodes run in parallel.
        A node whose run was cancelled (a worker took it while the run waited for a person)
        has not run: it starts again."""
        return [
            node_id for node_id in (self.nodes if candidates is None else candidates)
            if statuses.get(node_id, "cancelled") == "cancelled"
            and all(statuses.get(dep) in DONE for dep in self.dependencies(node_id))
        ]

    def finished(self, statuses: dict[str, str]) -> bool:
        return all(statuses.get(node_id) in DONE for node_id in self.nodes)

    @property
    def start(self) -> str:
        return self.nodes[0]

    def failure_action(self, node_id: str) -> str:
        """The `on_failure` of the node's first outgoing transition that sets one; else escalate.
        The same in every topology; a node id comes only from a state machine's (`unhonoured`)."""
        for transition in self.transitions:
            if transition["from"] == node_id and transition.get("on_failure"):
                target: str = transition["on_failure"]
                return target
        return "escalate"

    def next_state(self, node_id: str, *, evaluate: Callable[..., bool], output: Any, state: Any,
                   input: Any, gate: Any = None) -> Decision:
        """state_machine: the first outgoing transition of `node_id` whose condition holds
        (no condition always holds); its `on_success` says continue to `to` (the default),
        `end`, or go to another node. No transition that holds ends the run. Each condition
        looked at is recorded with its value and the paths it read that are not there; an
        end says which node ended the run and why."""
        looked = []
        for index, transition in enumerate(self.transitions):
            if transition["from"] != node_id:
                continue
            condition = transition.get("condition")
            missing: list[str] = []
            value = True if not condition else bool(evaluate(condition, output=output, state=state, input=input,
                                                             gate=gate, missing=missing))
            looked.append((index, condition, value, tuple(missing)))
            if not value:
                continue
            then = transition.get("on_success") or "continue"
            if then == "end":
                return Decision("end", None, index, condition, value, tuple(looked),
                                reason=f"node '{node_id}' ended the run: transition #{index} says on_success end")
            target = transition["to"] if then == "continue" else then
            return Decision("node", target, index, condition, value, tuple(looked))
        return Decision("end", evaluated=tuple(looked), reason=_no_match(node_id, looked))


def _no_match(node_id: str, looked: list[tuple[Any, ...]]) -> str:
    """Why a state machine ended after `node_id` when no transition took it further."""
    if not looked:
        return f"node '{node_id}' ended the run: it has no outgoing transition"
    missing = list(dict.fromkeys(path for *_, paths in looked for path in paths))
    reason = (f"node '{node_id}' ended the run: no transition matched "
              f"({', '.join(f'#{index}' for index, *_ in looked)} {'was' if len(looked) == 1 else 'were'} false)")
    if missing:
        reason += f"; the conditions read fields that are not there: {', '.join(missing)}"
    return reason
