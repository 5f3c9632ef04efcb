"""The shapes of agents (core-data-structures §2.1), and what the agents router takes and
gives besides; the derive-request shapes (§6) are in `quality/derive_requests/schemas.py`.

The document shapes are written once, here: the JSON Schema an imported or posted document
is checked against is generated from them (`engine.json_schema.document_schema`), and the
router answers with them, so `agent_document` fills the same shapes the OpenAPI schema
describes. Keys beyond the seed (`context_limits` from data-transfer-protocol §6.1 and
`runtime`) describe what running the agent needs.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from ninja import Field, Schema

from agents.models import DEFAULT_MAX_TOOL_CALLS, MAX_TOOL_CALLS
from engine.shapes import ID_PATTERN, MAX_COLUMN_INT, Identifier, Omittable, Shape, Text, between

NO_NUL = r"^[^\x00]*$"

AgentType = Literal["meta", "business"]
AgentStatus = Literal["active", "inactive", "deprecated"]
Name = Annotated[str, Field(min_length=1, max_length=200)]
Tokens = Annotated[int, between(0, MAX_COLUMN_INT)]
PositiveTokens = Annotated[int, between(1, MAX_COLUMN_INT)]


# --- agents -----------------------------------------------------------------------

class AgentFilters(Schema):
    status: AgentStatus | None = None
    type: AgentType | None = None
    root: str | None = Field(None, pattern=ID_PATTERN, description="the root agent_id of a lineage tree")
    q: str | None = Field(None, max_length=200, pattern=NO_NUL, description="text in agent_id or name")


class Lineage(Shape):
    parent_id: Identifier | None = None
    root_id: Identifier | None = None
    level: Omittable[Tokens] = None
    children_ids: Omittable[list[Identifier]] = None


class PromptConfig(Shape):
    system_prompt: Omittable[str] = None
    role_play: Omittable[str] = None
    task_context: Omittable[str] = None
    thinking_process: Omittable[str] = None
    output_constraint: Omittable[str] = None


class Capabilities(Shape):
    skills: Omittable[list[str]] = None
    tools: Omittable[list[str]] = None
    knowledge_domains: Omittable[list[str]] = None


class Metadata(Shape):
    created_at: str | None = None
    updated_at: str | None = None
    created_by: Omittable[str] = None


class ContextLimits(Shape):
    """data-transfer-protocol §6.1: the agent's token budget."""

    max_input_tokens: Omittable[PositiveTokens] = None
    max_output_tokens: Omittable[PositiveTokens] = None
    reserved_for_system_prompt: Omittable[Tokens] = None
    reserved_for_instructions: Omittable[Tokens] = None
    available_for_data: Omittable[Tokens] = None
    safety_margin: Omittable[Annotated[float, Field(gt=0, le=1)]] = None
    effective_data_limit: Omittable[Tokens] = None
    data_area: PositiveTokens | None = None


class Runtime(Shape):
    backend: Omittable[Text] = None
    model: Omittable[str] = None
    encoding: Omittable[Text] = None
    role: Omittable[str] = None
    max_tool_calls: Omittable[Annotated[int, between(1, MAX_TOOL_CALLS)]] = Field(
        None, description=f"tool calls one node run may make (default {DEFAULT_MAX_TOOL_CALLS})")
    parallel_tool_calls: Omittable[bool] = Field(
        None, description="whether the calls one model turn asks for may run at once (default true)")
    tools_needing_approval: Omittable[list[Text]] = Field(
        None, description="tools of `capabilities.tools` whose every call waits for a person's decision")


class AgentDocument(Shape):
    """An agent as core-data-structures §2.1 (plus its runtime and §6.1 context limits)."""

    agent_id: Identifier
    name: Name
    version: Omittable[Annotated[str, Field(min_length=1, max_length=50)]] = None
    type: Omittable[AgentType] = None
    status: Omittable[AgentStatus] = None
    lineage: Omittable[Lineage] = None
    prompt_config: Omittable[PromptConfig] = None
    capabilities: Omittable[Capabilities] = None
    constraints: Omittable[list[str]] = None
    metadata: Omittable[Metadata] = None
    context_limits: Omittable[ContextLimits] = None
    runtime: Omittable[Runtime] = None


class AgentVersionOut(Schema):
    version: str
    created_at: str
    created_by: str


class LineageDetail(Lineage):
    ancestors: Omittable[list[str]] = Field(
        None, description="agent_ids from the root down to the parent; empty for a root (read-only)")


class AgentDetailOut(AgentDocument):
    """The §2.1 document, its versions (newest first) and its ancestors.

    `versions` and `lineage.ancestors` are read-only: a PUT may send them back and they
    are ignored, like `metadata`.
    """

    lineage: Omittable[LineageDetail] = None
    versions: Omittable[list[AgentVersionOut]] = Field(None, description="newest first (read-only)")
    limit_sources: Omittable[dict[str, str]] = Field(
        None, description="where max_input_tokens, max_output_tokens and the encoding came from: the document, "
                          "the model catalogue, or the default (read-only)")


class AgentVersionContentOut(Schema):
    agent_id: str
    version: str
    created_at: str
    created_by: str
    content: dict[str, Any] = Field(..., description="what the version froze: name, type, prompt_config, "
                                                      "capabilities, constraints, runtime, context_limits")
