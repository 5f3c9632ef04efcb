"""The graph of a workflow as running it reads it: plan, nodes, agents, contracts, error
handling, limits and evaluation settings, read once per version of the workflow in each process.

A run runs the version of the workflow it started on (`Execution.workflow_version`): its graph
is built from that version's document, so editing the workflow while it runs, or re-running it
long after, never changes what it does. A run with no version (imported, or started before
workflows had versions) reads the workflow as it is now."""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from agents.backends.metering import units
from agents.models import Agent, AgentVersion
from core.errors import DocumentError, NotFound
from engine.json_schema import field_problems
from engine.scheduling import Plan
from engine.validation import dependency_edges, validate_workflow
from executions.models import Execution
from executions.node_kinds import kind_of
from workflows.contracts import contracts_of
from workflows.documents import workflow_document
from workflows.models import Contract, Node, Workflow, WorkflowVersion
from workflows.services import workflow_version_get


@dataclass(frozen=True)
class Settings:
    """The error handling, limits, evaluation settings and domain of the version a run runs."""

    retry_count: int
    fallback_agent: Agent | None
    escalate_to: Agent | None
    max_steps: int
    max_wall_seconds: int
    judge_agent: Agent | None
    quality_gate: dict | None
    domain: str
    max_cost: int | None = None  # units of 10⁻¹² USD (agents/backends/metering.py); None: no limit
    max_node_cost: int | None = None
    on_budget: str = "fail"  # or escalate
    input_schema: dict | None = None  # what a run must be given (engine/inputs.py); None: anything


@dataclass(frozen=True)
class Graph:
    """What running a workflow reads on every node, read once per version of the workflow
    in each process. The services bump the workflow's `updated_at` whenever any of this
    changes: its nodes or transitions, a new version of one of its agents, new contracts."""

    plan: Plan
    nodes: dict  # node id → Node (unsaved, shared: read it, never change it)
    agents: dict  # agent pk → Agent (shared: read it, never change it)
    versions: dict  # agent pk → the pk of its latest AgentVersion
    contracts: list  # Contract rows from one of the workflow's agents
    settings: Settings
    writes_state: bool  # some node has an output_mapping
    kinds: dict  # node id → its NodeKind (executions/node_kinds), as its own agent runs it
    has_gates: bool  # some node is decided by people (a gate, engine/gates.py): the run may wait for them
    runs_workflows: bool  # some node runs another workflow as a child run (engine/subworkflows.py)
    problems: list  # what validation refuses today, in a workflow stored under earlier rules (a run is refused)
    shape: dict  # what a re-run checks has not changed since the run it starts from (engine.replay.shape_changes)


_GRAPHS: dict[tuple, Graph] = {}


def workflow_graph(workflow: Workflow) -> Graph:
    """The graph of the workflow as it is now."""
    key = ("workflow", workflow.pk, workflow.updated_at)
    return _GRAPHS.get(key) or _remember(key, _graph(workflow, workflow_document(workflow)))


def version_graph(workflow: Workflow, version: WorkflowVersion) -> Graph:
    """The graph of one version of the workflow. Agent versions and contracts are today's: a
    new one bumps the workflow's `updated_at`, so it is part of the key."""
    key = ("version", version.pk, workflow.updated_at)
    return _GRAPHS.get(key) or _remember(key, _graph(workflow, version.document))


def execution_graph(execution: Execution) -> Graph:
    """The graph a run runs: its version's, or (no version) the workflow's as it is now. The
    version's document is read only when this process has not built its graph yet."""
    if execution.workflow_version_id is None:
        return workflow_graph(execution.workflow)
    key = ("version", execution.workflow_version_id, execution.workflow.updated_at)
    graph = _GRAPHS.get(key)
    if graph is None:
        document = WorkflowVersion.objects.values_list("document", flat=True).get(pk=execution.workflow_version_id)
        graph = _remember(key, _graph(execution.workflow, document))
    return graph


def _remember(key: tuple, graph: Graph) -> Graph:
    if len(_GRAPHS) > 256:
        _GRAPHS.clear()
    _GRAPHS[key] = graph
    return graph


def _graph(workflow: Workflow, document: dict[str, Any]) -> Graph:
    """A graph from a §4.1 document: its nodes become unsaved `Node`s with their agents
    looked up (an agent since deleted is left out, and named among the problems)."""
    handling = document.get("error_handling") or {}
    evaluation = document.get("evaluation") or {}
    limits = document.get("limits") or {}
    named = {node["agent_ref"] for node in document["nodes"]}
    named |= {ref for ref in (handling.get("fallback_agent"), handling.get("escalate_to"),
                              evaluation.get("judge_agent")) if ref}
    by_ref = {agent.agent_id: agent for agent in Agent.objects.filter(agent_id__in=named)}

    def agent_named(ref: str | None) -> Agent | None:  # a setting left out (None) names no agent
        return None if ref is None else by_ref.get(ref)

    nodes = [Node(workflow=workflow, node_id=node["id"], position=position, agent=by_ref.get(node["agent_ref"]),
                  input_mapping=node.get("input_mapping", {}), output_mapping=node.get("output_mapping", {}),
                  output_schema=node.get("output_schema", ""), compress=node.get("compress", False),
                  compress_model=node.get("compress_model", "flash"), compress_ratio=node.get("compress_ratio", 0.3),
                  layout=node.get("layout"), gate=node.get("gate"), subworkflow=node.get("subworkflow"))
             for position, node in enumerate(document["nodes"])]
    transitions = [{"from": t["from"], "to": t["to"], "condition": t.get("condition"),
                    "on_success": t.get("on_success"), "on_failure": t.get("on_failure")}
                   for t in document.get("transitions", [])]
    agents = {node.agent_id: node.agent for node in nodes if node.agent_id is not None}
    checked = {"topology": document["topology"], "transitions": transitions,
               "nodes": [{"id": node["id"], "agent_ref": node["agent_ref"], "input_mapping": node.get("input_mapping", {}),
                          "output_mapping": node.get("output_mapping", {})} for node in document["nodes"]]}
    plan = Plan(document["topology"], [n.node_id for n in nodes], dependency_edges(checked), transitions,
                agents={n.node_id: n.agent_id for n in nodes})
    versions: dict[int, int] = {}
    for agent_id, version_id in AgentVersion.objects.filter(agent_id__in=agents).order_by(
            "agent_id", "-created_at", "-id").values_list("agent_id", "pk"):
        versions.setdefault(agent_id, version_id)  # the latest of each agent
    contracts = list(Contract.objects.filter(from_agent_id__in=agents, to_agent_id__in=agents))
    settings = Settings(
        retry_count=handling.get("retry_count", 0), fallback_agent=agent_named(handling.get("fallback_agent")),
        escalate_to=agent_named(handling.get("escalate_to")),
        max_steps=limits.get("max_steps", Workflow._meta.get_field("max_steps").default),
        max_wall_seconds=limits.get("max_wall_seconds", Workflow._meta.get_field("max_wall_seconds").default),
        judge_agent=agent_named(evaluation.get("judge_agent")), quality_gate=evaluation.get("quality_gate") or None,
        domain=document.get("domain", ""),
        max_cost=_units(limits.get("max_cost")), max_node_cost=_units(limits.get("max_node_cost")),
        on_budget=limits.get("on_budget") or "fail", input_schema=document.get("input_schema"))
    shape = {"topology": document["topology"], "transitions": transitions,
             "nodes": {node["id"]: {"agent": node["agent_ref"], "input_mapping": node.get("input_mapping", {}),
                                    "depends_on": plan.dependencies(node["id"])} for node in document["nodes"]}}
    kinds = {node.node_id: kind_of(node) for node in nodes}
    return Graph(plan, {n.node_id: n for n in nodes}, agents, versions, contracts, settings, kinds=kinds,
                 writes_state=any(n.output_mapping for n in nodes),
                 has_gates=any(kind.decided_by_people for kind in kinds.values()),
                 runs_workflows=any(kind.name == "subworkflow" for kind in kinds.values()),
                 problems=validate_workflow({**document, **checked}, set(by_ref)), shape=shape)


def _units(dollars: str | None) -> int | None:
    return None if dollars is None else units(Decimal(dollars))


def run_graph(workflow: Workflow, number: int | None = None) -> tuple[WorkflowVersion | None, Graph]:
    """The version a new run of the workflow runs, and its graph: version `number`, else the
    latest. A workflow with no versions (stored before they existed and never saved since)
    runs as it is now, and its runs record no version."""
    if number is None:
        version = workflow.versions.order_by("-number").first()
    else:
        try:
            version = workflow_version_get(workflow=workflow, number=number)
        except NotFound as missing:  # a field of the run asked for, not a path: the request is wrong
            raise DocumentError(missing.message, where="workflow_version") from None
    return version, (version_graph(workflow, version) if version else workflow_graph(workflow))


def check_contracts_of(graph: Graph, node_id: str, output: Any, *, where: str) -> None:
    """Refuse an output a person gives for `node_id` (an edit, a re-run's edited output) that
    breaks a contract of the node towards the nodes after it, at the first field it breaks
    (`output.draft`), naming the contract and the schema error."""
    for contract in contracts_of(graph.nodes[node_id], graph.plan, graph.contracts):
        problems = [(field, f"{text} (the contract '{contract.key}')")
                    for field, text in field_problems(contract.schema, output, where=where)]
        if problems:
            raise DocumentError.at_fields(problems)

