"""Derive requests (core-data-structures §6): everyone signed in reads them; authors raise
one by hand; approvers approve or reject them.

The operations are listed with the agents' (the `agents` tag) and keep the ids they had
when they were agents' (`operation_id`), so clients generated from the schema keep working.
"""
from ninja import Query, Router, Status
from ninja.pagination import paginate

from core.api_support import Page, responses
from core.roles import APPROVER, AUTHOR, require_role
from quality.derive_requests import selectors, services
from quality.derive_requests.schemas import DecisionIn, DeriveRequestFilters, DeriveRequestIn, DeriveRequestOut

router = Router(tags=["agents"])


@router.get("/derive-requests", response=responses(200, list[DeriveRequestOut]), summary="Derive requests, newest first",
            operation_id="agents_api_derive_requests_list")
@paginate(Page)
def derive_requests_list(request, filters: DeriveRequestFilters = Query(...)):
    return selectors.derive_request_list(**filters.dict())


@router.get("/derive-requests/{derive_request_id}", response=responses(200, DeriveRequestOut),
            summary="A derive request", operation_id="agents_api_derive_requests_detail")
def derive_requests_detail(request, derive_request_id: str):
    return selectors.derive_request_full_document(selectors.derive_request_get(derive_request_id))


@router.post("/derive-requests", response=responses(201, DeriveRequestOut),
             summary="Raise a derive request by hand (authors); it starts pending",
             operation_id="agents_api_derive_requests_create")
def derive_requests_create(request, payload: DeriveRequestIn):
    require_role(request.user, AUTHOR, to="raise derive requests")
    created = services.derive_request_create(
        derive_request_id=payload.derive_request_id, parent_agent_id=payload.parent_agent_id,
        trigger=payload.trigger, trigger_context=payload.trigger_context,
        **payload.specialization.model_dump(exclude_unset=True), user=request.user,
    )
    return Status(201, selectors.derive_request_full_document(created))


@router.post("/derive-requests/{derive_request_id}/approve", response=responses(200, DeriveRequestOut),
             summary="Approve a pending derive request (approvers)",
             operation_id="agents_api_derive_requests_approve")
def derive_requests_approve(request, derive_request_id: str, payload: DecisionIn):
    require_role(request.user, APPROVER, to="approve derive requests")
    decided = services.derive_request_approve(
        request=selectors.derive_request_get(derive_request_id), user=request.user, comment=payload.comment,
        evidence=payload.evidence,
    )
    return selectors.derive_request_full_document(decided)


@router.post("/derive-requests/{derive_request_id}/reject", response=responses(200, DeriveRequestOut),
             summary="Reject a pending derive request (approvers)",
             operation_id="agents_api_derive_requests_reject")
def derive_requests_reject(request, derive_request_id: str, payload: DecisionIn):
    require_role(request.user, APPROVER, to="reject derive requests")
    decided = services.derive_request_reject(
        request=selectors.derive_request_get(derive_request_id), user=request.user, comment=payload.comment,
        evidence=payload.evidence,
    )
    return selectors.derive_request_full_document(decided)
