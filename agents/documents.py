"""Exports of agents in their JSON form (core-data-structures §2.1); the shape itself is in
`agents/schemas.py`. Derive requests' (§6) are in `quality/derive_requests/documents.py`.
"""
from __future__ import annotations

import copy
from typing import Any

from pydantic import TypeAdapter

from agents.models import Agent
from core.jsonutil import iso
from engine.shapes import Identifier

ID = TypeAdapter(Identifier).json_schema()  # an identifier's JSON Schema: its type and pattern

CONTEXT_LIMIT_FIELDS = (
    "max_input_tokens",
    "max_output_tokens",
    "reserved_for_system_prompt",
    "reserved_for_instructions",
    "safety_margin",
)
# How the agent calls its tools: what a version freezes and a document carries in `runtime`.
TOOL_SETTING_FIELDS = ("max_tool_calls", "parallel_tool_calls", "tools_needing_approval")
RUNTIME_FIELDS = ("backend", "model", "encoding", "role", *TOOL_SETTING_FIELDS)


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


def agent_as_of(agent: Agent, version) -> Agent:
    """The agent as `version` (an AgentVersion of it) froze it: what a node run pinned to an
    earlier version runs. A copy, never saved."""
    content = version.content
    # A version frozen before the tool settings existed ran with their defaults.
    unset = Agent()
    runtime = {field: getattr(unset, field) for field in TOOL_SETTING_FIELDS}
    frozen = agent_with(agent, {**content, "runtime": {**runtime, **content.get("runtime", {})}})
    frozen.version = version.version
    return frozen


def agent_with(agent: Agent, parts: dict[str, Any]) -> Agent:
    """The agent with the `parts` of its versioned content given replaced (name, type,
    prompt_config, capabilities, constraints, fields of runtime and context_limits): what a
    version froze, or what an experiment runs in its place (a candidate child, another model).
    A copy, never saved."""
    changed = copy.copy(agent)
    for field in ("name", "type", "prompt_config", "capabilities", "constraints"):
        if field in parts:
            setattr(changed, field, parts[field])
    for field, value in {**parts.get("runtime", {}), **parts.get("context_limits", {})}.items():
        setattr(changed, field, value)
    return changed


def agent_document(agent: Agent) -> dict[str, Any]:
    return {
        "agent_id": agent.agent_id,
        "name": agent.name,
        "version": agent.version,
        "type": agent.type,
        "status": agent.status,
        "lineage": {
            "parent_id": agent.parent.agent_id if agent.parent is not None else None,
            "root_id": agent.root.agent_id if agent.root is not None else agent.agent_id,
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
        # The encoding its tokens are counted in: its model's, as the catalogue names it now.
        "runtime": {field: getattr(agent, field) for field in RUNTIME_FIELDS} | {"encoding": agent.token_encoding},
    }
