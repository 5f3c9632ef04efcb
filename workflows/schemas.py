"""The shapes of blueprints (core-data-structures §3.1), workflows (§4.1) and task chains
(data-transfer-protocol §7.1), and what the workflows router answers besides: lists,
validation problems, and a node's context plan (§7.2).

The document shapes are written once, here: the JSON Schema an imported or posted document
is checked against is generated from them (`engine.json_schema.document_schema`), and the
router answers with them, so the OpenAPI schema describes the same shapes. A node's inputs
(data references, transfer settings) are the engine's shapes (`engine.shapes`).
"""
from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import BaseModel, ConfigDict

from engine.shapes import Identifier, NodeInput, Omittable, Shape, Text, between

Topology = Literal["seq", "par", "dag", "state_machine"]
Name = Annotated[str, Field(min_length=1, max_length=200)]
Unit = Annotated[float, between(0, 1)]


class _Document(BaseModel):
    # A pydantic model rather than a ninja Schema: a Schema reads its input as attributes,
    # and so drops the keys it does not declare even with extra="allow".
    model_config = ConfigDict(extra="allow", populate_by_name=True)


# -- blueprints ------------------------------------------------------------------------


class BlueprintAgent(Shape):
    agent_ref: Identifier
    source: Literal["reuse", "new", "derive"]
    role_in_workflow: Omittable[str] = None


class Contract(Shape):
    data_type: Text
    # `schema` would shadow a pydantic method, hence the alias.
    contract_schema: dict[str, Any] | bool = Field(..., alias="schema", description="a JSON Schema (draft 2020-12)")


class BlueprintDocument(Shape):
    blueprint_id: Identifier
    name: Name
    version: Omittable[Text] = None
    domain: Omittable[str] = None
    agents: Omittable[list[BlueprintAgent]] = None
    contracts: Omittable[dict[str, Contract]] = Field(None, description="keyed 'agent_a → agent_b'")


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


class Layout(Shape):
    x: Omittable[float] = None
    y: Omittable[float] = None


class GateDeciders(Shape):
    roles: Omittable[list[Literal["viewer", "author", "approver", "admin"]]] = Field(
        None, description="a user holding one of these roles may decide")
    users: Omittable[list[Identifier]] = Field(None, description="these users may decide, whatever their roles")


class GateDocument(Shape):
    prompt: Omittable[Annotated[str, Field(max_length=2000)]] = Field(None, description="what the person decides")
    decisions: Omittable[Annotated[list[Literal["approve", "reject", "edit"]], Field(min_length=1)]] = Field(
        None, description="the choices offered (default: approve, reject, edit)")
    deciders: Omittable[GateDeciders] = Field(None, description="who may decide (default: authors)")
    timeout_seconds: Omittable[Annotated[int, between(1, 90 * 24 * 3600)]] = Field(
        None, description="decided by on_timeout after this long")
    on_timeout: Omittable[Literal["approve", "reject", "escalate"]] = Field(
        None, description="the decision a time-out makes (default reject); escalate sends the run to escalate_to")
    # `schema` would shadow a pydantic method, hence the alias.
    gate_schema: Omittable[dict[str, Any]] = Field(
        None, alias="schema", description="a JSON Schema (draft 2020-12) of the data a person may pass on "
                                          "(default: the node's output contract)")


class SubworkflowDocument(Shape):
    workflow_ref: Identifier = Field(..., description="the workflow the child run runs")
    version: Omittable[Annotated[int, between(1, 2**31 - 1)]] = Field(
        None, description="that version of it; left out, its latest when the child starts")


class NodeDocument(Shape):
    id: Identifier
    agent_ref: Identifier
    input_mapping: Omittable[NodeInput] = Field(
        None, description="data_references, transfer_config, and named JSONPath inputs")
    output_mapping: Omittable[dict[str, str]] = Field(None, description="state key → JSONPath over the output")
    output_schema: Omittable[str] = None
    compress: Omittable[bool] = None
    compress_model: Omittable[Text] = None
    compress_ratio: Omittable[Annotated[float, between(0.05, 1.0)]] = None
    layout: Layout | None = Field(None, description="the node's position in the graph editor")
    gate: Omittable[GateDocument] = Field(
        None, description="the run stops here for a person to approve, reject or edit its named inputs")
    subworkflow: Omittable[SubworkflowDocument] = Field(
        None, description="the node runs this workflow as a child run, its named inputs as the child's input")


class TransitionDocument(Shape):
    from_node: str = Field(..., alias="from")
    to: str
    condition: str | None = None
    on_success: str | None = None
    on_failure: str | None = None


class ErrorHandling(Shape):
    retry_count: Omittable[Annotated[int, between(0, 10)]] = None
    fallback_agent: str | None = None
    escalate_to: str | None = None


Dollars = Annotated[str, Field(pattern=r"^[0-9]{1,9}(\.[0-9]{1,6})?$",
                                description="USD as decimal text, e.g. \"0.50\" (exact: never a float)")]


class WorkflowLimits(Shape):
    max_steps: Omittable[Annotated[int, between(1, 100_000)]] = None
    max_wall_seconds: Omittable[Annotated[int, between(1, 7 * 24 * 3600)]] = None
    max_cost: Omittable[Dollars] = Field(None, description="what a run may spend on model calls; a call that "
                                                           "could cross it is not made (BUDGET_EXCEEDED)")
    max_node_cost: Omittable[Dollars] = Field(None, description="the same for each node run")
    on_budget: Omittable[Literal["fail", "escalate"]] = Field(
        None, description="what a run whose budget is reached does: fail (the default) or escalate to a person")


class QualityGate(Shape):
    accuracy: Omittable[Unit] = None
    completeness: Omittable[Unit] = None
    efficiency: Omittable[Unit] = None
    overall_score: Omittable[Unit] = None


class WorkflowEvaluation(Shape):
    judge_agent: str | None = Field(None, description="an agent that scores each run's outputs (accuracy)")
    quality_gate: QualityGate | None = Field(None, description="score → the minimum a run's evaluation must reach")


class WorkflowDocument(Shape):
    workflow_id: Identifier
    name: Name
    description: Omittable[Annotated[str, Field(max_length=2000)]] = Field(
        None, description="what the workflow does, for the people who run it (shown on its page)")
    topology: Topology
    nodes: list[NodeDocument] = Field(..., min_length=1)
    transitions: Omittable[list[TransitionDocument]] = None
    error_handling: Omittable[ErrorHandling] = None
    limits: Omittable[WorkflowLimits] = None
    domain: Omittable[Annotated[str, Field(max_length=200)]] = Field(
        None, description="the knowledge domain its runs work in (a run's input may name another)")
    evaluation: Omittable[WorkflowEvaluation] = None
    input_schema: Omittable[dict[str, Any]] = Field(
        None, description="the inputs a run must be given: a JSON Schema of the run's input (engine/inputs.py)")


class Task(Shape):
    """A task of a §7.1 task chain: a node of a `seq` workflow."""

    task_id: Identifier
    agent: Identifier
    input: Omittable[NodeInput] = None
    output_schema: Omittable[str] = None


class TaskChainDocument(Shape):
    workflow_id: Omittable[Identifier] = None
    name: Omittable[Text] = None
    task_chain: list[Task] = Field(..., min_length=1)


class WorkflowSummaryOut(Schema):
    workflow_id: str
    name: str
    topology: Topology
    node_count: int
    source_format: str = Field(..., description="'workflow', or 'task_chain' when imported from a §7.1 task chain")
    created_at: datetime
    updated_at: datetime


class WorkflowVersionOut(Schema):
    number: int
    created_at: datetime
    created_by: str = Field(..., description="who saved it (empty for a save no one signed in made)")
    note: str = Field(..., description="why it was made, e.g. 'restored from version 1'")
    runs: int = Field(..., description="how many runs ran it")
    released_at: datetime | None = Field(None, description="when it was released; null: not released")
    released_by: str = Field("", description="who released it")


class WorkflowVersionDocumentOut(WorkflowVersionOut):
    document: dict[str, Any] = Field(..., description="the workflow document (§4.1) as the version has it")


class NodeChangeOut(Schema):
    id: str
    fields: list[str] = Field(..., description="the node's fields that differ, e.g. agent_ref, input_mapping, layout")


class NodeChangesOut(Schema):
    added: list[str]
    removed: list[str]
    changed: list[NodeChangeOut]


class TransitionChangesOut(Schema):
    added: list[dict[str, Any]] = Field(..., description="transitions of b only, each with its `index` among those "
                                                         "between the same two nodes")
    removed: list[dict[str, Any]]
    changed: list[dict[str, Any]] = Field(..., description="{from, to, index, fields, a, b}")


class SettingChangeOut(Schema):
    name: str = Field(..., description="name, topology, error_handling, limits, domain or evaluation")
    a: Any
    b: Any


class JsonChangeOut(Schema):
    path: str = Field(..., description="an RFC 6901 pointer into the document")
    op: str = Field(..., description="added, removed or changed")
    a: Any
    b: Any


class WorkflowDiffOut(Schema):
    a: int = Field(..., description="the number of the version compared from")
    b: int = Field(..., description="the number of the version compared to")
    same: bool
    nodes: NodeChangesOut
    transitions: TransitionChangesOut
    settings: list[SettingChangeOut]
    json_diff: list[JsonChangeOut] = Field(..., alias="json")


class ProblemOut(_Document):
    where: str = Field(..., description="where in the document, e.g. nodes[task_b].agent_ref")
    node: str | None = Field(None, description="the node the problem concerns, if any")
    transition: int | None = Field(None, description="the index of the transition it concerns, if any")
    code: str = Field(..., description="e.g. UNKNOWN_AGENT, DANGLING_TRANSITION, CYCLE, REF_PATH_INVALID")
    message: str


class WarningOut(ProblemOut):
    code: str = Field(..., description="OUTPUT_UNREAD (nothing reads a node's output), EDGE_UNUSED (a transition "
                                       "whose target reads nothing of its source), READ_NOT_AWAITED (an input "
                                       "reads a node its node does not wait for)")


class ValidationOut(Schema):
    valid: bool = Field(..., description="no problems: a save would be taken (warnings or not)")
    problems: list[ProblemOut] = Field(..., description="each refuses a save")
    warnings: list[WarningOut] = Field(..., description="allowed, but probably not meant; never refuse a save")
    inferred_input_schema: dict[str, Any] = Field(
        ..., description="a first draft of the workflow's input_schema: every input its nodes read through "
                         "$.input paths, each required and described by the nodes that read it (engine/inputs.py)")


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
    encoding: str | None = Field(None, description="the encoding every token count of the record is in: the "
                                                   "model's, as the catalogue names it")
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
    cost_estimate: dict[str, Any] = Field(..., description="what the node's calls would cost at most: backend, model, "
                                                           "calls, tokens_in (as planned), tokens_out (assumed), cost "
                                                           "(USD; null: the model has no prices), the assumption, "
                                                           "the prices and their sources")
    model_calls_skipped: list[ModelCallOut] = Field(..., description="what a run would ask the model; a plan never does")
    waits_skipped_seconds: float = Field(..., description="retry delays (fallback_config) a run would wait; a plan "
                                                          "retries at once")
