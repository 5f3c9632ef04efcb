"""The JSON forms of agents and derive requests, exactly as core-data-structures §2.1 and §6.

Shapes are JSON Schemas so a wrong document is refused with the field it concerns.
Keys beyond the seed (`context_limits` from data-transfer-protocol §6.1 and `runtime`)
describe what running the agent needs.
"""
from __future__ import annotations

from typing import Any

from agents.models import Agent, DeriveRequest
from core.jsonutil import MAX_COLUMN_INT, iso

ID = {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,99}$"}
STRINGS = {"type": "array", "items": {"type": "string"}}
TOKENS = {"type": "integer", "minimum": 0, "maximum": MAX_COLUMN_INT}
DATETIME = {"type": ["string", "null"]}

AGENT_SHAPE: dict[str, Any] = {
    "type": "object",
    "required": ["agent_id", "name"],
    "additionalProperties": False,
    "properties": {
        "agent_id": ID,
        "name": {"type": "string", "minLength": 1, "maxLength": 200},
        "version": {"type": "string", "minLength": 1, "maxLength": 50},
        "type": {"enum": ["meta", "business"]},
        "status": {"enum": ["active", "inactive", "deprecated"]},
        "lineage": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "parent_id": {"anyOf": [ID, {"type": "null"}]},
                "root_id": {"anyOf": [ID, {"type": "null"}]},
                "level": {"type": "integer", "minimum": 0, "maximum": MAX_COLUMN_INT},
                "children_ids": {"type": "array", "items": ID},
            },
        },
        "prompt_config": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                key: {"type": "string"}
                for key in ("system_prompt", "role_play", "task_context", "thinking_process", "output_constraint")
            },
        },
        "capabilities": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"skills": STRINGS, "tools": STRINGS, "knowledge_domains": STRINGS},
        },
        "constraints": STRINGS,
        "metadata": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"created_at": DATETIME, "updated_at": DATETIME, "created_by": {"type": "string"}},
        },
        "context_limits": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_input_tokens": {"type": "integer", "minimum": 1, "maximum": MAX_COLUMN_INT},
                "max_output_tokens": {"type": "integer", "minimum": 1, "maximum": MAX_COLUMN_INT},
                "reserved_for_system_prompt": TOKENS,
                "reserved_for_instructions": TOKENS,
                "available_for_data": TOKENS,
                "safety_margin": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                "effective_data_limit": TOKENS,
                "data_area": {"anyOf": [{"type": "integer", "minimum": 1, "maximum": MAX_COLUMN_INT}, {"type": "null"}]},
            },
        },
        "runtime": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "backend": {"type": "string", "minLength": 1},
                "model": {"type": "string"},
                "encoding": {"type": "string", "minLength": 1},
                "role": {"type": "string"},
            },
        },
    },
}

DERIVE_REQUEST_SHAPE: dict[str, Any] = {
    "type": "object",
    "required": ["derive_request_id", "parent_agent_id", "trigger", "specialization"],
    "additionalProperties": False,
    "properties": {
        "derive_request_id": ID,
        "parent_agent_id": ID,
        "trigger": {"enum": ["quality_issue", "capability_gap", "frequency_threshold"]},
        "trigger_context": {"type": "object"},
        "specialization": {
            "type": "object",
            "required": ["new_name"],
            "additionalProperties": False,
            "properties": {
                "new_name": {"type": "string", "minLength": 1, "maxLength": 200},
                "domain_focus": {"type": "string"},
                "additional_skills": STRINGS,
                "additional_constraints": STRINGS,
            },
        },
        "status": {"enum": ["pending", "approved", "rejected"]},
        "result_agent_id": {"anyOf": [ID, {"type": "null"}]},
    },
}

CONTEXT_LIMIT_FIELDS = (
    "max_input_tokens",
    "max_output_tokens",
    "reserved_for_system_prompt",
    "reserved_for_instructions",
    "safety_margin",
)
RUNTIME_FIELDS = ("backend", "model", "encoding", "role")


def context_limits_document(agent: Agent) -> dict[str, Any]:
    limits = {
        "max_input_tokens": agent.max_input_tokens,
        "max_output_tokens": agent.max_output_tokens,
        "reserved_for_system_prompt": agent.reserved_for_system_prompt,
        "reserved_for_instructions": agent.reserved_for_instructions,
        "available_for_data": agent.available_for_data,
        "safety_margin": agent.safety_margin,
        "effective_data_limit": agent.effective_data_limit,
    }
    if agent.data_area is not None:
        limits["data_area"] = agent.data_area
    return limits


def versioned_content(agent: Agent) -> dict[str, Any]:
    """What a version freezes: everything that changes how the agent behaves."""
    return {
        "name": agent.name,
        "type": agent.type,
        "prompt_config": agent.prompt_config,
        "capabilities": agent.capabilities,
        "constraints": agent.constraints,
        "runtime": {field: getattr(agent, field) for field in RUNTIME_FIELDS},
        "context_limits": {field: getattr(agent, field) for field in CONTEXT_LIMIT_FIELDS}
        | {"data_area": agent.data_area},
    }


def agent_document(agent: Agent) -> dict[str, Any]:
    return {
        "agent_id": agent.agent_id,
        "name": agent.name,
        "version": agent.version,
        "type": agent.type,
        "status": agent.status,
        "lineage": {
            "parent_id": agent.parent.agent_id if agent.parent_id else None,
            "root_id": agent.root.agent_id if agent.root_id else agent.agent_id,
            "level": agent.level,
            "children_ids": agent.children_ids,
        },
        "prompt_config": agent.prompt_config,
        "capabilities": agent.capabilities,
        "constraints": agent.constraints,
        "metadata": {
            "created_at": iso(agent.created_at),
            "updated_at": iso(agent.updated_at),
            "created_by": agent.created_by,
        },
        "context_limits": context_limits_document(agent),
        "runtime": {field: getattr(agent, field) for field in RUNTIME_FIELDS},
    }


def derive_request_document(request: DeriveRequest) -> dict[str, Any]:
    return {
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
        "result_agent_id": request.result_agent.agent_id if request.result_agent_id else None,
    }
