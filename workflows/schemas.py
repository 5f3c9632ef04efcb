"""Schemas of the workflows router: blueprints (core-data-structures §3.1), workflows (§4.1),
validation problems, and a node's context plan (data-transfer-protocol §7.2).

Documents pass through whole (`_Document`: `extra="allow"`): the schemas type the seed's main fields so
that the OpenAPI schema describes them, and whatever else the document holds is kept.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema
from pydantic import BaseModel, ConfigDict

Topology = Literal["seq", "par", "dag", "state_machine"]


class _Document(BaseModel):
    # A pydantic model rather than a ninja Schema: a Schema reads its input as attributes,
    # and so drops the keys it does not declare even with extra="allow".
    model_config = ConfigDict(extra="allow", populate_by_name=True)


# -- blueprints ------------------------------------------------------------------------


class BlueprintAgentOut(_Document):
    agent_ref: str
    source: Literal["reuse", "new", "derive"]
    role_in_workflow: str = ""


class ContractOut(_Document):
    data_type: str
    # `schema` would shadow a pydantic method, hence the alias.
    contract_schema: dict[str, Any] | bool = Field(..., alias="schema", description="a JSON Schema (draft 2020-12)")


class BlueprintOut(_Document):
    blueprint_id: str
    name: str
    version: str
    domain: str = ""
    agents: list[BlueprintAgentOut]
    contracts: dict[str, ContractOut] = Field(..., description="keyed 'agent_a → agent_b'")


class BlueprintSummaryOut(Schema):
    blueprint_id: str
    name: str
    version: str
    domain: str
    agent_count: int
    contract_count: int
    created_at: datetime
    updated_at: datetime


# -- workflows -------------------------------------------------------------------------


class NodeOut(_Document):
    id: str
    agent_ref: str
    input_mapping: dict[str, Any] = Field(default_factory=dict,
                                          description="data_references, transfer_config, and named JSONPath inputs")
    output_mapping: dict[str, str] = Field(default_factory=dict)
    output_schema: str | None = None
    compress: bool = False
    compress_model: str = "flash"
    compress_ratio: float = 0.3
    layout: dict[str, float] | None = None


class TransitionOut(_Document):
    from_node: str = Field(..., alias="from")
    to: str
    condition: str | None = None
    on_success: str | None = None
    on_failure: str | None = None


class ErrorHandlingOut(_Document):
    retry_count: int = 0
    fallback_agent: str | None = None
    escalate_to: str | None = None


class WorkflowLimitsOut(_Document):
    max_steps: int
    max_wall_seconds: int


class QualityGateOut(_Document):
    accuracy: float | None = None
    completeness: float | None = None
    efficiency: float | None = None
    overall_score: float | None = None


class WorkflowEvaluationOut(_Document):
    judge_agent: str | None = Field(None, description="an agent that scores each run's outputs (accuracy)")
    quality_gate: QualityGateOut | None = Field(None, description="score → the minimum a run's evaluation must reach")


class WorkflowOut(_Document):
    workflow_id: str
    name: str
    topology: Topology
    nodes: list[NodeOut]
    transitions: list[TransitionOut] = Field(default_factory=list)
    error_handling: ErrorHandlingOut | None = None
    limits: WorkflowLimitsOut | None = None
    domain: str = Field("", description="the knowledge domain its runs work in (a run's input may name another)")
    evaluation: WorkflowEvaluationOut | None = None


class WorkflowSummaryOut(Schema):
    workflow_id: str
    name: str
    topology: Topology
    node_count: int
    source_format: str = Field(..., description="'workflow', or 'task_chain' when imported from a §7.1 task chain")
    created_at: datetime
    updated_at: datetime


class ProblemOut(_Document):
    where: str = Field(..., description="where in the document, e.g. nodes[task_b].agent_ref")
    node: str | None = Field(None, description="the node the problem concerns, if any")
    transition: int | None = Field(None, description="the index of the transition it concerns, if any")
    code: str = Field(..., description="e.g. UNKNOWN_AGENT, DANGLING_TRANSITION, CYCLE, REF_PATH_INVALID")
    message: str


class ValidationOut(Schema):
    valid: bool
    problems: list[ProblemOut]


# -- a node's context plan -------------------------------------------------------------


class PlanIn(Schema):
    outputs: dict[str, Any] | None = Field(
        None, description="node id → output to plan with; by default the latest successful outputs of the "
                          "workflow's most recent execution")
    input: dict[str, Any] | None = Field(None, description="the run's input ($.input); by default that execution's")
    state: dict[str, Any] | None = Field(None, description="the run's state ($.state); by default that execution's")


class InputBudgetOut(_Document):
    tokens: int
    priority: int
    data_type: str | None = None
    transfer_mode: str | None = None
    passed_tokens: int | None = None


class ResolutionOut(_Document):
    strategy: str = Field(..., description="none, transfer_modes or priority_based_trimming")
    actions: list[dict[str, Any]] = Field(..., description="summarize, filter_by_priority, drop, batch, compress, "
                                                           "truncate, reference: data, original and reduced tokens, reason")
    final_tokens: int
    within_limit: bool


class ContextManagementOut(_Document):
    task_id: str
    total_input_data: dict[str, InputBudgetOut]
    total_tokens: int
    context_limit: int
    overflow: int
    limits: dict[str, Any] | None = None
    resolution: ResolutionOut


class ResolvedInputOut(_Document):
    name: str
    source: dict[str, Any]
    data_type: str
    priority: int
    resolved_at: str
    resolved_tokens: int
    transfer_mode: str
    reason: str
    passed: bool
    passed_tokens: int
    batches: int
    content: Any = None


class ResolutionFailureOut(_Document):
    ref_type: str | None = None
    input: str = Field(..., description="the name of the input the reference feeds")
    error_code: str = Field(..., description="REF_NOT_FOUND, REF_TIMEOUT, REF_PERMISSION_DENIED, REF_FORMAT_ERROR, "
                                             "REF_PATH_INVALID or REF_FILTER_ERROR")
    error_message: str
    fallback_strategy: str
    fallback_value: Any = None
    attempts: int
    timestamp: str


class PlanLimitsOut(_Document):
    max_input_tokens: int
    max_output_tokens: int
    reserved_for_system_prompt: int
    reserved_for_instructions: int
    safety_margin: float
    data_area: int | None = None
    available_for_data: int
    effective_data_limit: int
    data_limit: int


class ModelCallOut(_Document):
    purpose: Literal["completion", "abstractive_summary", "compression"]
    calls: int
    note: str


class PlanOut(Schema):
    workflow_id: str
    node_id: str
    agent_ref: str
    backend: str
    model: str
    outputs_from: str | None = Field(..., description="the execution whose outputs were used; None when the body "
                                                      "gave them or no execution exists")
    outcome: Literal["ready", "would_abort"] = Field(
        ..., description="would_abort: a reference failed and its handling stops the node")
    context_management: ContextManagementOut | None = Field(..., description="the §7.2 record a run would store")
    resolved_inputs: list[ResolvedInputOut]
    resolution_failures: list[ResolutionFailureOut]
    batch_count: int = Field(..., description="backend calls the run would make, one per batch")
    limits: PlanLimitsOut = Field(..., description="the agent's token budget (§6.1)")
    compression: dict[str, Any] | None = Field(None, description="parallel-agent-compression of the dependencies")
    model_calls_skipped: list[ModelCallOut] = Field(..., description="what a run would ask the model; a plan never does")
    waits_skipped_seconds: float = Field(..., description="retry delays (fallback_config) a run would wait; a plan "
                                                          "retries at once")
