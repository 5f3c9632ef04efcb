"""The kind of document this app brings to core's document registry: agents (derive requests'
kind is registered by `quality.derive_requests`)."""
from __future__ import annotations

from agents.documents import agent_document
from agents.models import Agent
from agents.services import agent_import_document, check_stated_children
from core.documents import Kind, register_kind


def register_document_kinds() -> None:
    register_kind(Kind("agent", "agent_id", Agent, "agent_id", agent_import_document, agent_document,
                       arrange=parents_first, check_after=check_stated_children))


def parents_first(documents: list[tuple[int | None, dict]]) -> list[tuple[int | None, dict]]:
    """Parents before children, so one list can carry a whole lineage tree."""
    by_id = {doc.get("agent_id"): (index, doc) for index, doc in documents}
    ordered, placed = [], set()

    def place(agent_id, trail=()):
        if agent_id in placed or agent_id not in by_id or agent_id in trail:
            return
        lineage = by_id[agent_id][1].get("lineage")
        parent = lineage.get("parent_id") if isinstance(lineage, dict) else None
        place(parent, trail + (agent_id,))
        placed.add(agent_id)
        ordered.append(by_id[agent_id])

    for _, doc in documents:
        place(doc.get("agent_id"))
    return ordered + [(i, d) for i, d in documents if d.get("agent_id") not in placed]
