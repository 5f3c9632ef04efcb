from django.db.models import Count, Q
from django.shortcuts import get_object_or_404, render
from django.utils.dateparse import parse_date

from core.pages import paginate
from executions.models import Evaluation, Execution
from workflows.models import Workflow


def execution_list(request):
    executions = Execution.objects.select_related("workflow").annotate(
        node_runs_total=Count("node_runs"),
        node_runs_failed=Count("node_runs", filter=Q(node_runs__status="failed")),
    ).order_by("-created_at", "-id")
    filters = {key: request.GET.get(key, "").strip() for key in ("workflow", "status", "since", "until")}
    if filters["workflow"]:
        executions = executions.filter(workflow__workflow_id=filters["workflow"])
    if filters["status"]:
        executions = executions.filter(status=filters["status"])
    for key, lookup in (("since", "created_at__date__gte"), ("until", "created_at__date__lte")):
        day = parse_date(filters[key]) if filters[key] else None
        if day:
            executions = executions.filter(**{lookup: day})
    return render(request, "executions/execution_list.html", {
        **paginate(request, executions), "filters": filters, "statuses": Execution.Status.choices,
        "workflows": Workflow.objects.order_by("workflow_id").values_list("workflow_id", "name"),
    })


def execution_detail(request, execution_id: str):
    execution = get_object_or_404(Execution.objects.select_related("workflow"), execution_id=execution_id)
    runs = execution.node_runs.select_related("agent").order_by("sequence", "id")
    return render(request, "executions/execution_detail.html", {"execution": execution, "runs": runs})


def evaluation_list(request):
    evaluations = Evaluation.objects.order_by("-created_at", "-id")
    target_type = request.GET.get("target_type", "").strip()
    if target_type:
        evaluations = evaluations.filter(target_type=target_type)
    return render(request, "executions/evaluation_list.html", {
        **paginate(request, evaluations), "target_type": target_type, "target_types": Evaluation.TargetType.choices,
    })
