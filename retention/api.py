"""A workflow's retention rule: read by viewers, set by authors (`/api/workflows/{id}/retention`)."""
from ninja import Field, Router, Schema

from core.api_support import responses
from core.roles import AUTHOR, require_role
from retention import services
from workflows.selectors import workflow_get

router = Router(tags=["retention"])
DAYS = 36_500  # a hundred years: beyond it, a typing error rather than a rule


class RuleIn(Schema):
    days: int | None = Field(None, ge=0, le=DAYS, description="ended runs deleted after this many days "
                                                              "(0: kept for ever; null: RETENTION_DAYS)")
    failed_days: int | None = Field(None, ge=0, le=DAYS, description="failed runs, after this many (0: as the "
                                                                     "others; null: RETENTION_FAILED_DAYS)")
    success_detail_days: int | None = Field(
        None, ge=0, le=DAYS, description="successful runs keep only their summary and cost after this many days "
                                         "(0: never; null: RETENTION_SUCCESS_DETAIL_DAYS)")


class EffectiveOut(Schema):
    days: int
    failed_days: int
    success_detail_days: int


class RuleOut(RuleIn):
    workflow_id: str
    effective: EffectiveOut = Field(..., description="the rule the workflow's runs get: its own fields, else the "
                                                     "global settings")
    updated_at: str | None
    updated_by: str


@router.get("/workflows/{workflow_id}/retention", response=responses(200, RuleOut),
            summary="A workflow's retention rule: its own fields and the rule its runs get")
def retention_get(request, workflow_id: str):
    return services.rule_get(workflow_get(workflow_id))


@router.put("/workflows/{workflow_id}/retention", response=responses(200, RuleOut),
            summary="Set a workflow's retention rule (authors); every field null: the global settings")
def retention_set(request, workflow_id: str, payload: RuleIn):
    require_role(request.user, AUTHOR, to="change a workflow's retention")
    return services.rule_set(workflow_get(workflow_id), values=payload.dict(), actor=request.user)
