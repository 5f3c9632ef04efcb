"""Runs (core-data-structures §5): start, read, steer; their node runs; and a workflow node's
context plan before it runs (evaluations, §7, are quality/api.py's).

Viewers read; authors start runs, steer them (cancel; resume, retry or abort an escalated
run); a gate's deciders (a role, or named users) decide it, and only
they give its output otherwise (edited in a re-run or a trial, or to resume past it).
Starting or steering a run sends its node runs to the workers once the transaction commits.
"""

from django.http import StreamingHttpResponse
from ninja import Body, Path, Query, Router, Status
from ninja.pagination import paginate

from agents.selectors import agent_get
from core.api_support import Page, Rendered, responses
from core.errors import DocumentError
from core.roles import ADMIN, AUTHOR, require_role
from executions import run_summary, selectors, services
from executions.comparison import execution_comparison, executions_for_comparison
from executions.page_selectors import executions_for_list
from executions.preview import node_context_plan
from executions.schemas import (
    ID_PATTERN,
    MAX_ROW_ID,
    BulkIn,
    BulkOut,
    ComparisonOut,
    ComparisonQuery,
    CostQuery,
    ExecutionFilters,
    ExecutionIn,
    ExecutionOut,
    ExecutionQuery,
    ExecutionSummaryOut,
    GateDecisionIn,
    GateOut,
    GatesQuery,
    NodeRunFilters,
    NodeRunLightOut,
    NodeRunOut,
    RerunIn,
    ResumeIn,
    RunCostOut,
    ThoughtTreeOut,
    TimelineOut,
    TimelineQuery,
    TryIn,
)
from executions.services.bulk import BULK_MAX
from workflows.schemas import PlanIn, PlanOut
from workflows.selectors import workflow_get

router = Router(tags=["executions"])


def execution_id_param():
    """A fresh parameter each time: the id is checked against the id pattern, so that no
    text the database cannot hold (a NUL character) reaches a query."""
    return Path(..., pattern=ID_PATTERN, description="the run's execution_id")


@router.post("/executions", response=responses(201, ExecutionOut), summary="Start a run of a workflow")
def executions_start(request, payload: ExecutionIn):
    require_role(request.user, AUTHOR, to="start runs")
    execution = services.execution_start_by_id(workflow_id=payload.workflow_id, input=payload.input, actor=request.user,
                                                version=payload.workflow_version)
    return Status(201, selectors.execution_detail(execution))


@router.get("/executions", response=responses(200, list[ExecutionSummaryOut]),
            summary="Runs, newest first, with their node runs counted by status")
@paginate(Page)
def executions_list(request, filters: Query[ExecutionFilters]):
    return selectors.executions_list(**filters.dict())


# Before `/executions/{execution_id}`, which would take "compare" for an id.
@router.get("/executions/compare", response=responses(200, ComparisonOut),
            summary="Two runs of one workflow compared node run by node run: every pair counted and each node "
                    "judged on status, tokens, agent version and a digest of output and context decisions; a page "
                    "of pairs (`offset`, `limit`, filtered by `verdict` or `node`) compared in full: output (a "
                    "JSON diff) and context decisions, each flagged where it differs")
def executions_compare(request, query: Query[ComparisonQuery]):
    return execution_comparison(*executions_for_comparison(query.a, query.b), offset=query.offset,
                                limit=query.limit, verdict=query.verdict, node=query.node)


# What each bulk action is refused as, for a caller who may not: what its single operation says.
BULK_NEEDS = {"cancel": "cancel runs", "retry": "retry runs", "rerun": "start runs"}


# Before `/executions/{execution_id}`, which would take "bulk" for an id.
@router.post("/executions/bulk", response=responses(200, BulkOut),
             summary="Cancel, retry or re-run many runs at once: those named, or every run a filter matches (at most "
                     "1,000); each run as alone, its refusal its own")
def executions_bulk(request, payload: BulkIn):
    require_role(request.user, AUTHOR, to=BULK_NEEDS[payload.action])
    return services.executions_bulk(action=payload.action, execution_ids=_bulk_ids(payload), actor=request.user,
                                    from_node=payload.from_node)


def _bulk_ids(payload: BulkIn) -> list[str]:
    """The runs a bulk operation names: its ids, or those its filter matches (newest first),
    refused past the limit before anything is done."""
    if (payload.execution_ids is None) == (payload.filter is None):
        raise DocumentError("name the runs (`execution_ids`) or a filter (`filter`), one of the two",
                            where="execution_ids")
    if payload.filter is None:
        return payload.execution_ids or []
    chosen = payload.filter
    matching = executions_for_list(workflow=chosen.workflow, status=chosen.status, since=chosen.since,
                                   until=chosen.until, experiment=chosen.experiment,
                                   with_experiments=chosen.with_experiments)
    ids = list(matching.values_list("execution_id", flat=True)[:BULK_MAX + 1])
    if len(ids) > BULK_MAX:
        raise DocumentError(f"the filter matches {matching.count()} runs: a bulk operation steers at most "
                            f"{BULK_MAX} at once; narrow the filter", where="filter",
                            details={"limit": BULK_MAX})
    return ids


@router.get("/executions/{execution_id}", response=responses(200, ExecutionOut),
            summary="One run: its §5 record, state, escalation and its node runs summarised (each node's runs by "
                    "status, its cost and its latest run); `?node_runs=all`: every node run in full, streamed")
def executions_detail(request, query: Query[ExecutionQuery], execution_id: str = execution_id_param()):
    execution = selectors.execution_get(execution_id)
    if query.node_runs == "all":
        return StreamingHttpResponse(selectors.execution_record_stream(execution), content_type="application/json")
    return selectors.execution_detail(execution)


@router.get("/executions/{execution_id}/node-runs", response=responses(200, list[NodeRunOut | NodeRunLightOut]),
            summary="A run's node runs (every attempt), in the order they were made or newest first, filtered by "
                    "node, status, kind or a window of time; light records unless `full=true`")
@paginate(Page)
def node_runs_list(request, filters: Query[NodeRunFilters], execution_id: str = execution_id_param()):
    return run_summary.node_runs_page(selectors.execution_get(execution_id), node=filters.node,
                                      status=filters.status, kind=filters.kind, since=filters.since,
                                      until=filters.until, newest_first=filters.order == "-sequence",
                                      full=filters.full)


@router.get("/executions/{execution_id}/timeline", response=responses(200, TimelineOut),
            summary="A window of the run's timeline: each node's runs counted in slices of time by status, and "
                    "the runs themselves when few enough fall in the window")
def executions_timeline(request, query: Query[TimelineQuery], execution_id: str = execution_id_param()):
    return run_summary.timeline(selectors.execution_get(execution_id), since=query.since, until=query.until,
                                buckets=query.buckets)


@router.get("/executions/{execution_id}/node-runs/{node_run_id}", response=responses(200, NodeRunOut),
            summary="One node run: context record, resolution failures, compression, decision, output")
def node_runs_detail(request, execution_id: str = execution_id_param(),
                     node_run_id: int = Path(..., ge=1, le=MAX_ROW_ID)):
    return selectors.node_run_get(selectors.execution_get(execution_id), node_run_id)


@router.get("/executions/{execution_id}/node-runs/{node_run_id}/thought-tree",
            response=responses(200, ThoughtTreeOut), summary="The ThoughtTree a node run's Tree-of-Thoughts search grew, whole (tot-protocol)")
def thought_tree_detail(request, execution_id: str = execution_id_param(),
                        node_run_id: int = Path(..., ge=1, le=MAX_ROW_ID)):
    return selectors.thought_tree_get(selectors.execution_get(execution_id), node_run_id)


@router.post("/executions/{execution_id}/rerun", response=responses(201, ExecutionOut),
             summary="Run again from a node: a new run that reuses the outputs before it (edited if asked; a "
                     "gate's output by one of its deciders only)")
def executions_rerun(request, payload: RerunIn, execution_id: str = execution_id_param()):
    require_role(request.user, AUTHOR, to="start runs")
    execution = services.execution_rerun(source=selectors.execution_get(execution_id), from_node=payload.from_node,
                                         step=payload.step, outputs=payload.outputs,
                                         agent_versions=payload.agent_versions, actor=request.user)
    return Status(201, selectors.execution_detail(execution))


@router.post("/executions/{execution_id}/cancel", response=responses(200, ExecutionOut),
             summary="Cancel a run that has not ended")
def executions_cancel(request, execution_id: str = execution_id_param()):
    require_role(request.user, AUTHOR, to="cancel runs")
    execution = services.execution_cancel(execution=selectors.execution_get(execution_id), actor=request.user)
    return selectors.execution_detail(execution)


@router.post("/executions/{execution_id}/resume", response=responses(200, ExecutionOut),
             summary="Go on past the escalated node with an output a person gives, checked against the node's "
                     "contracts; past a gate, by one of its deciders only")
def executions_resume(request, payload: ResumeIn, execution_id: str = execution_id_param()):
    require_role(request.user, AUTHOR, to="resume runs")
    execution = services.execution_resume(execution=selectors.execution_get(execution_id), output=payload.output,
                                          actor=request.user)
    return selectors.execution_detail(execution)


@router.post("/executions/{execution_id}/retry", response=responses(200, ExecutionOut),
             summary="Run the escalated node again from its first attempt")
def executions_retry(request, execution_id: str = execution_id_param()):
    require_role(request.user, AUTHOR, to="retry runs")
    execution = services.execution_retry(execution=selectors.execution_get(execution_id), actor=request.user)
    return selectors.execution_detail(execution)


@router.post("/executions/{execution_id}/abort", response=responses(200, ExecutionOut),
             summary="Fail an escalated run")
def executions_abort(request, execution_id: str = execution_id_param()):
    require_role(request.user, AUTHOR, to="abort runs")
    execution = services.execution_abort(execution=selectors.execution_get(execution_id), actor=request.user)
    return selectors.execution_detail(execution)


@router.post("/executions/{execution_id}/node-runs/{node_run_id}/decision", response=responses(200, NodeRunOut),
             summary="Decide a gate: approve, reject, or edit its data (its deciders)")
def executions_gate_decide(request, payload: GateDecisionIn, execution_id: str = execution_id_param(),
                           node_run_id: int = Path(..., ge=1, le=MAX_ROW_ID)):
    execution = selectors.execution_get(execution_id)
    services.gate_decide(execution=execution, node_run_id=node_run_id, decision=payload.decision,
                         comment=payload.comment, output=payload.output, actor=request.user)
    return selectors.node_run_get(execution, node_run_id)


@router.get("/gates", response=responses(200, list[GateOut]), tags=["gates"],
            summary="The gates waiting for a decision the signed-in user (or, for admins, `user`) may make, "
                    "oldest first")
@paginate(Page)
def gates_list(request, filters: Query[GatesQuery]):
    user = request.user
    if filters.user and filters.user != user.get_username():
        require_role(user, ADMIN, to="list the gates waiting for another user")
        user = selectors.user_get(filters.user)
    return Rendered(services.gates_pending_ids(user=user), selectors.pending_gates)


@router.get("/workflows/{workflow_id}/costs", response=responses(200, list[RunCostOut]), tags=["workflows"],
            summary="What the workflow's latest runs cost, oldest first")
def workflows_costs(request, workflow_id: str, filters: Query[CostQuery]):
    return selectors.cost_history(workflow=workflow_get(workflow_id), limit=filters.limit)


@router.get("/agents/{agent_id}/costs", response=responses(200, list[RunCostOut]), tags=["agents"],
            summary="What the agent's node runs cost in each of its latest runs, oldest first")
def agents_costs(request, agent_id: str, filters: Query[CostQuery]):
    return selectors.cost_history(agent=agent_get(agent_id), limit=filters.limit)


# The plan is a workflow's page, but assembling a context is the executions app's work.
@router.post("/workflows/{workflow_id}/nodes/{node_id}/plan", response=responses(200, PlanOut), tags=["workflows"],
             operation_id="workflows_api_workflows_node_plan",
             summary="A node's context as a run would assemble it, without running it or calling a model")
def workflows_node_plan(request, workflow_id: str, node_id: str, payload: PlanIn | None = Body(None)):
    payload = payload or PlanIn.model_validate({})
    return node_context_plan(workflow=workflow_get(workflow_id), node_id=node_id,
                             outputs=payload.outputs, input=payload.input, state=payload.state)


@router.post("/workflows/{workflow_id}/nodes/{node_id}/try", response=responses(201, ExecutionOut),
             tags=["workflows"], operation_id="workflows_api_workflows_node_try",
             summary="Run one node alone, once, on a worker: a trial, never evaluated; poll it as a run")
def workflows_node_try(request, workflow_id: str, node_id: str, payload: TryIn | None = Body(None)):
    require_role(request.user, AUTHOR, to="try nodes")
    payload = payload or TryIn.model_validate({})
    source = selectors.execution_get(payload.execution) if payload.execution else None
    execution = services.node_try(workflow=workflow_get(workflow_id), node_id=node_id, source=source,
                                  input=payload.input, state=payload.state, outputs=payload.outputs,
                                  agent_version=payload.agent_version, actor=request.user)
    return Status(201, selectors.execution_detail(execution))
