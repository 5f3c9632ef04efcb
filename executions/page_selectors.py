"""Reads for the execution pages (the list, a run's inspection page, a node's plan).

The inspection page is rendered from a fixed number of queries whatever the number of
node runs: the graph's colours come from one grouped read of each node's latest run, and
the table of node runs is one page, without the heavy fields (prompts, context records).
Everything else the page shows is read by its script from `GET /api/executions/{id}`.
"""
from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery

from executions.models import Execution, NodeRun
from workflows.models import Workflow
from workflows.selectors import ID_PATTERN
from workflows.validation import dependency_edges

DONE = ("success", "skipped")
ACTIVE = ("pending", "running", "escalated")
PREVIEW_CHARS = 160
# What the table of node runs does not read: the panel gets them from the API.
HEAVY_FIELDS = ("prompt", "resolved_inputs", "context_record", "compression", "resolution_failures", "decision")


def executions_for_list(*, workflow: str = "", status: str = "", since=None, until=None) -> QuerySet[Execution]:
    """Runs, newest first, with their node runs counted by status (one grouped query per page)."""
    counts = {f"runs_{value}": Count("node_runs", filter=Q(node_runs__status=value)) for value in NodeRun.Status.values}
    executions = (Execution.objects.select_related("workflow")
                  .annotate(node_runs_total=Count("node_runs"), **counts).order_by("-created_at", "-id"))
    if workflow:
        executions = executions.filter(workflow__workflow_id=workflow)
    if status:
        executions = executions.filter(status=status)
    if since:
        executions = executions.filter(created_at__date__gte=since)
    if until:
        executions = executions.filter(created_at__date__lte=until)
    return executions


def workflow_choices() -> list[tuple[str, str]]:
    return list(Workflow.objects.order_by("workflow_id").values_list("workflow_id", "name"))


def workflow_graph(workflow: Workflow) -> dict[str, Any]:
    """The workflow as the page draws it: nodes (with their agent and saved layout) and
    edges — the order of a chain, transitions with their conditions, and the task outputs
    a node reads (`data` edges), each pair once."""
    nodes = list(workflow.nodes.order_by("position", "id").values("node_id", "agent__agent_id", "agent__name",
                                                                   "layout", "compress", "input_mapping"))
    transitions = list(workflow.transitions.order_by("position", "id").values(
        "from_node", "to_node", "condition", "on_success", "on_failure"))
    ids = [node["node_id"] for node in nodes]
    edges: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()

    def add(source: str, target: str, kind: str, **extra) -> None:
        if source in ids and target in ids and (source, target) not in seen:
            seen.add((source, target))
            edges.append({"source": source, "target": target, "kind": kind, **extra})

    if workflow.topology == Workflow.Topology.SEQ:
        for source, target in pairwise(ids):
            add(source, target, "sequence")
    for transition in transitions:
        add(transition["from_node"], transition["to_node"], "transition", condition=transition["condition"] or "",
            on_failure=transition["on_failure"] or "")
    document = {"nodes": [{"id": node["node_id"], "input_mapping": node["input_mapping"] or {}} for node in nodes],
                "transitions": []}
    for source, target in dependency_edges(document):
        dependency = workflow.topology == Workflow.Topology.DAG
        add(source, target, "dependency" if dependency else "data")
    return {
        "workflow_id": workflow.workflow_id,
        "topology": workflow.topology,
        "nodes": [{"id": node["node_id"], "agent": node["agent__agent_id"], "agent_name": node["agent__name"],
                   "layout": node["layout"], "compress": node["compress"]} for node in nodes],
        "edges": edges,
    }


def node_states(execution: Execution) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    """Each node's latest run (its status colours the graph) and how many runs it had, and
    the run's node runs counted by status: two grouped queries, whatever their number."""
    latest = (NodeRun.objects.filter(execution=execution, node_id=OuterRef("node_id"))
              .order_by("-sequence", "-id").values("pk")[:1])
    states: dict[str, dict[str, Any]] = {}
    for node_id, status, kind, attempt in (NodeRun.objects.filter(execution=execution, pk=Subquery(latest))
                                           .values_list("node_id", "status", "kind", "attempt")):
        states[node_id] = {"status": status, "kind": kind, "attempt": attempt, "runs": 0}
    counts = dict.fromkeys(NodeRun.Status.values, 0)
    for node_id, status, n in (NodeRun.objects.filter(execution=execution).order_by()
                               .values_list("node_id", "status").annotate(n=Count("id"))):
        states.setdefault(node_id, {"status": status, "kind": "first", "attempt": 1, "runs": 0})["runs"] += n
        counts[status] += n
    counts["total"] = sum(counts.values())
    return states, counts


def progress(graph: dict[str, Any], states: dict[str, dict[str, Any]]) -> dict[str, int]:
    total = len(graph["nodes"])
    done = sum(1 for node in graph["nodes"] if states.get(node["id"], {}).get("status") in DONE)
    return {"done": done, "total": total, "percent": round(100 * done / total) if total else 0}


def node_runs_for_table(execution: Execution) -> QuerySet[NodeRun]:
    """A run's node runs in the order they were made, without the fields only the panel shows."""
    return execution.node_runs.select_related("agent").defer(*HEAVY_FIELDS).order_by("sequence", "id")


def output_preview(output: Any, limit: int = PREVIEW_CHARS) -> str:
    """The start of an output as one line of text (the template escapes it)."""
    if output is None:
        return ""
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_identifier(value: str) -> bool:
    """Whether `value` could be a stored id: one that cannot is not looked up (PostgreSQL
    refuses a NUL in a query outright)."""
    return bool(ID_PATTERN.match(value))


def workflow_node(workflow_id: str, node_id: str) -> tuple[Workflow, dict[str, Any]] | None:
    """The workflow and the node a plan is asked for (None when either does not exist)."""
    if not (is_identifier(workflow_id) and is_identifier(node_id)):
        return None
    workflow = Workflow.objects.filter(workflow_id=workflow_id).first()
    if workflow is None:
        return None
    node = (workflow.nodes.filter(node_id=node_id)
            .values("node_id", "agent__agent_id", "agent__name", "compress").first())
    if node is None:
        return None
    return workflow, node
