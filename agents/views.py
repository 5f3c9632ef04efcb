from django.shortcuts import render

from agents.models import Agent, DeriveRequest
from core.pages import paginate


def agent_list(request):
    agents = Agent.objects.select_related("parent", "root").order_by("agent_id")
    filters = {key: request.GET.get(key, "").strip() for key in ("status", "type", "q")}
    if filters["status"]:
        agents = agents.filter(status=filters["status"])
    if filters["type"]:
        agents = agents.filter(type=filters["type"])
    if filters["q"]:
        agents = agents.filter(agent_id__icontains=filters["q"]) | agents.filter(name__icontains=filters["q"])
    return render(request, "agents/agent_list.html", {
        **paginate(request, agents), "filters": filters,
        "statuses": Agent.Status.choices, "types": Agent.Type.choices,
    })


def derive_request_list(request):
    requests = DeriveRequest.objects.select_related("parent_agent", "result_agent", "decided_by")
    status = request.GET.get("status", "").strip()
    if status:
        requests = requests.filter(status=status)
    return render(request, "agents/derive_request_list.html", {
        **paginate(request, requests), "status": status, "statuses": DeriveRequest.Status.choices,
    })
