import json

from django.db.models import Avg, Count, Q
from django.http import Http404
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_date

from core.errors import NotFound
from core.pages import paginate
from executions import page_selectors, selectors
from executions.models import Evaluation, Execution, NodeRun


def execution_list(request):
    """Runs with filters (workflow, status, day range); running rows refresh themselves."""
    filters = {key: request.GET.get(key, "").strip() for key in ("workflow", "status", "since", "until")}
    days = {key: _day(filters[key]) for key in ("since", "until")}
    executions = page_selectors.executions_for_list(workflow=filters["workflow"], status=filters["status"], **days)
    context = paginate(request, executions)
    now = timezone.now()
    for execution in context["page"]:
        execution.duration_text = duration_text(execution.started_at, execution.completed_at, now=now)
        execution.run_counts = [(status, getattr(execution, f"runs_{status}")) for status in NodeRun.Status.values
                                if getattr(execution, f"runs_{status}")]
    return render(request, "executions/execution_list.html", {
        **context, "filters": filters, "statuses": Execution.Status.choices,
        "workflows": page_selectors.workflow_choices(), "active_statuses": page_selectors.ACTIVE,
    })


def execution_detail(request, execution_id: str):
    """A run's inspection page: the header, the escalation, the graph and timeline (drawn
    and kept live by execution_detail.js from the API), a node's panel, and one page of
    the node runs table."""
    try:
        execution = selectors.execution_get(execution_id) if page_selectors.is_identifier(execution_id) else None
    except NotFound:
        execution = None
    if execution is None:
        raise Http404(f"no execution '{execution_id}'")
    graph = page_selectors.workflow_graph(execution.workflow)
    states, counts = page_selectors.node_states(execution)
    context = paginate(request, page_selectors.node_runs_for_table(execution))
    for run in context["page"]:
        run.output_preview = page_selectors.output_preview(run.output)
    escalated = execution.status == Execution.Status.ESCALATED and execution.escalation
    return render(request, "executions/execution_detail.html", {
        **context,
        "execution": execution,
        "graph": graph,
        "progress": page_selectors.progress(graph, states),
        "counts": counts,
        "active": execution.status in page_selectors.ACTIVE,
        "escalation": execution.escalation if escalated else None,
        "duration": duration_text(execution.started_at, execution.completed_at),
        "input_json": json.dumps(execution.input, indent=2, ensure_ascii=False),
        "state_json": json.dumps(execution.state, indent=2, ensure_ascii=False),
        "page_data": {
            "execution_id": execution.execution_id,
            "status": execution.status,
            "workflow_id": execution.workflow.workflow_id,
            "graph": graph,
            "states": states,
            "plan_url": reverse("executions:node_plan", args=[execution.workflow.workflow_id, "NODE"]),
        },
    })


def node_plan(request, workflow_id: str, node_id: str):
    """A node's context plan before a run (node_plan.js asks the API for it)."""
    found = page_selectors.workflow_node(workflow_id, node_id)
    if found is None:
        raise Http404(f"no node '{node_id}' in workflow '{workflow_id}'")
    workflow, node = found
    return render(request, "executions/node_plan.html", {
        "workflow": workflow, "node": node,
        "page_data": {"workflow_id": workflow.workflow_id, "node_id": node["node_id"]},
    })


def _day(value: str):
    try:
        return parse_date(value) if value else None
    except ValueError:  # well formed but no such day (2026-02-31)
        return None


def duration_text(start, end, *, now=None) -> str:
    """How long a run took (or has been going): "420 ms", "3.2 s", "4 min 05 s", "2 h 03 min"."""
    if start is None:
        return ""
    seconds = max(0.0, ((end or now or timezone.now()) - start).total_seconds())
    if seconds < 1:
        return f"{round(seconds * 1000)} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def evaluation_list(request):
    """Evaluations, newest first, filtered by what they are of (`target_type`, `target_id`),
    whether they passed, or one `evaluation` id; with the averages of what the filter keeps
    (one aggregate query), so `?target_type=agent&target_id=X` is that agent's report."""
    filters = {key: request.GET.get(key, "").strip() for key in ("target_type", "target_id", "pass", "evaluation")}
    evaluations = Evaluation.objects.order_by("-created_at", "-id")
    if filters["target_type"] in Evaluation.TargetType.values:
        evaluations = evaluations.filter(target_type=filters["target_type"])
    if filters["target_id"]:
        evaluations = evaluations.filter(target_id=filters["target_id"])
    if filters["pass"] in ("true", "false"):
        evaluations = evaluations.filter(passed=filters["pass"] == "true")
    if filters["evaluation"]:
        evaluations = evaluations.filter(evaluation_id=filters["evaluation"])
    summary = evaluations.aggregate(
        count=Count("id"), passed=Count("id", filter=Q(passed=True)), accuracy=Avg("accuracy"),
        completeness=Avg("completeness"), efficiency=Avg("efficiency"), overall_score=Avg("overall_score"),
    )
    return render(request, "executions/evaluation_list.html", {
        **paginate(request, evaluations), "filters": filters, "summary": summary,
        "target_types": Evaluation.TargetType.choices, "filtered": any(filters.values()),
    })
