"""Writes for derive requests (core-data-structures §6): raising one by hand, importing its
document, deciding it, and the history of what happened to it.

One invariant lives here and nowhere else: a request's status moves only pending →
approved | rejected, by an approver, once; never by import. A request that would give its
child tools the tool catalogue does not hold cannot be approved as it is (the child could
not call them), and says which. The rules that raise requests
from runs are in `triggers.py`, and the child agent an approval leads to is made in
`child_agent.py`.
"""
from __future__ import annotations

import uuid
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from agents.models import DeriveRequest, DeriveRequestEvent
from agents.services import get_agent
from core.audit import compact, record
from core.errors import DocumentError, IllegalTransition, SwitchyardError
from core.jsonutil import check_shape, check_storable
from core.roles import APPROVER, require_role
from core.status_writes import change_status, lock_row
from core.tasks import send_after_commit
from quality.derive_requests.evidence import decision_evidence
from quality.derive_requests.schemas import DeriveRequestDocument
from tools import catalogue


@transaction.atomic
def derive_request_import_document(document: dict[str, Any], *, actor: str = "") -> tuple[DeriveRequest, str]:
    """Create a derive request, or update the description of an existing one.

    Status only moves by approving or rejecting, never by import: an import that would
    change the status of an existing request is refused.
    """
    check_shape(document, DeriveRequestDocument, "derive_request")
    spec: dict[str, Any] = document["specialization"]
    status = document.get("status", DeriveRequest.Status.PENDING)
    result_id = document.get("result_agent_id")
    if status == DeriveRequest.Status.APPROVED and not result_id:
        raise DocumentError("an approved request names the agent it produced", where="result_agent_id")
    if status != DeriveRequest.Status.APPROVED and result_id:
        raise DocumentError(f"only an approved request has a result agent (status is '{status}')", where="result_agent_id")
    parent = get_agent(document["parent_agent_id"], where="parent_agent_id")
    result = get_agent(result_id, where="result_agent_id") if result_id else None
    if result is not None and result.parent_id != parent.pk:
        raise DocumentError(f"'{result_id}' is not a child of '{parent.agent_id}', so this request did not produce it",
                            where="result_agent_id")
    values = {
        "parent_agent": parent,
        "trigger": document["trigger"],
        "trigger_context": document.get("trigger_context", {}),
        "new_name": spec["new_name"],
        "domain_focus": spec.get("domain_focus", ""),
        "additional_skills": spec.get("additional_skills", []),
        "additional_constraints": spec.get("additional_constraints", []),
        "result_agent": result,
    }
    request = lock_row(DeriveRequest, missing_ok=True, derive_request_id=document["derive_request_id"])
    if request is None:
        request = DeriveRequest.objects.create(
            derive_request_id=document["derive_request_id"], status=status, created_by=actor,
            evidence=document.get("evidence"), **values
        )
        derive_request_event(request, DeriveRequestEvent.Kind.RAISED, actor=actor or "import", comment="imported")
        return request, "created"
    if status != request.status:
        raise DocumentError(
            f"is '{request.status}' and changes only by approval or rejection, not by import", where="status"
        )
    if all(getattr(request, name) == value for name, value in values.items()):
        return request, "unchanged"
    for name, value in values.items():
        setattr(request, name, value)
    request.save()
    return request, "updated"


TOOLS_NOT_IN_CATALOGUE = "TOOLS_NOT_IN_CATALOGUE"


# --- the API's writes ---------------------------------------------------------------
# Derive requests as people raise and decide them one at a time (POST, approve, reject);
# the import function above remains the one way documents come in.

def _conflict(message: str, **details: Any) -> SwitchyardError:
    return SwitchyardError(message, code="CONFLICT", details=details)


@transaction.atomic
def derive_request_create(
    *,
    parent_agent_id: str,
    trigger: str,
    new_name: str,
    user,
    trigger_context: dict[str, Any] | None = None,
    domain_focus: str = "",
    additional_skills: list[str] | None = None,
    additional_constraints: list[str] | None = None,
    derive_request_id: str | None = None,
) -> DeriveRequest:
    """Raise a derive request by hand (§6); it always starts pending."""
    document: dict[str, Any] = {
        "derive_request_id": derive_request_id or f"dr_{uuid.uuid4().hex[:12]}",
        "parent_agent_id": parent_agent_id,
        "trigger": trigger,
        "trigger_context": trigger_context or {},
        "specialization": {
            "new_name": new_name,
            "domain_focus": domain_focus,
            "additional_skills": list(additional_skills or []),
            "additional_constraints": list(additional_constraints or []),
        },
    }
    check_shape(document, DeriveRequestDocument, "derive_request")
    check_storable(document)
    request_id = document["derive_request_id"]
    taken = _conflict(f"derive request '{request_id}' exists already", derive_request_id=request_id)
    if DeriveRequest.objects.filter(derive_request_id=request_id).exists():
        raise taken
    spec: dict[str, Any] = document["specialization"]
    parent = get_agent(parent_agent_id, where="parent_agent_id")
    pending = DeriveRequest.objects.filter(parent_agent=parent, trigger=trigger, status=DeriveRequest.Status.PENDING).first()
    if pending is not None:
        raise _conflict(f"derive request '{pending.derive_request_id}' for agent '{parent_agent_id}' and trigger "
                        f"'{trigger}' is pending already; decide it first", derive_request_id=pending.derive_request_id)
    try:
        with transaction.atomic():
            request = DeriveRequest.objects.create(
                derive_request_id=request_id,
                parent_agent=parent,
                trigger=trigger,
                trigger_context=document["trigger_context"],
                status=DeriveRequest.Status.PENDING,
                created_by=user.get_username(),
                **spec,
            )
            derive_request_event(request, DeriveRequestEvent.Kind.RAISED, actor=user.get_username(), comment="raised by hand")
            return request
    except IntegrityError:  # created by someone else since the check above
        raise taken from None


def requested_tools(request: DeriveRequest) -> list[str]:
    """The tools the request's evidence says the parent lacked (`trigger_context.missing_tools`),
    which its child is to be given."""
    context = request.trigger_context if isinstance(request.trigger_context, dict) else {}
    listed = context.get("missing_tools")
    return [tool for tool in listed if isinstance(tool, str)] if isinstance(listed, list) else []


def tools_not_in_catalogue(request: DeriveRequest) -> list[str]:
    """Those of the requested tools the tool catalogue does not hold: no agent can call them."""
    return catalogue.unknown(requested_tools(request))


def _derive_request_decide(request: DeriveRequest, status: str, *, user, comment: str,
                           evidence: str | None = None) -> None:
    """pending → approved | rejected, by an approver, once (§6). An approval is refused while
    the request asks for tools the catalogue does not hold; a rejection never is. `evidence`
    names the child experiment of a parent-vs-child pair the decision rests on: its figures
    are recorded on the request (`evidence.decision_evidence`), or the decision is refused."""
    verb = "approve" if status == DeriveRequest.Status.APPROVED else "reject"
    require_role(user, APPROVER, to=f"{verb} derive requests")
    check_storable(comment, "comment")
    if request.status != DeriveRequest.Status.PENDING:
        by = f" by {request.decided_by.get_username()}" if request.decided_by is not None else ""
        raise IllegalTransition(
            f"derive request '{request.derive_request_id}' was {request.status}{by} already; "
            f"only a pending request can be approved or rejected",
            details={"derive_request_id": request.derive_request_id, "status": request.status},
        )
    unavailable = tools_not_in_catalogue(request) if status == DeriveRequest.Status.APPROVED else []
    if unavailable:
        raise SwitchyardError(
            f"derive request '{request.derive_request_id}' cannot be approved as it is: it would give its child "
            f"{', '.join(unavailable)}, not available in the tool catalogue, so the child could not call "
            f"{'it' if len(unavailable) == 1 else 'them'}; reject it, or have an operator add "
            f"{'the tool' if len(unavailable) == 1 else 'the tools'} to the catalogue first",
            code=TOOLS_NOT_IN_CATALOGUE,
            details={"derive_request_id": request.derive_request_id, "tools": unavailable},
        )
    recorded = decision_evidence(request, evidence) if evidence is not None else None
    change_status(request, DeriveRequest.STATES, status, decided_by=user, decided_at=timezone.now(), comment=comment,
                  evidence=recorded)
    derive_request_event(request, status, actor=user.get_username(), comment=comment)
    record(f"derive_request.{verb}", actor=user, object_type="derive_request", object_id=request.derive_request_id,
           before={"status": DeriveRequest.Status.PENDING},
           after={"status": request.status, "decided_by": user.get_username(), "comment": comment,
                  **({"evidence": compact(recorded)} if recorded is not None else {})})


def derive_request_event(request: DeriveRequest, kind: str, *, actor: str, comment: str = "") -> DeriveRequestEvent:
    """Record what happened to the request, by whom (a username, or rule:<trigger>), now."""
    return DeriveRequestEvent.objects.create(request=request, kind=kind, status=request.status, actor=actor,
                                             comment=comment)


@transaction.atomic
def derive_request_approve(*, request: DeriveRequest, user, comment: str = "",
                           evidence: str | None = None) -> DeriveRequest:
    """Approve a pending request; a worker then creates the child agent (agents.derive_child)."""
    request = lock_row(DeriveRequest, request.pk)
    _derive_request_decide(request, DeriveRequest.Status.APPROVED, user=user, comment=comment, evidence=evidence)
    send_after_commit("agents.derive_child", request.pk)
    return request


@transaction.atomic
def derive_request_reject(*, request: DeriveRequest, user, comment: str = "",
                          evidence: str | None = None) -> DeriveRequest:
    request = lock_row(DeriveRequest, request.pk)
    _derive_request_decide(request, DeriveRequest.Status.REJECTED, user=user, comment=comment, evidence=evidence)
    return request
