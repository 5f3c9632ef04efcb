"""Evaluations (core-data-structures §7): viewers read them; authors record one by hand,
scored by the same formula as a computed one. The operations keep the ids they had when
they were executions' (`operation_id`), so clients generated from the schema keep working.
"""
from ninja import Path, Query, Router, Status
from ninja.pagination import paginate

from core.api_support import Page, responses
from core.roles import AUTHOR, require_role
from executions import selectors
from executions.schemas import ID_PATTERN, EvaluationFilters, EvaluationIn, EvaluationOut
from quality.evaluations import evaluation_create

router = Router(tags=["evaluations"])


@router.get("/evaluations", response=responses(200, list[EvaluationOut]), by_alias=True,
            summary="Evaluations of runs, agents and workflows, newest first", tags=["evaluations"],
            operation_id="executions_api_evaluations_list")
@paginate(Page)
def evaluations_list(request, filters: Query[EvaluationFilters]):
    return selectors.evaluations_list(**filters.dict())


@router.get("/evaluations/{evaluation_id}", response=responses(200, EvaluationOut), by_alias=True,
            summary="One evaluation (§7)", tags=["evaluations"], operation_id="executions_api_evaluations_detail")
def evaluations_detail(request, evaluation_id: str = Path(..., pattern=ID_PATTERN)):
    return selectors.evaluation_get(evaluation_id)


@router.post("/evaluations", response=responses(201, EvaluationOut), by_alias=True,
             summary="Record an evaluation (§7) by hand", tags=["evaluations"],
             operation_id="executions_api_evaluations_create")
def evaluations_create(request, payload: EvaluationIn):
    require_role(request.user, AUTHOR, to="record evaluations")
    document = payload.model_dump(by_alias=True, exclude_none=True)
    document["scores"]["accuracy"] = payload.scores.accuracy  # null says "not measured": kept, not left out
    evaluation = evaluation_create(document=document, actor=request.user.get_username())
    return Status(201, selectors.evaluation_out(evaluation))
