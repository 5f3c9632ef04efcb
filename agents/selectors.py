"""Reads for agents and derive requests, rendered in their seed shapes."""
from __future__ import annotations

import difflib
import json
import re
from typing import Any

from django.db.models import Case, IntegerField, Q, QuerySet, Value, When

from agents.documents import ID, agent_document, derive_request_document
from agents.models import Agent, AgentVersion, DeriveRequest
from agents.run_readers import run_readers
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


def derive_request_evidence(trigger_context: Any) -> dict[str, Any]:
    """The trigger's context made readable: a tree of items (`text`, `link`, `list`, `table`,
    `fields`) where every string that names a stored execution, agent or evaluation is a link.

    1. Walk the context and collect the strings that could be ids (at most EVIDENCE_LIMIT).
    2. Look them up: one query per kind, so the size of the evidence never adds queries.
    3. Build the tree: an object becomes labelled fields, a list of objects sharing keys a
       table, a list of scalars a list; scalars that are known ids become links, preferring
       the kind the key names (an `execution_id` links to the run even if an agent shares it).
    """
    candidates: set[str] = set()
    stack = [trigger_context]
    while stack and len(candidates) < EVIDENCE_LIMIT:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and _ID.fullmatch(item):
            candidates.add(item)
    known = {
        "agent": set(Agent.objects.filter(agent_id__in=candidates).values_list("agent_id", flat=True)),
        **run_readers().known_ids(candidates),  # runs and evaluations: executions' rows
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
