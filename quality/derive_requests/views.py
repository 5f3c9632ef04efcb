"""The derive-request pages: the queue, and one request with its evidence, its history and
(for approvers) the approve / reject form. Reads come from `selectors`; approving and
rejecting happen in the page's script, through the API (`api.py`). The templates keep the
names they had as agents' pages (`templates/agents/derive_request_*.html`, `evidence.html`)."""
from __future__ import annotations

import json
from typing import Any

from django.http import Http404
from django.shortcuts import render
from django.urls import reverse

from agents.models import DeriveRequest
from core.errors import NotFound
from core.pages import paginate
from quality.derive_requests import selectors


def derive_request_list(request):
    filters = {key: request.GET.get(key, "").strip() for key in ("status", "trigger")}
    requests = selectors.derive_request_queue(**filters)
    return render(request, "agents/derive_request_list.html", {
        **paginate(request, requests), "filters": filters,
        "statuses": DeriveRequest.Status.choices, "triggers": DeriveRequest.Trigger.choices,
    })


EVIDENCE_URLS = {"execution": "executions:detail", "agent": "agents:detail", "evaluation": "evaluations:detail"}
# What each event of a request's history is called on its page (derive_requests.js: the same).
EVENT_LABELS = {"raised": "Raised", "approved": "Approved", "rejected": "Rejected",
                "child_created": "Child agent created", "child_failed": "Creating the child agent failed"}


def _rule(actor: str) -> str:
    """The trigger a rule acted for ("rule:quality_issue" → "quality issue"); "" for a person."""
    return actor.removeprefix("rule:").replace("_", " ") if actor.startswith("rule:") else ""


def derive_request_detail(request, derive_request_id: str):
    try:
        derive_request = selectors.derive_request_get(derive_request_id)
    except NotFound as error:
        raise Http404(error.message) from None
    document = selectors.derive_request_full_document(derive_request)
    return render(request, "agents/derive_request_detail.html", {
        "item": derive_request,
        "evidence": _with_urls(selectors.derive_request_evidence(derive_request.trigger_context)),
        "evidence_json": json.dumps(derive_request.trigger_context, indent=2, ensure_ascii=False),
        "document": document,
        "history": [{"kind": event.kind, "label": EVENT_LABELS.get(event.kind, event.kind), "actor": event.actor,
                     "rule": _rule(event.actor), "at": event.at, "comment": event.comment}
                    for event in derive_request.events.all()],
        "raised_by_rule": _rule(derive_request.created_by),
    })


def _with_urls(item: dict[str, Any]) -> dict[str, Any]:
    """Give each link of the evidence tree its address."""
    stack = [item]
    while stack:
        node = stack.pop()
        kind = node.get("type")
        if kind == "link":
            node["url"] = reverse(EVIDENCE_URLS[node["kind"]], args=[node["id"]])
        elif kind == "fields":
            stack.extend(field["value"] for field in node["fields"])
        elif kind == "list":
            stack.extend(node["items"])
        elif kind == "table":
            stack.extend(cell for row in node["rows"] for cell in row)
    return item
