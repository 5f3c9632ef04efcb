"""Node kinds: what a node is, chosen in one place (`kind_of`) from its part of the
workflow document, and what running it means.

- `gate` (node_kinds/gate.py): the node has a `gate` object; its run waits for a person.
- `subworkflow` (node_kinds/subworkflow.py): the node has a `subworkflow` object; its run
  hands its work to a child run of that workflow.
- otherwise the node's agent does the work on a worker: an agent with the skill
  `tot_orchestrate` runs a Tree-of-Thoughts search (`tot`, node_kinds/tot.py), its roles
  played by other agents; any other agent gets the node's context as a prompt (`llm`,
  node_kinds/llm.py). A document that names no kind means what it always meant.

Each kind is a `NodeKind` (node_kinds/base.py). The run core asks a node's kind how its run
opens and what its outcome tells the engine; a worker calls `perform`; the pages draw a
node by its kind's `shape`. The kinds import neither this module nor each other.
"""
from __future__ import annotations

from typing import Any

from executions.models import NodeRun
from executions.node_kinds import gate, llm, subworkflow, tot
from executions.node_kinds.base import NodeKind, Performed
from executions.prompts import skills
from workflows.models import Node

TOT_SKILL = "tot_orchestrate"  # the skill of an agent whose node is a Tree-of-Thoughts search

KINDS: dict[str, NodeKind] = {kind.name: kind for kind in (llm.KIND, tot.KIND, gate.KIND, subworkflow.KIND)}


def chosen(*, gate: Any, subworkflow: Any, agent=None) -> NodeKind:
    """The kind of a node with these parts of its document, run by `agent` (None: as the
    pages draw it, which is the same for every agent's kind)."""
    if gate is not None:
        return KINDS["gate"]
    if subworkflow is not None:
        return KINDS["subworkflow"]
    return KINDS["tot" if agent is not None and TOT_SKILL in skills(agent) else "llm"]


def kind_of(node: Node, agent=None) -> NodeKind:
    """The kind of `node`, run by `agent` (by default the node's own: a fallback agent's
    attempt, or a pinned version of the agent, may do the work differently)."""
    return chosen(gate=node.gate, subworkflow=node.subworkflow, agent=agent or node.agent)


def perform(run: NodeRun, graph, node: Node) -> Performed:
    """Perform `run` as its kind says. `graph` is the workflow's `executions.run_graphs.Graph`."""
    return kind_of(node, run.agent).perform(run, graph, node)
