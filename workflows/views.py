from django.db.models import Count
from django.shortcuts import render

from core.pages import paginate
from workflows.models import Blueprint, Workflow


def blueprint_list(request):
    blueprints = Blueprint.objects.annotate(agent_count=Count("agents", distinct=True),
                                            contract_count=Count("contracts", distinct=True)).order_by("blueprint_id")
    return render(request, "workflows/blueprint_list.html", paginate(request, blueprints))


def workflow_list(request):
    workflows = Workflow.objects.annotate(node_count=Count("nodes", distinct=True),
                                          execution_count=Count("executions", distinct=True)).order_by("workflow_id")
    topology = request.GET.get("topology", "").strip()
    if topology:
        workflows = workflows.filter(topology=topology)
    return render(request, "workflows/workflow_list.html", {
        **paginate(request, workflows), "topology": topology, "topologies": Workflow.Topology.choices,
    })
