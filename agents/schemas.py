"""What the agents router takes and gives.

Agents and derive requests answer in their seed shapes (core-data-structures §2.1, §6):
the Out schemas type the main fields and let the rest of the document through, so
`agent_document` / `derive_request_document` stay the one definition of each shape.
"""
from typing import Any, Literal

from ninja import Field, Schema
from pydantic import ConfigDict

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,99}$"
NO_NUL = r"^[^\x00]*$"

AgentType = Literal["meta", "business"]
AgentStatus = Literal["active", "inactive", "deprecated"]
Trigger = Literal["quality_issue", "capability_gap", "frequency_threshold"]
DeriveStatus = Literal["pending", "approved", "rejected"]


# --- agents -----------------------------------------------------------------------

class AgentFilters(Schema):
    status: AgentStatus | None = None
    type: AgentType | None = None
    root: str | None = Field(None, pattern=ID_PATTERN, description="the root agent_id of a lineage tree")
    q: str | None = Field(None, max_length=200, pattern=NO_NUL, description="text in agent_id or name")


class LineageOut(Schema):
    parent_id: str | None
    root_id: str
    level: int
    children_ids: list[str]


class LineageDetailOut(LineageOut):
    ancestors: list[str] = Field(..., description="agent_ids from the root down to the parent; empty for a root")


class MetadataOut(Schema):
    created_at: str | None
    updated_at: str | None
    created_by: str


class ContextLimitsOut(Schema):
    model_config = ConfigDict(extra="allow")

    max_input_tokens: int
    max_output_tokens: int
    reserved_for_system_prompt: int
    reserved_for_instructions: int
    available_for_data: int
    safety_margin: float
    effective_data_limit: int
    data_area: int | None = None


class RuntimeOut(Schema):
    backend: str
    model: str
    encoding: str
    role: str


class AgentOut(Schema):
    """An agent as core-data-structures §2.1 (plus its runtime and §6.1 context limits)."""

    model_config = ConfigDict(extra="allow")

    agent_id: str
    name: str
    version: str
    type: AgentType
    status: AgentStatus
    lineage: LineageOut
    prompt_config: dict[str, str]
    capabilities: dict[str, list[str]]
    constraints: list[str]
    metadata: MetadataOut
    context_limits: ContextLimitsOut
    runtime: RuntimeOut


class AgentVersionOut(Schema):
    version: str
    created_at: str
    created_by: str


class AgentDetailOut(AgentOut):
    """The §2.1 document, its versions (newest first) and its ancestors.

    `versions` and `lineage.ancestors` are read-only: a PUT may send them back and they
    are ignored, like `metadata`.
    """

    lineage: LineageDetailOut
    versions: list[AgentVersionOut]


class AgentVersionContentOut(Schema):
    agent_id: str
    version: str
    created_at: str
    created_by: str
    content: dict[str, Any] = Field(..., description="what the version froze: name, type, prompt_config, "
                                                      "capabilities, constraints, runtime, context_limits")


# --- derive requests ----------------------------------------------------------------

class DeriveRequestFilters(Schema):
    status: DeriveStatus | None = None
    trigger: Trigger | None = None
    parent_agent_id: str | None = Field(None, pattern=ID_PATTERN)


class SpecializationIn(Schema):
    new_name: str = Field(..., min_length=1, max_length=200)
    domain_focus: str = Field("", max_length=200)
    additional_skills: list[str] = Field(default_factory=list)
    additional_constraints: list[str] = Field(default_factory=list)


class DeriveRequestIn(Schema):
    derive_request_id: str | None = Field(None, pattern=ID_PATTERN, description="generated when absent")
    parent_agent_id: str = Field(..., pattern=ID_PATTERN)
    trigger: Trigger
    trigger_context: dict[str, Any] = Field(default_factory=dict)
    specialization: SpecializationIn


class DecisionIn(Schema):
    comment: str = Field("", max_length=5000)


class SpecializationOut(Schema):
    new_name: str
    domain_focus: str
    additional_skills: list[str]
    additional_constraints: list[str]


class DeriveRequestEventOut(Schema):
    event: str = Field(..., description="raised, approved, rejected, child_created or child_failed")
    status: DeriveStatus = Field(..., description="the request's status after the event")
    actor: str = Field(..., description="a username, or rule:<trigger> for a request a rule raised")
    at: str
    comment: str


class DeriveRequestOut(Schema):
    """A derive request as core-data-structures §6, plus who raised and who decided it."""

    model_config = ConfigDict(extra="allow")

    derive_request_id: str
    parent_agent_id: str
    trigger: Trigger
    trigger_context: dict[str, Any]
    specialization: SpecializationOut
    status: DeriveStatus
    result_agent_id: str | None
    created_at: str
    created_by: str
    decided_by: str | None = Field(..., description="the approver's username; null while pending")
    decided_at: str | None
    comment: str
    result_error: str = Field("", description="why creating the child agent failed, if it did")
    history: list[DeriveRequestEventOut] = Field(default_factory=list, description="every event, oldest first")
