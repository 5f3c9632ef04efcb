"""The overview page: it counts rows of every app, so it sits above them all."""
from django.shortcuts import render

from agents.models import Agent, DeriveRequest
from executions.models import Execution
from workflows.models import Workflow


def overview(request):
    """What there is, what is running, and what waits for a person."""
    counts = {
        "agents": Agent.objects.count(),
        "workflows": Workflow.objects.count(),
        "running": Execution.objects.filter(status=Execution.Status.RUNNING, trial=False).count(),
        "escalated": Execution.objects.filter(status=Execution.Status.ESCALATED, trial=False).count(),
        "pending_derivations": DeriveRequest.objects.filter(status=DeriveRequest.Status.PENDING).count(),
    }
    recent = Execution.objects.filter(trial=False).select_related("workflow").order_by("-created_at", "-id")[:10]
    return render(request, "core/overview.html", {"counts": counts, "recent": recent})
