"""Node kinds: what performing one node run means, for each kind of node.

A node's kind follows from the agent that runs it: an agent with the skill
`tot_orchestrate` runs a Tree-of-Thoughts search (`tot`, executions/tot.py), its roles
played by other agents, and stores the search itself so that a failed search keeps its
tree; any other agent gets the node's context as a prompt (`llm`, executions/runner.py).

Each kind gives one `run(run, graph, node) -> Performed` and may raise `NodeFailure`;
the services call `perform`, which looks the kind up in KINDS. The kinds import neither
this module nor each other's `run`.
"""
from __future__ import annotations

from typing import Callable

from executions import runner, tot
from executions.models import NodeRun
from executions.runner import Performed, skills
from workflows.models import Node

TOT_SKILL = "tot_orchestrate"  # the skill of an agent whose node is a Tree-of-Thoughts search

KINDS: dict[str, Callable[..., Performed]] = {
    "llm": runner.perform,
    "tot": tot.perform_search,
}


def kind_of(agent) -> str:
    return "tot" if TOT_SKILL in skills(agent) else "llm"


def perform(run: NodeRun, graph, node: Node) -> Performed:
    """Perform `run` as its kind says. `graph` is the workflow's `executions.services.graph.Graph`."""
    return KINDS[kind_of(run.agent)](run, graph, node)
