"""The graph of a workflow as running it reads it: plan, nodes, agents, contracts, read once
per version of the workflow in each process."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from agents.models import Agent, AgentVersion
from engine.scheduling import Plan
from engine.validation import dependency_edges, validate_workflow
from executions.models import WorkflowShape
from workflows.models import Contract, Workflow


@dataclass(frozen=True)
class Graph:
    """What running a workflow reads on every node, read once per version of the workflow
    in each process. The services bump the workflow's `updated_at` whenever any of this
    changes: its nodes or transitions, a new version of one of its agents, new contracts."""

    plan: Plan
    nodes: dict  # node id → Node (shared: read it, never change it)
    agents: dict  # agent pk → Agent (shared: read it, never change it)
    versions: dict  # agent pk → the pk of its latest AgentVersion
    contracts: list  # Contract rows from one of the workflow's agents
    writes_state: bool  # some node has an output_mapping
    problems: list  # what validation refuses today, in a workflow stored under earlier rules (a run is refused)
    shape: dict  # what a run records of the workflow, for a re-run to check against (engine.replay.shape_changes)
    shape_digest: str  # its SHA-256: runs that read the same shape share one WorkflowShape row


_GRAPHS: dict[tuple, Graph] = {}


def workflow_graph(workflow: Workflow) -> Graph:
    key = (workflow.pk, workflow.updated_at)
    graph = _GRAPHS.get(key)
    if graph is None:
        nodes = list(workflow.nodes.order_by("position", "id"))
        transitions = [
            {"from": source, "to": target, "condition": condition, "on_success": on_success, "on_failure": on_failure}
            for source, target, condition, on_success, on_failure in workflow.transitions.order_by("position", "id")
            .values_list("from_node", "to_node", "condition", "on_success", "on_failure")
        ]
        agents = Agent.objects.in_bulk({n.agent_id for n in nodes})
        document = {"topology": workflow.topology, "transitions": transitions,
                    "nodes": [{"id": n.node_id, "agent_ref": agents[n.agent_id].agent_id,
                               "input_mapping": n.input_mapping, "output_mapping": n.output_mapping} for n in nodes]}
        plan = Plan(workflow.topology, [n.node_id for n in nodes], dependency_edges(document), transitions,
                    agents={n.node_id: n.agent_id for n in nodes})
        versions = {}
        for agent_id, version_id in AgentVersion.objects.filter(agent_id__in=agents).order_by(
                "agent_id", "-created_at", "-id").values_list("agent_id", "pk"):
            versions.setdefault(agent_id, version_id)  # the latest of each agent
        contracts = list(Contract.objects.filter(from_agent_id__in=agents, to_agent_id__in=agents))
        known = {agent.agent_id for agent in agents.values()}
        if len(_GRAPHS) > 256:
            _GRAPHS.clear()
        shape = {"topology": workflow.topology, "transitions": transitions,
                 "nodes": {n.node_id: {"agent": agents[n.agent_id].agent_id, "input_mapping": n.input_mapping,
                                       "depends_on": plan.dependencies(n.node_id)} for n in nodes}}
        graph = _GRAPHS[key] = Graph(plan, {n.node_id: n for n in nodes}, agents, versions, contracts,
                                     writes_state=any(n.output_mapping for n in nodes),
                                     problems=validate_workflow(document, known), shape=shape,
                                     shape_digest=_digest(shape))
    return graph


def _digest(shape: dict) -> str:
    return hashlib.sha256(json.dumps(shape, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def workflow_shape(graph: Graph) -> WorkflowShape:
    """The stored row of the graph's shape, made by the first run that reads it."""
    return WorkflowShape.objects.get_or_create(digest=graph.shape_digest, defaults={"shape": graph.shape})[0]


def workflow_plan(workflow: Workflow) -> Plan:
    return workflow_graph(workflow).plan


def workflow_node(workflow: Workflow, node_id: str):
    """A node of the workflow (shared within the process: read it, never change it)."""
    return workflow_graph(workflow).nodes[node_id]
