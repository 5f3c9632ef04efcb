"""Exports of derive requests in their JSON form (core-data-structures §6); the shape
itself is in `quality/derive_requests/schemas.py`."""
from __future__ import annotations

from typing import Any

from agents.models import DeriveRequest


def derive_request_document(request: DeriveRequest) -> dict[str, Any]:
    """The §6 document; `evidence` (the experiment pair its decision rested on) only when recorded."""
    document = {
        "derive_request_id": request.derive_request_id,
        "parent_agent_id": request.parent_agent.agent_id,
        "trigger": request.trigger,
        "trigger_context": request.trigger_context,
        "specialization": {
            "new_name": request.new_name,
            "domain_focus": request.domain_focus,
            "additional_skills": request.additional_skills,
            "additional_constraints": request.additional_constraints,
        },
        "status": request.status,
        "result_agent_id": request.result_agent.agent_id if request.result_agent is not None else None,
    }
    if request.evidence is not None:
        document["evidence"] = request.evidence
    return document
