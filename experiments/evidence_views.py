"""The pages of evidence where decisions are made: a derive request's "Parent vs child" (start
the pair, follow both experiments, read their comparison, approve or reject on it), and the
release of a workflow version from its versions list. Writes are forms posted here (CSRF),
done by the same services as the API's and the commands'; a refusal shows its message on
the page with nothing stored."""
from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from agents.models import DeriveRequest
from core.errors import NotFound, SwitchyardError
from core.roles import ADMIN, APPROVER, has_role
from experiments import evidence
from experiments.models import Dataset
from experiments.releases import workflow_version_release
from quality.derive_requests import selectors, services

DEFAULT_SCORERS = '[{"type": "contains"}]'
STATUS_BY_CODE = {"FORBIDDEN": 403, "NOT_FOUND": 404, "CONFLICT": 409, "ILLEGAL_TRANSITION": 409}


def _request(derive_request_id: str) -> DeriveRequest:
    try:
        return selectors.derive_request_get(derive_request_id)
    except NotFound as error:
        raise Http404(error.message) from None


def evidence_page(request, derive_request_id: str, *, error: str = "", form: dict | None = None, status: int = 200):
    item = _request(derive_request_id)
    pairs = []
    for pair in evidence.evidence_pairs(item):
        document = evidence.pair_document(pair)
        roles = [("Parent (baseline)", document["parent_experiment"]), ("Child", document["child_experiment"])]
        pairs.append({"pair": pair, "roles": roles, **document})
    try:
        default_workflow, no_workflow = evidence.default_workflow(item).workflow_id, ""
    except SwitchyardError as refused:
        default_workflow, no_workflow = "", refused.message
    latest = pairs[0] if pairs else None
    return render(request, "experiments/evidence.html", {
        "item": item, "pairs": pairs, "latest": latest, "error": error,
        "refresh_url": f"/api/derive-requests/{quote(item.derive_request_id)}/parent-vs-child",
        "running": any(not (p["parent_experiment"]["done"] and p["child_experiment"]["done"]) for p in pairs),
        "datasets": list(Dataset.objects.order_by("name").values_list("name", flat=True)),
        "workflows": list(evidence.workflows_running(item).values_list("workflow_id", flat=True)),
        "no_workflow": no_workflow,
        "form": form or {"workflow_id": default_workflow, "scorers": DEFAULT_SCORERS},
        "can_start": has_role(request.user, ADMIN) and item.status == DeriveRequest.Status.PENDING,
        "can_decide": has_role(request.user, APPROVER) and item.status == DeriveRequest.Status.PENDING,
        "compare_url": (reverse("experiment_compare:page") + f"?ids={latest['parent_experiment']['experiment_id']},"
                        f"{latest['child_experiment']['experiment_id']}") if latest else "",
    }, status=status)


@require_POST
def evidence_start(request, derive_request_id: str):
    item = _request(derive_request_id)
    form = {key: request.POST.get(key, "").strip() for key in ("dataset", "dataset_version", "workflow_id", "scorers")}
    try:
        scorers = _json(form["scorers"], "scorers")
        version = _number(form["dataset_version"], "dataset_version")
        evidence.parent_vs_child_start(request=item, dataset=form["dataset"], dataset_version=version,
                                       workflow_id=form["workflow_id"] or None, scorers=scorers, user=request.user)
    except SwitchyardError as refused:
        return evidence_page(request, derive_request_id, error=str(refused), form=form,
                             status=STATUS_BY_CODE.get(refused.code, 400))
    return redirect(reverse("evidence:derive_request", args=[item.derive_request_id]))


@require_POST
def evidence_decide(request, derive_request_id: str):
    item = _request(derive_request_id)
    decision = request.POST.get("decision", "")
    comment, experiment_id = request.POST.get("comment", ""), request.POST.get("evidence", "").strip()
    decide = {"approve": services.derive_request_approve, "reject": services.derive_request_reject}.get(decision)
    try:
        if decide is None:
            raise SwitchyardError("decision: is approve or reject", code="INVALID_DOCUMENT")
        decide(request=item, user=request.user, comment=comment, evidence=experiment_id or None)
    except SwitchyardError as refused:
        return evidence_page(request, derive_request_id, error=str(refused), status=STATUS_BY_CODE.get(refused.code, 400))
    return redirect(reverse("derive_requests:detail", args=[item.derive_request_id]))


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise SwitchyardError(f"{where}: is JSON ({error.msg} at line {error.lineno}, column {error.colno})",
                              code="INVALID_DOCUMENT") from None


def _number(text: str, where: str) -> int | None:
    if not text:
        return None
    if not text.isdigit() or not 0 < int(text) < 2**31:
        raise SwitchyardError(f"{where}: is a version number, or empty for the latest", code="INVALID_DOCUMENT")
    return int(text)


@require_POST
def version_release(request, workflow_id: str, number: int):
    """Release a version from the workflow's versions list, then back to that list; a refusal
    is a page of its own naming what failed, nothing stored."""
    try:
        workflow_version_release(workflow_id=workflow_id, number=number, user=request.user)
    except SwitchyardError as refused:
        if refused.code == "NOT_FOUND":
            raise Http404(refused.message) from None
        return render(request, "experiments/release_refused.html", {
            "message": str(refused), "workflow_id": workflow_id, "number": number,
            "problems": (refused.details or {}).get("problems", []) if isinstance(refused.details, dict) else [],
        }, status=STATUS_BY_CODE.get(refused.code, 409))
    return redirect(reverse("workflows:detail", args=[workflow_id]) + "#versions")
