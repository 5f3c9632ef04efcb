import json

from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.urls import NoReverseMatch, reverse

from core.pages import paginate
from core.roles import AUTHOR, has_role
from workflows import selectors
from workflows.documents import workflow_document
from workflows.models import Blueprint, Workflow
from workflows.releases import version_scores


def blueprint_list(request):
    blueprints = Blueprint.objects.annotate(agent_count=Count("agents", distinct=True),
                                            contract_count=Count("contracts", distinct=True)).order_by("blueprint_id")
    return render(request, "workflows/blueprint_list.html", paginate(request, blueprints))


def workflow_list(request):
    workflows = Workflow.objects.annotate(node_count=Count("nodes", distinct=True),
                                          execution_count=Count("executions", distinct=True,
                                                                filter=Q(executions__trial=False, executions__experiment=""))).order_by("workflow_id")
    topology = request.GET.get("topology", "").strip()
    if topology:
        workflows = workflows.filter(topology=topology)
    return render(request, "workflows/workflow_list.html", {
        **paginate(request, workflows), "topology": topology, "topologies": Workflow.Topology.choices,
    })


# -- the workflow page: the graph editor (static/js/workflow_editor.js) -------------------
# The page hands the editor the workflow's §4.1 document and a few addresses; everything
# else (agents, validation, saving, starting a run) goes through the API, as programs do.

WORKFLOW_SLOT, NODE_SLOT, EXECUTION_SLOT = "__workflow__", "__node__", "__execution__"


def _address(name: str, args: list[str], literal: str) -> str:
    """A URL with placeholders for the editor to fill in; `literal` when the route is missing."""
    try:
        return reverse(name, args=args)
    except NoReverseMatch:
        return literal


def _editor(request, *, document: dict, workflow: Workflow | None, recent_runs=(), versions=()):
    editable = has_role(request.user, AUTHOR)
    config = {
        "editable": editable,
        "is_new": workflow is None,
        "urls": {
            "workflow": reverse("workflows:detail", args=[WORKFLOW_SLOT]),
            "execution": reverse("executions:detail", args=[EXECUTION_SLOT]),
            "node_plan": _address("executions:node_plan", [WORKFLOW_SLOT, NODE_SLOT],
                                  f"/executions/plan/{WORKFLOW_SLOT}/{NODE_SLOT}/"),
        },
        "slots": {"workflow": WORKFLOW_SLOT, "node": NODE_SLOT, "execution": EXECUTION_SLOT},
        "versions": [version.number for version in versions],
    }
    return render(request, "workflows/workflow_editor.html", {
        "workflow": workflow, "document": document, "config": config, "editable": editable,
        "recent_runs": recent_runs, "topologies": Workflow.Topology.choices, "versions": versions,
    })


def workflow_detail(request, workflow_id: str):
    # An id that cannot be stored is not asked for (selectors.ID_PATTERN); the document's
    # agents come with the nodes' one query, so the page costs the same few queries
    # whatever the number of nodes.
    found = Workflow.objects.select_related("fallback_agent", "escalate_to").filter(workflow_id=workflow_id)
    workflow = found.first() if selectors.ID_PATTERN.match(workflow_id) else None
    if workflow is None:
        raise Http404(f"no workflow '{workflow_id}'")
    recent_runs = workflow.executions.filter(trial=False, experiment="").order_by("-created_at", "-id").values("execution_id", "status", "created_at")[:5]
    versions = list(selectors.workflow_versions(workflow).defer("document"))
    scores = version_scores(workflow, versions)
    for version in versions:
        version.latest_experiment = scores.get(version.number)  # type: ignore[attr-defined]  # for the template
    return _editor(request, document=workflow_document(workflow), workflow=workflow, recent_runs=list(recent_runs),
                   versions=versions)


def workflow_new(request):
    if not has_role(request.user, AUTHOR):
        raise PermissionDenied("only authors create workflows")
    defaults = {name: Workflow._meta.get_field(name).get_default() for name in ("max_steps", "max_wall_seconds")}
    document = {
        "workflow_id": "", "name": "", "topology": Workflow.Topology.DAG, "nodes": [], "transitions": [],
        "error_handling": {"retry_count": 0, "fallback_agent": None, "escalate_to": None},
        "limits": defaults,
    }
    return _editor(request, document=document, workflow=None)


# -- blueprints (core-data-structures §3.1) -----------------------------------------------

def blueprint_detail(request, blueprint_id: str):
    """A blueprint: its agents with their role in the workflow, and its contracts, each
    drawn as an edge between two agents (three queries, whatever the size)."""
    blueprint = get_object_or_404(Blueprint, blueprint_id=blueprint_id)
    members = list(blueprint.agents.select_related("agent").order_by("position", "id"))
    contracts = list(blueprint.contracts.select_related("from_agent", "to_agent").order_by("position", "id"))
    agents = {member.agent.agent_id: member.agent for member in members}
    for contract in contracts:
        agents.setdefault(contract.from_agent.agent_id, contract.from_agent)
        agents.setdefault(contract.to_agent.agent_id, contract.to_agent)
    sources = {member.agent.agent_id: member.source for member in members}
    graph = {
        "nodes": [{"id": agent_id, "label": f"{agent.name}\n({sources.get(agent_id, 'contract only')})",
                   "status": agent.status, "href": reverse("agents:detail", args=[agent_id])}
                  for agent_id, agent in agents.items()],
        "edges": [{"source": c.from_agent.agent_id, "target": c.to_agent.agent_id, "label": c.data_type}
                  for c in contracts],
    }
    return render(request, "workflows/blueprint_detail.html", {
        "blueprint": blueprint, "members": members, "graph": graph,
        "contracts": [(c, json.dumps(c.schema, indent=2, ensure_ascii=False)) for c in contracts],
    })
