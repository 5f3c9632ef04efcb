"""The `/api/experiments` operations: create and start (authors), list, one with its progress
and aggregates, its items (paged, by status), cancel (authors)."""

from django.http import HttpResponse
from ninja import Query, Router, Status
from ninja.pagination import paginate

from agents.backends.metering import usd
from core.api_support import Page, Rendered, responses
from core.roles import AUTHOR, require_role
from experiments import comparison
from experiments import experiment_selectors as selectors
from experiments.compare_schemas import CompareQuery, ComparisonOut
from experiments.experiment_schemas import (
    ExperimentDetailOut,
    ExperimentIn,
    ExperimentItemOut,
    ExperimentOut,
    ItemsFilter,
)
from experiments.experiment_services import experiment_cancel, experiment_create, experiment_start
from experiments.models import Experiment, ExperimentItem

router = Router(tags=["experiments"])


def experiment_out(experiment: Experiment) -> dict:
    return {
        "experiment_id": experiment.experiment_id, "name": experiment.name, "status": experiment.status,
        "workflow_id": experiment.workflow.workflow_id, "workflow_version": experiment.workflow_version.number,
        "dataset": experiment.dataset_version.dataset.name, "dataset_version": experiment.dataset_version.number,
        "agent_versions": experiment.agent_versions, "agent_overrides": experiment.agent_overrides,
        "scorers": experiment.scorers, "concurrency": experiment.concurrency, "max_cost": usd(experiment.max_cost),
        "created_by": experiment.created_by, "cancelled_by": experiment.cancelled_by,
        "created_at": experiment.created_at, "started_at": experiment.started_at,
        "completed_at": experiment.completed_at,
    }


def detail_out(experiment: Experiment) -> dict:
    return {**experiment_out(experiment), "progress": selectors.experiment_progress(experiment),
            "summary": experiment.summary}


def item_out(item: ExperimentItem) -> dict:
    return {"position": item.position, "item_id": item.item_key, "status": item.status,  # type: ignore[attr-defined]
            "execution_id": item.run_id, "output": item.output,  # type: ignore[attr-defined]
            "scores": item.scores, "error_code": item.error_code, "error": item.error, "tokens": item.tokens,
            "cost": usd(item.cost), "latency_seconds": item.latency_seconds}


@router.post("/experiments", response=responses(201, ExperimentDetailOut),
             summary="Create an experiment and start it (authors): everything is checked first")
def experiments_create(request, payload: ExperimentIn):
    require_role(request.user, AUTHOR, to="run experiments")
    experiment = experiment_create(
        workflow_id=payload.workflow_id, workflow_version=payload.workflow_version, dataset=payload.dataset,
        dataset_version_number=payload.dataset_version, name=payload.name, agent_versions=payload.agent_versions,
        agent_overrides=payload.agent_overrides, scorers=payload.scorers, concurrency=payload.concurrency,
        max_cost=payload.max_cost, actor=request.user.get_username())
    experiment_start(experiment=experiment)
    return Status(201, detail_out(selectors.experiment_get(experiment.experiment_id)))


@router.get("/experiments", response=responses(200, list[ExperimentOut]), summary="Experiments, newest first")
@paginate(Page)
def experiments_list(request):
    return Rendered(selectors.experiment_list(), lambda rows: [experiment_out(row) for row in rows])


# Before `/experiments/{experiment_id}`, which would take "compare" for an id.
@router.get("/experiments/compare", response=responses(200, ComparisonOut),
            summary="Experiments over one dataset compared item by item with a baseline: each scorer's paired "
                    "delta with its bootstrap interval and verdict, and a page of rows (filtered) with outputs, "
                    "diffs, scores, deltas and flags; `format=csv`: every row the filters keep",
            openapi_extra={"responses": {200: {"content": {"text/csv": {"schema": {"type": "string"}}}}}})
def experiments_compare(request, query: Query[CompareQuery]):
    compared = comparison.experiments_compared(comparison.experiment_ids(query.ids), baseline=query.baseline or None,
                                               threshold=query.threshold)
    filters = comparison.RowFilters(query.only, query.scorer, query.below, query.metadata).check(compared.scorers)
    rows = compared.rows(filters)
    if query.format == "csv":
        response = HttpResponse(comparison.csv_text(compared, rows), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{comparison.csv_filename(compared)}"'
        return response
    shown = compared.with_outputs(rows[query.offset:query.offset + query.limit])
    return {**comparison.summary_out(compared, rows), "rows": [comparison.row_out(compared, row) for row in shown],
            "offset": query.offset, "limit": query.limit}


@router.get("/experiments/{experiment_id}", response=responses(200, ExperimentDetailOut),
            summary="An experiment: its progress (counts by status, elapsed, estimate) and its aggregates")
def experiments_get(request, experiment_id: str):
    return detail_out(selectors.experiment_get(experiment_id))


@router.get("/experiments/{experiment_id}/items", response=responses(200, list[ExperimentItemOut]),
            summary="An experiment's items in the dataset's order, by status when asked")
@paginate(Page)
def experiment_items_list(request, experiment_id: str, filters: Query[ItemsFilter]):
    items = selectors.experiment_items(selectors.experiment_get(experiment_id), status=filters.status)
    return Rendered(items, lambda rows: [item_out(row) for row in rows])


@router.post("/experiments/{experiment_id}/cancel", response=responses(200, ExperimentDetailOut),
             summary="Cancel an experiment (authors): pending items are cancelled, running runs cancelled")
def experiments_cancel(request, experiment_id: str):
    require_role(request.user, AUTHOR, to="cancel experiments")
    experiment = experiment_cancel(experiment=selectors.experiment_get(experiment_id),
                                   actor=request.user.get_username())
    return detail_out(selectors.experiment_get(experiment.experiment_id))
