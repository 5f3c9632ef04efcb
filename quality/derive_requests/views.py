"""The derive-request pages: the queue, and one request with its evidence, its history and
(for approvers) the approve / reject form. Reads come from `selectors`; approving and
rejecting happen in the page's script, through the API (`api.py`). The templates keep the
names they had as agents' pages (`templates/agents/derive_request_*.html`, `evidence.html`)."""
from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.http import Http404
from django.shortcuts import render
from django.urls import reverse

from agents.models import DeriveRequest
from core.errors import NotFound
from core.pages import paginate
from quality.derive_requests import selectors
from quality.derive_requests.services import requested_tools, tools_not_in_catalogue


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
    unavailable = set(tools_not_in_catalogue(derive_request))
    return render(request, "agents/derive_request_detail.html", {
        "tools": [{"name": tool, "available": tool not in unavailable} for tool in requested_tools(derive_request)],
        "unavailable_tools": sorted(unavailable),
        "failures": [failure | {"url": _run_url(failure)} for failure in
                     selectors.derive_request_failures(derive_request.trigger_context)],
        "child_first_run": selectors.derive_request_child_first_run(derive_request),
        "item": derive_request,
        "evidence": _with_urls(selectors.derive_request_evidence(derive_request.trigger_context)),
        "evidence_json": json.dumps(derive_request.trigger_context, indent=2, ensure_ascii=False),
        "document": document,
        "history": [{"kind": event.kind, "label": EVENT_LABELS.get(event.kind, event.kind), "actor": event.actor,
                     "rule": _rule(event.actor), "at": event.at, "comment": event.comment}
                    for event in derive_request.events.all()],
        "raised_by_rule": _rule(derive_request.created_by),
    })


def _run_url(failure: dict[str, Any]) -> str:
    """The failed node run on its execution's page (the node's panel, that run open); "" for a
    run no longer stored."""
    if not failure["stored"]:
        return ""
    query = urlencode({"node": failure["node_id"], **({"run": failure["node_run_id"]} if failure["node_run_id"] else {})})
    return reverse("executions:detail", args=[failure["execution_id"]]) + (f"?{query}#node-panel" if failure["node_id"] else "")


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
