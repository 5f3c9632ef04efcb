"""Reads for agents and derive requests, rendered in their seed shapes."""
from __future__ import annotations

import re
from typing import Any, Callable

from django.db.models import Q, QuerySet

from agents.documents import ID, agent_document, derive_request_document
from agents.models import Agent, AgentVersion, DeriveRequest
from core.errors import NotFound
from core.jsonutil import iso

_ID = re.compile(ID["pattern"])


class Rendered:
    """A queryset whose windows come out rendered, so `Page` slices and counts in SQL."""

    def __init__(self, queryset: QuerySet, render: Callable[[Any], dict[str, Any]]):
        self.queryset = queryset
        self.render = render

    def count(self) -> int:
        return self.queryset.count()

    def __getitem__(self, window: slice) -> list[dict[str, Any]]:
        return [self.render(row) for row in self.queryset[window]]


def _agents() -> QuerySet:
    return Agent.objects.select_related("parent", "root").prefetch_related("children")


def agent_list(*, status: str | None = None, type: str | None = None, root: str | None = None,
               q: str | None = None) -> Rendered:
    agents = _agents()
    if status:
        agents = agents.filter(status=status)
    if type:
        agents = agents.filter(type=type)
    if root:
        agents = agents.filter(root__agent_id=root)
    if q:
        agents = agents.filter(Q(agent_id__icontains=q) | Q(name__icontains=q))
    return Rendered(agents.order_by("agent_id"), agent_document)


def agent_get(agent_id: str) -> Agent:
    """The agent, or NotFound; an id no agent could have is simply not found."""
    agent = _agents().filter(agent_id=agent_id).first() if _ID.fullmatch(agent_id) else None
    if agent is None:
        raise NotFound(f"no agent '{agent_id}'", details={"agent_id": agent_id})
    return agent


def _ancestors(agent: Agent) -> list[str]:
    chain, ancestor = [], agent.parent
    while ancestor is not None:
        chain.append(ancestor.agent_id)
        ancestor = ancestor.parent
    return chain[::-1]


def agent_detail_document(agent: Agent) -> dict[str, Any]:
    """The §2.1 document with its versions (newest first) and its ancestors (root first)."""
    document = agent_document(agent)
    document["lineage"]["ancestors"] = _ancestors(agent)
    document["versions"] = [
        {"version": v.version, "created_at": iso(v.created_at), "created_by": v.created_by}
        for v in agent.versions.order_by("-created_at", "-id")
    ]
    return document


def agent_detail(agent_id: str) -> dict[str, Any]:
    return agent_detail_document(agent_get(agent_id))


def agent_version_get(agent_id: str, version: str) -> dict[str, Any]:
    agent = agent_get(agent_id)
    frozen = AgentVersion.objects.filter(agent=agent, version=version).first() if "\x00" not in version else None
    if frozen is None:
        known = ", ".join(agent.versions.values_list("version", flat=True))
        raise NotFound(f"agent '{agent_id}' has no version '{version}' (versions: {known})",
                       details={"agent_id": agent_id, "version": version})
    return {"agent_id": agent.agent_id, "version": frozen.version, "created_at": iso(frozen.created_at),
            "created_by": frozen.created_by, "content": frozen.content}


def derive_request_full_document(request: DeriveRequest) -> dict[str, Any]:
    """The §6 document, plus who raised it, who decided it, when, and why."""
    return derive_request_document(request) | {
        "created_at": iso(request.created_at),
        "created_by": request.created_by,
        "decided_by": request.decided_by.get_username() if request.decided_by_id else None,
        "decided_at": iso(request.decided_at),
        "comment": request.comment,
    }


def _derive_requests() -> QuerySet:
    return DeriveRequest.objects.select_related("parent_agent", "result_agent", "decided_by")


def derive_request_list(*, status: str | None = None, trigger: str | None = None,
                        parent_agent_id: str | None = None) -> Rendered:
    requests = _derive_requests()
    if status:
        requests = requests.filter(status=status)
    if trigger:
        requests = requests.filter(trigger=trigger)
    if parent_agent_id:
        requests = requests.filter(parent_agent__agent_id=parent_agent_id)
    return Rendered(requests.order_by("-created_at", "-id"), derive_request_full_document)


def derive_request_get(derive_request_id: str) -> DeriveRequest:
    found = _derive_requests().filter(derive_request_id=derive_request_id).first() if _ID.fullmatch(derive_request_id) else None
    if found is None:
        raise NotFound(f"no derive request '{derive_request_id}'", details={"derive_request_id": derive_request_id})
    return found
