"""Node kinds: what performing one node run means, for each kind of node.

A node's kind follows from the agent that runs it: an agent with the skill
`tot_orchestrate` runs a Tree-of-Thoughts search (`tot`, node_kinds/tot.py), its roles
played by other agents, and stores the search itself so that a failed search keeps its
tree; any other agent gets the node's context as a prompt (`llm`, node_kinds/llm.py).

Each kind gives one `run(run, graph, node) -> Performed` (node_kinds/base.py) and may
raise `NodeFailure` (executions/node_errors.py); the services call `perform`, which looks
the kind up in KINDS. The kinds import neither this module nor each other's `run`.
"""
from __future__ import annotations

from collections.abc import Callable

from executions.models import NodeRun
from executions.node_kinds import llm, tot
from executions.node_kinds.base import Performed
from executions.prompts import skills
from workflows.models import Node

TOT_SKILL = "tot_orchestrate"  # the skill of an agent whose node is a Tree-of-Thoughts search

KINDS: dict[str, Callable[..., Performed]] = {
    "llm": llm.perform,
    "tot": tot.perform_search,
}


def kind_of(agent) -> str:
    return "tot" if TOT_SKILL in skills(agent) else "llm"


def perform(run: NodeRun, graph, node: Node) -> Performed:
    """Perform `run` as its kind says. `graph` is the workflow's `executions.run_graphs.Graph`."""
    return KINDS[kind_of(run.agent)](run, graph, node)
