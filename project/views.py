"""The overview page: it counts rows of every app, so it sits above them all."""
from django.shortcuts import render

from agents.models import Agent, DeriveRequest
from executions.models import Execution
from executions.selectors import gate_url
from executions.services import gates_pending
from workflows.models import Workflow


def overview(request):
    """What there is, what is running, and what waits for a person: escalated runs, runs
    waiting at gates, and first of all the gates the signed-in user may decide."""
    runs = Execution.objects.filter(trial=False)
    counts = {
        "agents": Agent.objects.count(),
        "workflows": Workflow.objects.count(),
        "running": runs.filter(status=Execution.Status.RUNNING).count(),
        "escalated": runs.filter(status=Execution.Status.ESCALATED).count(),
        "waiting": runs.filter(status=Execution.Status.WAITING).count(),
        "pending_derivations": DeriveRequest.objects.filter(status=DeriveRequest.Status.PENDING).count(),
    }
    counts["for_a_person"] = counts["escalated"] + counts["waiting"]
    pending = gates_pending(user=request.user)
    for run in pending:  # each links to its run's page, at the gate's form
        run.page_url = gate_url(run)
    recent = runs.select_related("workflow").order_by("-created_at", "-id")[:10]
    return render(request, "core/overview.html", {"counts": counts, "recent": recent, "gates_pending": pending})
