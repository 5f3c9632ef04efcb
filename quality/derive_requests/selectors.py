"""Reads for derive requests, for the API, the pages and the commands: the §6 document with
who raised and decided it and its history, the filtered lists, the queue, and a request's
evidence made readable.

Requests are agents' rows (`agents/models.py`); the ids their evidence names may be runs
and evaluations, executions' rows, which this package sits above and reads directly.
"""
from __future__ import annotations

import json
import re
from typing import Any

from django.db.models import Case, IntegerField, QuerySet, Value, When

from agents.documents import ID
from agents.models import Agent, DeriveRequest
from core.api_support import Rendered
from core.errors import NotFound
from core.jsonutil import iso
from executions.models import Evaluation, Execution, NodeRun
from quality.derive_requests.documents import derive_request_document

_ID = re.compile(ID["pattern"])


def derive_request_full_document(request: DeriveRequest) -> dict[str, Any]:
    """The §6 document, plus who raised it, who decided it, when, and why."""
    return derive_request_document(request) | {
        "created_at": iso(request.created_at),
        "created_by": request.created_by,
        "decided_by": request.decided_by.get_username() if request.decided_by is not None else None,
        "decided_at": iso(request.decided_at),
        "comment": request.comment,
        "result_error": request.result_error,
        "history": [{"event": event.kind, "status": event.status, "actor": event.actor, "at": iso(event.at),
                     "comment": event.comment} for event in request.events.all()],
    }


def _derive_requests() -> QuerySet:
    return DeriveRequest.objects.select_related("parent_agent", "result_agent", "decided_by").prefetch_related("events")


def derive_request_list(*, status: str | None = None, trigger: str | None = None,
                        parent_agent_id: str | None = None) -> Rendered:
    requests = _derive_requests()
    if status:
        requests = requests.filter(status=status)
    if trigger:
        requests = requests.filter(trigger=trigger)
    if parent_agent_id:
        requests = requests.filter(parent_agent__agent_id=parent_agent_id)
    return Rendered(requests.order_by("-created_at", "-id"),
                    lambda rows: [derive_request_full_document(row) for row in rows])


def derive_request_get(derive_request_id: str) -> DeriveRequest:
    found = _derive_requests().filter(derive_request_id=derive_request_id).first() if _ID.fullmatch(derive_request_id) else None
    if found is None:
        raise NotFound(f"no derive request '{derive_request_id}'", details={"derive_request_id": derive_request_id})
    return found


def derive_request_queue(*, status: str = "", trigger: str = "") -> QuerySet:
    """Derive requests for the queue: pending ones first (they wait for a person), then
    the decided ones, each newest first."""
    waiting = Case(When(status=DeriveRequest.Status.PENDING, then=Value(0)), default=Value(1),
                   output_field=IntegerField())
    requests = (DeriveRequest.objects.select_related("parent_agent", "result_agent", "decided_by")
                .annotate(waiting=waiting).order_by("waiting", "-created_at", "-id"))
    if status:
        requests = requests.filter(status=status)
    if trigger:
        requests = requests.filter(trigger=trigger)
    return requests


# What the ids in a trigger's evidence can point at, by the names a trigger_context uses.
EVIDENCE_KINDS = ("execution", "agent", "evaluation")
EVIDENCE_LIMIT = 500  # strings looked up as ids; an evidence bigger than this is shown, just not linked


def _evidence_kind_of(key: str) -> str | None:
    """The kind of id a key names: `execution_ids`, `failed_execution` → execution."""
    key = key.lower()
    return next((kind for kind in EVIDENCE_KINDS if kind in key), None)


def id_strings(value: Any, limit: int) -> set[str]:
    """The strings anywhere in a JSON value that could be ids (agents', runs', evaluations'),
    at most `limit` of them."""
    found: set[str] = set()
    stack: list[Any] = [value]
    while stack and len(found) < limit:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and _ID.fullmatch(item):
            found.add(item)
    return found


def derive_request_evidence(trigger_context: Any) -> dict[str, Any]:
    """The trigger's context made readable: a tree of items (`text`, `link`, `list`, `table`,
    `fields`) where every string that names a stored execution, agent or evaluation is a link.

    1. Walk the context and collect the strings that could be ids (at most EVIDENCE_LIMIT).
    2. Look them up: one query per kind, so the size of the evidence never adds queries.
    3. Build the tree: an object becomes labelled fields, a list of objects sharing keys a
       table, a list of scalars a list; scalars that are known ids become links, preferring
       the kind the key names (an `execution_id` links to the run even if an agent shares it).
    """
    candidates = id_strings(trigger_context, EVIDENCE_LIMIT)
    known = {
        "agent": set(Agent.objects.filter(agent_id__in=candidates).values_list("agent_id", flat=True)),
        "execution": set(Execution.objects.filter(execution_id__in=candidates).values_list("execution_id", flat=True)),
        "evaluation": set(Evaluation.objects.filter(evaluation_id__in=candidates)
                          .values_list("evaluation_id", flat=True)),
    } if candidates else {kind: set() for kind in EVIDENCE_KINDS}

    def scalar(value: Any, key: str = "") -> dict[str, Any]:
        if isinstance(value, str):
            hinted = _evidence_kind_of(key)
            kinds = ([hinted] if hinted else []) + [k for k in EVIDENCE_KINDS if k != hinted]
            for kind in kinds:
                if value in known[kind]:
                    return {"type": "link", "kind": kind, "id": value}
            return {"type": "text", "text": value}
        if isinstance(value, bool):
            return {"type": "text", "text": "yes" if value else "no"}
        if value is None:
            return {"type": "text", "text": "—"}
        if isinstance(value, float):
            return {"type": "text", "text": f"{value:.3g}"}
        return {"type": "text", "text": str(value)}

    def build(value: Any, key: str = "", depth: int = 0) -> dict[str, Any]:
        if depth > 6:  # deeper than a person reads: show it as JSON
            return {"type": "json", "text": json.dumps(value, indent=2, ensure_ascii=False)}
        if isinstance(value, dict):
            return {"type": "fields", "fields": [{"label": _label(k), "value": build(v, k, depth + 1)}
                                                  for k, v in value.items()]}
        if isinstance(value, list):
            if value and all(isinstance(row, dict) for row in value):
                columns = list(dict.fromkeys(k for row in value for k in row))
                if len(columns) <= 8 and all(not isinstance(v, (dict, list)) for row in value for v in row.values()):
                    return {"type": "table", "columns": [_label(c) for c in columns],
                            "rows": [[scalar(row.get(c), c) if c in row else {"type": "text", "text": ""}
                                      for c in columns] for row in value]}
            singular = key[:-1] if key.endswith("s") else key
            return {"type": "list", "items": [build(item, singular, depth + 1) for item in value]}
        return scalar(value, key)

    return build(trigger_context if trigger_context is not None else {})


def _label(key: Any) -> str:
    return str(key).replace("_", " ")


def derive_request_failures(trigger_context: Any) -> list[dict[str, Any]]:
    """The failed node runs a capability gap's evidence names (`failures`: each an
    execution_id, a node_id and, for requests raised since runs were named, a node_run_id),
    each with whether its run is still stored (one query, however many there are)."""
    listed = trigger_context.get("failures") if isinstance(trigger_context, dict) else None
    if not isinstance(listed, list):
        return []
    failures = [failure for failure in listed[:EVIDENCE_LIMIT]
                if isinstance(failure, dict) and isinstance(failure.get("execution_id"), str)]
    stored = set(Execution.objects.filter(execution_id__in={f["execution_id"] for f in failures})
                 .values_list("execution_id", flat=True)) if failures else set()
    return [{"execution_id": failure["execution_id"], "node_id": str(failure.get("node_id") or ""),
             "node_run_id": failure.get("node_run_id") if isinstance(failure.get("node_run_id"), int) else None,
             "error": str(failure.get("error") or ""), "stored": failure["execution_id"] in stored}
            for failure in failures]


def derive_request_child_first_run(request: DeriveRequest) -> NodeRun | None:
    """The first node run of the request's child agent (its execution with it), or None
    before the child exists or runs: where to see whether the derivation helped."""
    if request.result_agent_id is None:
        return None
    return (NodeRun.objects.filter(agent_id=request.result_agent_id).select_related("execution")
            .only("id", "node_id", "status", "execution__execution_id", "execution__status")
            .order_by("id").first())
