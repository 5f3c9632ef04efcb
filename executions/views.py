import json
from collections import Counter
from datetime import timedelta
from typing import Any

from django.db.models import F
from django.http import Http404, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_date

from core.errors import DetailsRemoved, DocumentError, NotFound
from core.pages import paginate
from core.roles import AUTHOR, holders, roles_of, steering_refusal
from executions import page_selectors
from executions.comparison import comparison_page, executions_for_comparison, runs_aligned
from executions.models import Execution, ThoughtSearch
from executions.run_origins import run_origins
from executions.run_summary import node_summary
from executions.selectors import EVALUATED, details_removed, listed_counts
from executions.services.bulk import BULK_MAX


def execution_list(request):
    """Runs with filters (workflow, status, day range), newest first or ordered by cost
    (`sort`: cost or -cost); running rows refresh themselves."""
    filters = {key: request.GET.get(key, "").strip()
               for key in ("workflow", "status", "since", "until", "experiment", "with_experiments")}
    days = {key: _day(filters[key]) for key in ("since", "until")}
    sort = request.GET.get("sort", "").strip()
    sort = sort if sort in page_selectors.LIST_ORDERS else ""
    executions = page_selectors.executions_for_list(workflow=filters["workflow"], status=filters["status"],
                                                    experiment=filters["experiment"],
                                                    with_experiments=filters["with_experiments"] == "1", sort=sort,
                                                    **days)
    context = paginate(request, executions)
    now = timezone.now()
    counts, removed = listed_counts([execution.pk for execution in context["page"]])
    origins = run_origins(execution.pk for execution in context["page"])
    for execution in context["page"]:
        execution.duration_text = duration_text(execution.started_at, execution.completed_at, now=now)
        execution.cost_text = page_selectors.cost_text(execution.cost)
        execution.run_counts = [(status, n) for status, n in counts[execution.pk].items() if n]
        execution.node_runs_total = sum(counts[execution.pk].values())
        execution.details_removed = execution.pk in removed
        execution.origin = origins.get(execution.pk)
    bulk_filter = {"workflow": filters["workflow"], "status": filters["status"], "since": days["since"] and filters["since"],
                   "until": days["until"] and filters["until"], "experiment": filters["experiment"],
                   "with_experiments": filters["with_experiments"] == "1"}
    return render(request, "executions/execution_list.html", {
        **context, "filters": filters, "statuses": Execution.Status.choices,
        # Authors steer the ticked runs, or every run the filters match, together (services/bulk.py).
        "can_steer": AUTHOR in roles_of(request.user), "bulk_max": BULK_MAX,
        "bulk_filter": json.dumps({key: value for key, value in bulk_filter.items() if value}),
        "workflows": page_selectors.workflow_choices(), "active_statuses": page_selectors.ACTIVE,
        "sort": sort, "sort_links": _sort_links(filters, sort),
    })


def _sort_links(filters: dict[str, str], sort: str) -> dict[str, str]:
    """The column headings' links, with the filters kept (and the first page): Cost orders by
    cost, the most expensive first, then the cheapest first; Started goes back to newest first."""
    def link(order: str) -> str:
        query = QueryDict(mutable=True)
        query.update({key: value for key, value in filters.items() if value})
        if order:
            query["sort"] = order
        encoded = query.urlencode()
        return f"?{encoded}" if encoded else "?"
    return {"cost": link("cost" if sort == "-cost" else "-cost"), "started": link("")}


def execution_detail(request, execution_id: str):
    """A run's inspection page: the header (with the run it was re-run from and its
    re-runs, each with a link to compare), the escalation, the gates waiting for people,
    the graph and timeline (drawn and kept live by execution_detail.js from the API), a
    node's panel (a gate's with its form, for those who may decide it), and one page of
    the node runs table."""
    execution, reruns, more_reruns = page_selectors.execution_with_reruns(execution_id)
    if execution is None:
        raise Http404(f"no execution '{execution_id}'")
    graph = page_selectors.workflow_graph(execution.workflow, execution.workflow_version_id)  # the version it ran
    summary = node_summary(execution)
    removed = details_removed(execution, node_runs=summary["total"])
    states = page_selectors.node_states(summary)
    counts = {**summary["counts"], "total": summary["total"]}
    context = paginate(request, page_selectors.TablePage(execution, summary["total"]))
    for run in context["page"]:
        run.output_preview = page_selectors.output_preview(run.output)
        run.cost_text = page_selectors.cost_text(run.cost)
    escalated = execution.status == Execution.Status.ESCALATED and execution.escalation
    request.roles_held = roles_of(request.user)  # read once: the page's templates use them too
    evaluation = page_selectors.execution_evaluation(execution)
    # Whom to ask, for those who may not steer an escalated run (one query, on those pages only).
    refusal = steering_refusal(request.user, request.roles_held, who=holders(AUTHOR)) \
        if escalated and AUTHOR not in request.roles_held else None
    return render(request, "executions/execution_detail.html", {
        **context,
        "execution": execution,
        "origin": run_origins([execution.pk]).get(execution.pk),
        "details_removed": removed,
        "reruns": reruns,
        "more_reruns": more_reruns,
        "evaluation": evaluation,
        "gate": page_selectors.gate_summary(execution.quality_gate),
        "awaiting_evaluation": evaluation is None and _scored_soon(execution),
        "graph": graph,
        "has_subworkflows": any(node["shape"] == "workflow" for node in graph["nodes"]),
        "progress": page_selectors.progress(graph, states),
        "counts": counts,
        "active": execution.status in page_selectors.ACTIVE,
        "escalation": execution.escalation if escalated else None,
        "steering_refusal": refusal,
        "duration": duration_text(execution.started_at, execution.completed_at),
        "copy_text": page_selectors.copy_text(execution.copy_progress),
        "cost_text": page_selectors.cost_text(execution.cost),
        "input_json": json.dumps(execution.input, indent=2, ensure_ascii=False),
        "state_json": json.dumps(execution.state, indent=2, ensure_ascii=False),
        "agent_overrides": [(node_id, json.dumps(parts, indent=2, ensure_ascii=False))
                            for node_id, parts in sorted(execution.agent_overrides.items())],
        "thought_searches": page_selectors.thought_searches(execution),
        "page_data": {
            "execution_id": execution.execution_id,
            "status": execution.status,
            "workflow_id": execution.workflow.workflow_id,
            "graph": graph,
            "downstream": page_selectors.rerun_downstream(graph),
            "states": states,
            "gates": page_selectors.gate_deciders(graph, request.user.get_username(), request.roles_held),
            "person": {"username": request.user.get_username(), "roles": list(request.roles_held)},
            "steering_refusal": refusal,
            "plan_url": reverse("executions:node_plan", args=[execution.workflow.workflow_id, "NODE"]),
        },
    })


def execution_compare(request):
    """Two runs of one workflow side by side (`?a=…&b=…`): both runs' summaries and scores,
    the counts over all pairs of node runs, and a table of one page of the pairs (`page`,
    filtered by `verdict` and `node`) with the cells that differ highlighted; the two graphs
    (every node coloured by its verdict) and a node's panel (budget bars, context decisions,
    output diff) are drawn by execution_compare.js from the same comparison, given in a
    json_script block. Only the page's pairs are compared in full (`executions/comparison.py`):
    the page says so, and what the counts rest on."""
    ids = [request.GET.get(key, "").strip() for key in ("a", "b")]
    if not all(ids):
        return render(request, "executions/execution_compare.html", {
            "problem": "Pick two runs in the list of executions to compare them."}, status=400)
    if not all(page_selectors.is_identifier(execution_id) for execution_id in ids):
        raise Http404("no such executions")
    try:
        a, b = executions_for_comparison(*ids)
    except NotFound as error:
        raise Http404(error.message) from None
    except DetailsRemoved as error:
        return render(request, "executions/execution_compare.html", {"problem": error.message}, status=409)
    try:
        aligned = runs_aligned(a, b)
    except DocumentError as error:
        return render(request, "executions/execution_compare.html", {"problem": error.problem}, status=422)
    verdict = request.GET.get("verdict", "").strip()
    node = request.GET.get("node", "").strip()
    filters = {"verdict": verdict if verdict in page_selectors.COMPARISON_FILTERS else None,
               "node": node if node and page_selectors.is_identifier(node) else None}
    # The pager counts the pairs the filters keep; only the pairs of its page are compared in full.
    context = paginate(request, range(len(aligned.matching(**filters))))
    page = context["page"]
    comparison = comparison_page(aligned, offset=max(page.start_index() - 1, 0), limit=page.paginator.per_page,
                                 **filters)
    return render(request, "executions/execution_compare.html", {
        **context,
        "comparison": comparison,
        "filters": filters,
        "pairs_total": len(aligned.pairs),
        "filter_choices": page_selectors.COMPARISON_FILTERS.items(),
        "sides": [{"side": side, "run": comparison[side], "started_at": execution.started_at,
                   "duration": duration_text(execution.started_at, execution.completed_at)}
                  for side, execution in (("a", a), ("b", b))],
        "columns": [label for _, label in page_selectors.COMPARED_COLUMNS],
        "rows": page_selectors.comparison_rows(comparison["pairs"]),
    })


# How long after a run ends its page still expects a worker to score it: a run that ended
# before evaluations existed (or whose scoring failed) is not waited for forever.
SCORING_WINDOW = timedelta(minutes=15)


def _scored_soon(execution: Execution) -> bool:
    """A run that ended in success or failure is scored by a worker a moment later."""
    return (execution.status in EVALUATED and execution.completed_at is not None
            and timezone.now() - execution.completed_at < SCORING_WINDOW)


def node_plan(request, workflow_id: str, node_id: str):
    """A node's context plan before a run (node_plan.js asks the API for it); authors may
    also try the node there, once, on a worker."""
    found = page_selectors.workflow_node(workflow_id, node_id)
    if found is None:
        raise Http404(f"no node '{node_id}' in workflow '{workflow_id}'")
    workflow, node = found
    return render(request, "executions/node_plan.html", {
        "workflow": workflow, "node": node, "nav_section": "workflows",  # as its breadcrumb says
        "page_data": {"workflow_id": workflow.workflow_id, "node_id": node["node_id"], "agent_id": node["agent__agent_id"]},
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
    return page_selectors.duration_ms_text(max(0.0, ((end or now or timezone.now()) - start).total_seconds()) * 1000)


# -- a Tree-of-Thoughts search (tot-protocol) ---------------------------------------------

# The search settings the page names, in this order (others follow as they come).
SEARCH_SETTINGS = {"strategy": "Strategy", "max_depth": "Max depth", "branching_factor": "Branching factor (k)",
                   "breadth": "Breadth (b)", "pruning_threshold": "Pruning threshold",
                   "generation_strategy": "Generation", "evaluation_strategy": "Evaluation",
                   "evaluation_timeout_s": "Evaluation timeout (s)", "max_nodes": "Max nodes"}


def thought_tree(request, execution_id: str, node_run_id: int):
    """The ThoughtTree a node run's search grew: the header (problem, search config,
    outcome, stats), the tree (drawn by thought_tree.js from the json_script block), the
    decomposition and the final solution in full. One query: the ThoughtSearch row with
    the light fields of its node run and run; 404 unless the node run is this run's and
    performed a search."""
    search = None
    if page_selectors.is_identifier(execution_id):
        search = (ThoughtSearch.objects.select_related("execution__workflow", "node_run__agent")
                  .only("problem", "task_type", "tree", "messages", "stats", "final_solution", "error",
                        "execution__execution_id", "execution__workflow__workflow_id",
                        "execution__workflow__name", "node_run__node_id", "node_run__attempt", "node_run__kind",
                        "node_run__status", "node_run__duration_ms", "node_run__execution_id",
                        "node_run__agent__agent_id")
                  .filter(execution__execution_id=execution_id, node_run_id=node_run_id,
                          node_run__execution_id=F("execution_id"))
                  .first())
    if search is None:
        raise Http404(f"execution '{execution_id}' has no thought search for node run {node_run_id}")
    tree: dict[str, Any] = search.tree if isinstance(search.tree, dict) else {}
    nodes: dict[str, Any] = found if isinstance(found := tree.get("nodes"), dict) else {}
    config: dict[str, Any] = found if isinstance(found := tree.get("search_config"), dict) else {}
    messages = [message for message in (search.messages or []) if isinstance(message, dict)]
    decomposition = _last_payload(messages, "decomposition_result")
    solution = search.final_solution if isinstance(search.final_solution, dict) else None
    verification: dict[str, Any] = (found if solution and isinstance(found := solution.get("verification"), dict)
                                    else {})
    stats = search.stats if isinstance(search.stats, dict) else {}
    statuses = Counter(node.get("status") for node in nodes.values() if isinstance(node, dict))
    best_path = [node_id for node_id in (tree.get("search_state") or {}).get("best_path") or [] if node_id in nodes]
    return render(request, "executions/thought_tree.html", {
        "search": search,
        "execution": search.execution,
        "node_run": search.node_run,
        "settings": [(key, label, config[key]) for key, label in SEARCH_SETTINGS.items() if key in config]
                    + [(key, key.replace("_", " ").capitalize(), value) for key, value in config.items()
                       if key not in SEARCH_SETTINGS],
        "stats": {key: stats.get(key) for key in ("total_nodes", "total_backtracks", "llm_calls")},
        "solution": solution,
        "verified": verification.get("is_valid") is True,
        "verification": verification,
        "error": search.error if isinstance(search.error, dict) else None,
        "recorded_errors": sorted(Counter(message["error"].get("code", "?") for message in messages  # the outcome's aside
                                          if isinstance(message.get("error"), dict) and message["error"] != search.error)
                                  .items()),
        "decomposition": decomposition,
        "decomposition_json": json.dumps(decomposition, indent=2, ensure_ascii=False) if decomposition else "",
        "solution_json": json.dumps(solution, indent=2, ensure_ascii=False) if solution else "",
        "counts": {"nodes": len(nodes), **{status: statuses.get(status, 0) for status in
                                            ("pending", "expanded", "pruned", "terminal")}},
        "best_path": [{"id": node_id, "content": nodes[node_id].get("content", ""),
                       "score": (nodes[node_id].get("evaluation") or {}).get("score")} for node_id in best_path],
        # The ThoughtTree whole, and every message as it was exchanged (search_complete's tree too).
        "page_data": {"tree": tree, "messages": messages},
    })


def _last_payload(messages: list[dict], message_type: str) -> dict | None:
    for message in reversed(messages):
        if message.get("type") == message_type and isinstance(message.get("payload"), dict):
            return message["payload"]
    return None
