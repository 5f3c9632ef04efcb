"""Reads for agents, rendered in their seed shape; derive requests' are in
`quality/derive_requests/selectors.py`."""
from __future__ import annotations

import difflib
import json
import re
from typing import Any

from django.db.models import Q, QuerySet

from agents.documents import ID, agent_document
from agents.models import Agent, AgentVersion, DeriveRequest
from core.api_support import Rendered
from core.errors import NotFound, echo
from core.jsonutil import iso

_ID = re.compile(ID["pattern"])


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
    return Rendered(agents.order_by("agent_id"), lambda rows: [agent_document(row) for row in rows])


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
    document["limit_sources"] = agent.limit_sources
    return document


def agent_detail(agent_id: str) -> dict[str, Any]:
    return agent_detail_document(agent_get(agent_id))


def agent_version_get(agent_id: str, version: str) -> dict[str, Any]:
    agent = agent_get(agent_id)
    frozen = AgentVersion.objects.filter(agent=agent, version=version).first() if "\x00" not in version else None
    if frozen is None:
        known = ", ".join(agent.versions.values_list("version", flat=True))
        raise NotFound(f"agent '{agent_id}' has no version '{echo(version)}' (versions: {known})",
                       details={"agent_id": agent_id, "version": echo(version)})
    return {"agent_id": agent.agent_id, "version": frozen.version, "created_at": iso(frozen.created_at),
            "created_by": frozen.created_by, "content": frozen.content}


# --- reads for the pages --------------------------------------------------------------
# Each page is drawn from a fixed number of queries, whatever the size of the family,
# the number of versions or of the runs an agent took part in: lists are cut to a window
# and nothing is read per row.

PROMPT_PARTS = ("system_prompt", "role_play", "task_context", "thinking_process", "output_constraint")
FAMILY_LIMIT = 300   # agents drawn in one lineage tree
PAGE_WINDOW = 20     # executions, evaluations and derive requests shown on an agent's page


def agent_for_page(agent_id: str) -> Agent:
    """The agent with its parent and root (no children, versions or documents), or NotFound."""
    agent = Agent.objects.select_related("parent", "root").filter(agent_id=agent_id).first() \
        if _ID.fullmatch(agent_id) else None
    if agent is None:
        raise NotFound(f"no agent '{agent_id}'", details={"agent_id": agent_id})
    return agent


def lineage_family(agent: Agent) -> dict[str, Any]:
    """The whole family of `agent`, from its root down, in one query.

    `nodes` come in tree order (each after its parent, siblings by id) with their depth,
    so a page can draw the tree or indent a list; `truncated` says the family was larger
    than FAMILY_LIMIT.
    """
    root_pk = agent.root_id or agent.pk
    rows = list(Agent.objects.filter(Q(root_id=root_pk) | Q(pk=root_pk))
                .order_by("level", "agent_id")
                .values("pk", "agent_id", "name", "version", "status", "type", "parent_id", "level")[:FAMILY_LIMIT + 1])
    truncated = len(rows) > FAMILY_LIMIT
    rows = rows[:FAMILY_LIMIT]
    by_pk = {row["pk"]: row for row in rows}
    children: dict[int | None, list[Any]] = {}
    for row in rows:
        parent = row["parent_id"] if row["parent_id"] in by_pk else None
        children.setdefault(parent, []).append(row)
    ordered: list[dict[str, Any]] = []
    stack = [(row, 0) for row in reversed(children.get(None, []))]
    while stack:
        row, depth = stack.pop()
        ordered.append({
            "agent_id": row["agent_id"], "name": row["name"], "version": row["version"], "status": row["status"],
            "type": row["type"], "depth": depth, "current": row["pk"] == agent.pk,
            "parent_id": by_pk[row["parent_id"]]["agent_id"] if row["parent_id"] in by_pk else None,
        })
        stack.extend((child, depth + 1) for child in reversed(children.get(row["pk"], [])))
    return {"nodes": ordered, "truncated": truncated}


def agent_version_list(agent: Agent) -> list[dict[str, Any]]:
    """The agent's versions, newest first, without what they froze."""
    return [dict(row) for row in AgentVersion.objects.filter(agent=agent).order_by("-created_at", "-id")
            .values("version", "created_at", "created_by")]


def _pretty(value: Any) -> list[str]:
    if isinstance(value, dict) and set(value) <= set(PROMPT_PARTS):  # the seed's order, not the alphabet's
        value = {key: value[key] for key in PROMPT_PARTS if key in value}
    return json.dumps(value, indent=2, ensure_ascii=False).splitlines()


def agent_version_diff(agent: Agent, older: str, newer: str) -> dict[str, Any]:
    """A unified diff of `prompt_config` between two versions (pretty-printed JSON), each line
    with its kind (`header`, `hunk`, `add`, `remove`, `context`), and which other parts of
    what the versions froze differ (capabilities, runtime, ...)."""
    contents = dict(AgentVersion.objects.filter(agent=agent, version__in=[older, newer]).values_list("version", "content"))
    before, after = contents.get(older, {}), contents.get(newer, {})
    lines = []
    for line in difflib.unified_diff(_pretty(before.get("prompt_config", {})), _pretty(after.get("prompt_config", {})),
                                     fromfile=f"{agent.agent_id} {older}", tofile=f"{agent.agent_id} {newer}",
                                     lineterm="", n=3):
        if line.startswith(("---", "+++")):
            kind = "header"
        elif line.startswith("@@"):
            kind = "hunk"
        else:
            kind = {"+": "add", "-": "remove"}.get(line[:1], "context")
        lines.append({"kind": kind, "text": line})
    others = sorted(key for key in set(before) | set(after)
                    if key != "prompt_config" and before.get(key) != after.get(key))
    return {"older": older, "newer": newer, "lines": lines, "other_changes": others}


def agent_derive_requests(agent: Agent, *, limit: int = PAGE_WINDOW) -> dict[str, Any]:
    """Requests to derive a child from the agent, and the request it came from (if any)."""
    raised = list(DeriveRequest.objects.filter(parent_agent=agent).select_related("result_agent", "decided_by")
                  .order_by("-created_at", "-id")[:limit])
    origin = DeriveRequest.objects.filter(result_agent=agent).order_by("-decided_at", "-id").first()
    return {"raised": raised, "origin": origin}
