"""What every node kind is (`NodeKind`) and gives back from a worker (`Performed`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol


@dataclass(frozen=True)
class ChildRun:
    """A run of another workflow that a node's run hands its work to (a sub-workflow node):
    the workflow, its version (None: the latest), and the child's input."""

    workflow_ref: str
    version: int | None
    input: dict


@dataclass
class Performed:
    output: Any
    record: dict = field(default_factory=dict)  # fields of the node run to store
    # Set when the node's work goes on in a child run: the node run settles when it ends
    # (executions/services/subworkflows.py), and `output` is not stored now.
    child: ChildRun | None = None


class NodeKind(Protocol):
    """One kind of node: how its run opens, what a worker does with it, what its outcome
    tells the engine, and how the pages draw it. Its part of the workflow document is
    checked by the pure engine (engine.validation, which asks each kind's check)."""

    name: str
    shape: str  # how the pages draw it: "agent" (a box), "gate" (a diamond), "workflow" (a folder)
    described: str  # what the node is, as a message says it: "is a gate: a person decides it"
    calls_agent: bool  # its agent's backend is called: the node has an agent version to pin, a fallback to try
    decided_by_people: bool  # an output a person gives for it is their decision (services/gates.py)
    trial_refusal: str  # why the node cannot be tried alone ("": it can)

    def opening(self, execution, graph, node, now: datetime) -> dict | None:
        """The fields of the node's run as it opens without a worker (a gate waits for a
        person); None: it is created pending and sent to a worker."""

    def perform(self, run, graph, node) -> Performed:
        """Do the node's work on a worker; raises `NodeFailure` (executions/node_errors.py)."""

    def decision(self, run) -> dict | None:
        """What a transition's condition reads as `gate` on the run's outcome (None: nothing)."""


class WorkerKind:
    """A node whose work a worker does (its agent's, unless a kind says otherwise): it opens
    pending, and its outcome is read from its status and output alone."""

    shape = "agent"
    described = "is run by its agent"
    calls_agent = True
    decided_by_people = False
    trial_refusal = ""

    def opening(self, execution, graph, node, now: datetime) -> dict | None:
        return None

    def decision(self, run) -> dict | None:
        return None
