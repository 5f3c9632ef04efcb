"""The shapes of executions (core-data-structures §5) and evaluations (§7), and the bodies
of the executions router: runs, their node runs, and evaluations.

The document shapes are written once, here: the JSON Schema an imported document is checked
against is generated from them (`engine.json_schema.document_schema`), and the router's
answers extend them. Records beyond the documents type their fields and let any further
key of the stored record through (`extra="allow"`), so that a record grown by a later
change is not cut short here. Datetimes are the seeds' strings (UTC, a trailing Z).
"""
from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import ConfigDict

from core.jsonutil import UtcDatetime
from engine.shapes import ID_PATTERN, MAX_COLUMN_INT, Identifier, Omittable, Shape, between

MAX_ROW_ID = 2**63 - 1  # the largest primary key either database holds

ExecutionStatus = Literal["pending", "running", "escalated", "waiting", "success", "failed", "cancelled"]
NodeRunStatus = Literal["pending", "running", "waiting", "success", "failed", "skipped", "cancelled"]
NodeRunKind = Literal["first", "retry", "fallback", "manual", "reused", "edited"]
TargetType = Literal["execution", "agent", "workflow"]
Action = Literal["approve", "reject", "revise"]


def when():
    return Field(None, description="ISO 8601 datetime, e.g. 2026-02-03T10:30:00Z (UTC when no offset is given)")


# A score in [0, 1]: a JSON number, not a string or a boolean.
Unit = Annotated[float, Field(ge=0, le=1, strict=True)]


class Record(Schema):
    model_config = ConfigDict(extra="allow")


# -- executions ---------------------------------------------------------------------------


class ExecutionIn(Schema):
    model_config = ConfigDict(extra="forbid")

    workflow_id: str = Field(..., pattern=ID_PATTERN, description="the workflow to run")
    input: dict[str, Any] = Field(default_factory=dict, description="the run's input: `$.input` in the node mappings")
    workflow_version: int | None = Field(None, ge=1, description="the number of the workflow version to run; "
                                                                 "by default the latest")


class ResumeIn(Schema):
    model_config = ConfigDict(extra="forbid")

    output: Any = Field(..., description="any JSON that holds to the node's contracts: stands for the output of the "
                                         "escalated node (of a gate: given by one of its deciders, as their decision)")


class GateDecisionIn(Schema):
    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "reject", "edit"] = Field(..., description="one of the decisions the gate offers")
    comment: str = Field("", max_length=5000, description="why: kept on the node run with the decision")
    output: Any = Field(None, description="with edit only: the data to pass on instead of the data shown")


class CostQuery(Schema):
    limit: int = Field(30, ge=1, le=500, description="how many of the latest runs")


class RunCostOut(Schema):
    execution_id: str
    started_at: str | None
    status: ExecutionStatus
    cost: str = Field(..., description="USD, exact")
    cost_complete: bool = Field(..., description="false when a call's model had no prices")
    tokens_in: int | None = None
    tokens_out: int | None = None


class GatesQuery(Schema):
    user: str | None = Field(None, max_length=150, pattern=r"^[\w.@+-]+$",
                             description="whose gates (admins only, for another user); default: the signed-in user")


class GateOut(Schema):
    """A gate waiting for a decision (engine/gates.py)."""

    execution_id: str
    workflow_ref: str
    node_id: str
    node_run_id: int
    prompt: str
    decisions: list[str]
    deciders: dict[str, list[str]] = Field(..., description="roles and users who may decide")
    shown: dict[str, Any] = Field(..., description="the data to decide on: the gate's named inputs, read as it opened")
    missing: list[dict[str, str]] = Field(..., description="named inputs the run did not have: name, path, error")
    opened_at: str
    decide_by: str | None = Field(..., description="when the time-out decides on_timeout; null: no time-out")
    on_timeout: str
    url: str = Field(..., description="the run's page, where the gate's panel has the form")


class RerunIn(Schema):
    model_config = ConfigDict(extra="forbid")

    from_node: str = Field(..., description="the node to run again; the outputs of the nodes before it are reused")
    step: int | None = Field(None, ge=1, description="state machine: the step of the past run's path to start at "
                                                     "(1-based); by default the last step at `from_node`")
    outputs: dict[str, Any] = Field(default_factory=dict,
                                    description="node id → the output to reuse instead of the stored one (edited); "
                                                "checked against the node's contracts; a gate's, given by one of its "
                                                "deciders only, is their decision")
    agent_versions: dict[str, str] = Field(
        default_factory=dict, description="node id → the agent version its runs use (a version name, or `current`); "
                                          "by default each node runs the version it ran in the past run")


class TryIn(Schema):
    model_config = ConfigDict(extra="forbid")

    execution: str | None = Field(None, pattern=ID_PATTERN,
                                  description="a run of the workflow whose outputs, input and state the node reads")
    outputs: dict[str, Any] = Field(default_factory=dict, description="node id → output, typed by hand or edited; "
                                                                      "over the execution's")
    input: dict[str, Any] | None = Field(None, description="the run's input ($.input); by default the execution's")
    state: dict[str, Any] | None = Field(None, description="the run's state ($.state); by default the execution's")
    agent_version: str | None = Field(None, description="the node agent's version to run (a version name, or "
                                                        "`current`, the default)")


class ExecutionFilters(Schema):
    workflow: str | None = Field(None, pattern=ID_PATTERN, description="runs of this workflow (its workflow_id)")
    status: ExecutionStatus | None = None
    started_after: UtcDatetime | None = when()
    started_before: UtcDatetime | None = when()
    experiment: str | None = Field(None, pattern=ID_PATTERN, description="only the runs of this experiment's items")
    with_experiments: bool = Field(False, description="experiments' runs too (left out unless asked for)")


class BulkFilter(Schema):
    """The runs list page's filters (`/executions/`): the runs they match, every one."""

    model_config = ConfigDict(extra="forbid")

    workflow: str = Field("", pattern=f"^$|{ID_PATTERN}", description="runs of this workflow (its workflow_id)")
    status: ExecutionStatus | Literal[""] = ""
    since: date | None = Field(None, description="made on this day (UTC) or after")
    until: date | None = Field(None, description="made on this day (UTC) or before")
    experiment: str = Field("", pattern=f"^$|{ID_PATTERN}", description="only the runs of this experiment's items")
    with_experiments: bool = Field(False, description="experiments' runs too (left out unless asked for)")


class BulkIn(Schema):
    model_config = ConfigDict(extra="forbid")

    action: Literal["cancel", "retry", "rerun"] = Field(
        ..., description="cancel (runs not ended), retry (escalated runs: the escalated node again) or rerun (a new "
                         "run from `from_node`, by default each run's first node)")
    execution_ids: list[Annotated[str, Field(pattern=ID_PATTERN)]] | None = Field(
        None, description="the runs to steer (at most 1,000); or `filter`")
    filter: BulkFilter | None = Field(None, description="every run these filters match (at most 1,000); or "
                                                        "`execution_ids`")
    from_node: str | None = Field(None, min_length=1, max_length=100,
                                  description="rerun: the node each run is re-run from")


class BulkResultOut(Schema):
    execution_id: str
    outcome: Literal["done", "refused"]
    code: str = Field(..., description="refused: why, as an error code (e.g. ILLEGAL_TRANSITION, NOT_FOUND)")
    message: str = Field(..., description="refused: why, in words")
    started: str | None = Field(..., description="rerun: the execution_id of the run it started")


class BulkOut(Schema):
    action: str
    asked: int = Field(..., description="runs asked for, each once")
    done: int
    refused: int
    results: list[BulkResultOut] = Field(..., description="each run's outcome, in the order asked")


class NodeRunCounts(Schema):
    pending: int = 0
    running: int = 0
    waiting: int = 0
    success: int = 0
    failed: int = 0
    skipped: int = 0
    cancelled: int = 0


class ExecutionSummaryOut(Schema):
    execution_id: str
    workflow_ref: str
    status: ExecutionStatus
    started_at: str | None
    completed_at: str | None
    ended_reason: str = Field(..., description="which limit or error ended the run (a failed node: its code and "
                                               "message), or which node ended a state machine and why; empty while "
                                               "it runs or when a seq, par or dag succeeds")
    created_at: str
    created_by: str | None
    cost: str = Field(..., description="USD, exact")
    cost_complete: bool = Field(..., description="false when a call's model had no prices")
    node_runs: NodeRunCounts = Field(..., description="the run's node runs (every attempt) by status; for a run "
                                                      "whose details retention removed, as its stored summary keeps "
                                                      "them")
    details_removed: bool = Field(..., description="whether retention removed the run's details (its node runs): "
                                                   "`node_runs` then counts what it had")


# What a node run keeps of a model turn's text and of a tool call's result (tool_loop.py).
TURN_TEXT_CHARS = 2_000
RESULT_PREVIEW_CHARS = 500
Count = Annotated[int, between(0, MAX_COLUMN_INT)]


class TurnRecord(Shape):
    """One model turn of a node whose agent has tools (executions/node_kinds/tool_loop.py)."""

    turn: Annotated[int, between(1, MAX_COLUMN_INT)]
    tokens_in: Count
    tokens_out: Count
    text: Annotated[str, Field(max_length=TURN_TEXT_CHARS)] = Field(..., description="the model's text, cut to "
                                                                                     f"{TURN_TEXT_CHARS} characters")
    tool_call_ids: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        ..., description="the calls it asked for (ids in `tool_calls`); none: the final answer")
    context: Omittable[dict[str, Any]] = Field(None, description="from turn 2 on: the §7.2 record of what the turn was "
                                                                 "given besides the prompt (the tool results)")


class ToolCallRecord(Shape):
    """One tool call of a node run: what was asked, how it ended, what came back. A call
    waiting for a person's approval (status awaiting_approval) has not run: it has neither
    server, duration nor result yet."""

    id: Annotated[str, Field(min_length=1, max_length=200)]
    turn: Annotated[int, between(1, MAX_COLUMN_INT)] = Field(..., description="the turn that asked for it")
    name: Annotated[str, Field(min_length=1, max_length=300)] = Field(..., description="server.tool")
    server: Omittable[str] = None
    tool: Omittable[str] = None
    arguments: Any = Field(..., description="as the model gave them (an object, or its text when not one)")
    status: Annotated[str, Field(pattern=r"^(success|awaiting_approval|[A-Z][A-Z0-9_]*)$")] = Field(
        ..., description="success, awaiting_approval, or the error code")
    error_code: Annotated[str, Field(pattern=r"^([A-Z][A-Z0-9_]*)?$")]
    error: str
    duration_ms: Annotated[float, Field(ge=0, le=MAX_COLUMN_INT)] | None = Field(None, description="milliseconds, "
                                                                                          "fractions kept")
    result_preview: Omittable[Annotated[str, Field(max_length=RESULT_PREVIEW_CHARS)]] = None
    result_digest: Omittable[Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]] = Field(
        None, description="of the result's JSON text (of the error, for a failed call)")
    result: Any = Field(None, description="the whole result; null when it failed or was over the size kept")
    result_kept: Omittable[bool] = None
    result_tokens: Omittable[Count] = Field(None, description="its tokens as passed to the model")
    approved_by: str | None = Field(None, description="who approved the call, for a tool that needs approval")
    decision: Omittable[dict[str, Any]] = Field(None, description="a person's decision on it, for a tool that needs "
                                                                  "approval")
    started_at: Omittable[str] = None


class ExecutionResult(Shape):
    """A `results[]` entry of §5; a node whose agent has tools adds its turns and calls."""

    node_id: Identifier
    agent_ref: Identifier
    status: NodeRunStatus
    output: Any = None
    duration_ms: Annotated[int, between(0, MAX_COLUMN_INT)] | None = None
    turns: Omittable[list[TurnRecord]] = None
    tool_calls: Omittable[list[ToolCallRecord]] = None


class ExecutionDocument(Shape):
    """A run as core-data-structures §5."""

    execution_id: Identifier
    workflow_ref: Identifier
    status: ExecutionStatus
    started_at: str | None = None
    completed_at: str | None = None
    input: Omittable[dict[str, Any]] = None
    results: Omittable[list[ExecutionResult]] = None


class ParentOut(Schema):
    execution_id: str
    node_id: str
    node_run_id: int


class ChildRunOut(Schema):
    execution_id: str
    workflow_id: str
    status: str
    cost: str = Field(..., description="USD, exact: what the child run cost, rolled up into this node run")


class NodeRunLightOut(Record):
    """One attempt of one node, light: what a table row, a timeline bar or an attempt's
    heading shows. The whole record: `full=true`, or the node run by its id."""

    node_run_id: int
    sequence: int = Field(..., description="its place among the run's node runs, from 1")
    node_id: str
    agent_ref: str
    agent_version: str | None
    kind: NodeRunKind
    round: int = Field(..., description="the node's n-th round in the run: its n-th first run (or a re-run's copy), "
                                        "with the retries and fallback after it")
    attempt: int = Field(..., description="the attempt within the round: 1, then each retry and the fallback")
    status: NodeRunStatus
    error_code: str
    error: str
    worker: str = Field(..., description="the worker that ran it; a manual run's: the person who gave its output "
                                         "on resume")
    backend: str
    model: str
    started_at: str | None
    completed_at: str | None
    duration_ms: int | None
    tokens_in: int | None
    tokens_out: int | None
    dispatches: int
    called: bool = Field(..., description="whether it called a model (its calls are in the whole record)")
    cost: str = Field(..., description="USD, exact: the sum of its priced calls")
    cost_complete: bool = Field(..., description="false when a call's model had no prices")
    reused_from: int | None = Field(..., description="a reused or edited run (a re-run's copy): the node run it "
                                                     "copies, in the run this one was re-run from")
    decide_by: str | None = Field(..., description="a waiting gate's time-out")


class NodeRunOut(NodeRunLightOut):
    """One attempt of one node, whole, with what inspection shows: the §7.2 context record
    (`context_management`), resolution failures, compression and the transition taken."""

    child_run: ChildRunOut | None = Field(None, description="a sub-workflow node's run: the child run it started "
                                                            "(its record: GET /api/executions/{execution_id})")

    error_details: dict[str, Any] | None = Field(..., description="the failure's figures, e.g. BUDGET_EXCEEDED's")
    context_management: dict[str, Any] | None
    resolution_failures: list[Any]
    resolved_inputs: list[Any]
    compression: dict[str, Any] | None
    decision: dict[str, Any] | None
    gate: dict[str, Any] | None = Field(..., description="a gate's run: prompt, decisions, deciders, the data shown "
                                                         "and missing, time-out; decision, decided_by, decided_at, "
                                                         "comment, timed_out once decided; given (rerun, trial or "
                                                         "resume) when a decider gave its output other than by "
                                                         "deciding its waiting run")
    calls: list[dict[str, Any]] = Field(..., description="every model call: purpose, backend, model, tokens_in, "
                                                         "tokens_out, cached_in, usage (reported by the server, "
                                                         "counted here, or builtin), encoding (what tokens counted "
                                                         "here were counted in; null: reported), cost (USD, null: "
                                                         "not priced)")
    turns: list[dict[str, Any]] = Field(..., description="a node whose agent has tools: each model turn — turn, "
                                                         "tokens_in, tokens_out, text, tool_call_ids, context (from "
                                                         "turn 2: the §7.2 record of the tool results it was given)")
    tool_calls: list[dict[str, Any]] = Field(..., description="each tool call, in order: id, turn, name, server, tool, "
                                                              "arguments, status (success, awaiting_approval or an "
                                                              "error code), error_code, error, duration_ms, "
                                                              "result_preview, result_digest, result (null: failed or "
                                                              "over the size kept), result_kept, result_tokens, "
                                                              "approved_by, decision, started_at")
    prompt: str
    output: Any = None


class NodeRunFilters(Schema):
    node: str = Field("", max_length=100, description="only this node's runs")
    status: NodeRunStatus | Literal[""] = Field("", description="only runs with this status")
    kind: NodeRunKind | Literal[""] = Field("", description="only runs of this kind")
    since: UtcDatetime | None = Field(None, description="only runs going at some moment from then on (UTC when no "
                                                        "offset is given)")
    until: UtcDatetime | None = Field(None, description="only runs going at some moment before then")
    order: Literal["sequence", "-sequence"] = Field("sequence", description="in the order they were made, or newest "
                                                                            "first")
    full: bool = Field(False, description="whole records rather than light ones")


class TimelineQuery(Schema):
    since: UtcDatetime | None = Field(None, description="the window's start (default: the first node run's start; "
                                                        "UTC when no offset is given)")
    until: UtcDatetime | None = Field(None, description="the window's end (default: the last one's end, or now)")
    buckets: int = Field(120, ge=1, le=1000, description="the equal slices of time the window is counted in")


class TimelineLaneOut(Schema):
    node_id: str
    runs: int = Field(..., description="its runs in the window")
    buckets: list[tuple[int, dict[str, int]]] = Field(..., description="[slice, {status: runs}], the slices with runs "
                                                                       "(a run counts in the slice it started in)")


class TimelineRunOut(NodeRunLightOut):
    """A node run as the timeline draws it: light, with a mark for each tool call."""

    tool_call_marks: list[dict[str, Any]] = Field(..., description="each tool call, in order: name, status, "
                                                                   "started_at, duration_ms")


class TimelineOut(Schema):
    start: str | None = Field(..., description="when the run's first node run started")
    end: str | None = Field(..., description="when its last one completed, or now while it goes on")
    since: str | None
    until: str | None
    buckets: int
    bucket_ms: float | None
    total: int = Field(..., description="the node runs going in the window")
    lanes: list[TimelineLaneOut]
    node_runs: list[TimelineRunOut] | None = Field(..., description="the window's node runs one by one, when no "
                                                                     "more than 400; else null: count them in lanes")


class NodeLatestOut(NodeRunLightOut):
    error_details: dict[str, Any] | None
    gate: dict[str, Any] | None
    decision: dict[str, Any] | None
    output: Any = None


class NodeSummaryOut(Schema):
    node_id: str
    runs: int
    counts: dict[str, int] = Field(..., description="its runs by status (statuses it has runs in)")
    cost: str = Field(..., description="USD, exact: what its runs cost")
    cost_complete: bool
    called: bool = Field(..., description="whether any of its runs called a model")
    tokens_in: int
    tokens_out: int
    next: list[str] = Field(..., description="the nodes its runs' transitions chose (a state machine's)")
    latest: NodeLatestOut = Field(..., description="its latest run, light, with its output, error details, gate "
                                                   "and decision")


class NodeRunsSummaryOut(Schema):
    total: int
    counts: NodeRunCounts
    nodes: list[NodeSummaryOut] = Field(..., description="each node that ran, in the order it first ran")
    url: str = Field(..., description="the run's node runs, a page at a time (`GET …/node-runs`)")


class ThoughtNodeOut(Record):
    """A ThoughtNode of tot-protocol."""

    id: str
    parent_id: str | None
    children_ids: list[str]
    depth: int
    content: str
    action_type: str
    evaluation: dict[str, Any] | None = Field(..., description="score (0-10), confidence (0-1), reasoning")
    status: Literal["pending", "expanded", "pruned", "terminal"]
    metadata: dict[str, Any]


class ThoughtTreeOut(Record):
    """The ThoughtTree of tot-protocol, whole: every node, the search config and state."""

    task_id: str
    problem: str
    task_type: str
    search_config: dict[str, Any]
    nodes: dict[str, ThoughtNodeOut]
    root_id: str
    search_state: dict[str, Any] = Field(..., description="current_depth, frontier, best_path")


class CopyProgressOut(Schema):
    copied: int
    of: int


class DetailsRemovedOut(Schema):
    removed_at: str = Field(..., description="when retention removed them")
    complete: bool = Field(..., description="false while their deletion is under way")
    node_runs: dict[str, int] = Field(..., description="its node runs by status, as they were")
    total: int = Field(..., description="its node runs, as they were")
    nodes: int = Field(..., description="the nodes that ran")
    tokens_in: int
    tokens_out: int
    calls: int = Field(..., description="the model calls its node runs made")
    message: str = Field(..., description="what a person reads: the details were removed by retention")


class ExecutionOut(ExecutionDocument):
    """The §5 document (`results`: each node's latest run; with `?node_runs=all`, every node
    run, a node's turns and tool calls included), the run's state, why it ended,
    its escalation, and its node runs summarised; every node run: `GET …/node-runs`, or
    the whole record with `?node_runs=all`."""

    model_config = ConfigDict(extra="allow")

    state: dict[str, Any]
    ended_reason: str
    escalation: dict[str, Any] | None = Field(..., description="while escalated: the node, its error, who should act")
    domain: str = Field("", description="the knowledge domain: the input's `domain`, else the workflow's")
    workflow_version: int | None = Field(None, description="the number of the workflow version the run runs (null: "
                                                           "imported, or run before workflows had versions)")
    quality_gate: dict[str, Any] | None = Field(
        None, description="once evaluated, when the workflow has a gate: passed, the failed scores, the evaluation_id")
    rerun_of: str | None = Field(..., description="a re-run: the execution it was re-run from")
    parent: ParentOut | None = Field(None, description="a child run: the run and the sub-workflow node's run that "
                                                       "started it")
    rerun: dict[str, Any] | None = Field(
        ..., description="a re-run or trial: from_node (and step, in a state machine), the nodes reused (each once; "
                         "a re-run: `copies`, how many node runs it copies) and edited, "
                         "the agent versions pinned (node id → version)")
    copying: CopyProgressOut | None = Field(
        None, description="a large re-run, pending while a worker copies the node runs it reuses: how many are "
                          "copied, of how many; it starts once all are")
    trial: bool = Field(..., description="a node tried alone: not a run of the workflow, never evaluated")
    experiment: str | None = Field(None, description="a run of an experiment's item: the experiment's id")
    agent_overrides: dict[str, Any] = Field(
        default_factory=dict, description="node id → the parts of its agent's versioned content its runs used in "
                                          "their place (an experiment's candidate child agent, or another model)")
    reruns: list[str] = Field(..., description="the executions re-run from this one, oldest first")
    cost: str = Field(..., description="USD, exact: its node runs' cost and the judge's")
    cost_complete: bool = Field(..., description="false when a call's model had no prices")
    calls: list[dict[str, Any]] = Field(..., description="model calls made for the run outside its node runs: the "
                                                         "judge's")
    node_runs_summary: NodeRunsSummaryOut
    details_removed: DetailsRemovedOut | None = Field(
        None, description="a run whose details retention removed (its node runs, their outputs, prompts and "
                          "context records): when, and what they were; its cost above stays. Null for a run "
                          "with its details")


class ExecutionQuery(Schema):
    node_runs: Literal["summary", "all"] = Field(
        "summary", description="`all`: every node run in full (`node_runs`) and every one in `results`, streamed")


# -- two runs compared ---------------------------------------------------------------------

Verdict = Literal["same", "differs", "only_a", "only_b", "unverified"]


ComparisonFilter = Literal["same", "differs", "only_a", "only_b", "unverified", "not_same"]


class ComparisonQuery(Schema):
    a: str = Field(..., pattern=ID_PATTERN, description="the execution_id of one run")
    b: str = Field(..., pattern=ID_PATTERN, description="the execution_id of another run of the same workflow")
    offset: int = Field(0, ge=0, le=2**31 - 1, description="the first pair compared in full, among those the "
                                                           "filters keep")
    limit: int = Field(50, ge=1, le=500, description="how many pairs are compared in full")
    verdict: ComparisonFilter | None = Field(None, description="only the pairs with this verdict (not_same: every "
                                                               "pair that is not the same)")
    node: str | None = Field(None, pattern=ID_PATTERN, description="only the pairs of this node")


class ComparedScores(Schema):
    evaluation_id: str
    accuracy: float | None = Field(..., description="null: not measured")
    completeness: float
    efficiency: float
    overall_score: float
    passed: bool


class ComparedExecution(Schema):
    execution_id: str
    workflow_id: str
    status: ExecutionStatus
    trial: bool = Field(..., description="a node tried alone")
    started_at: str | None
    completed_at: str | None
    duration_ms: int | None
    node_runs: int = Field(..., description="node runs (every attempt)")
    tokens_in: int = Field(..., description="of all its node runs")
    tokens_out: int
    rerun_of: str | None = Field(..., description="the run this one was re-run from")
    rerun_from_node: str | None = Field(..., description="the node that re-run started from")
    evaluation: ComparedScores | None = Field(..., description="the run's computed evaluation, once scored")


class ComparedRun(Schema):
    """One side of a pair: the node run's fields (the budget bar reads `context_record`)."""

    id: int
    kind: NodeRunKind
    attempt: int
    status: NodeRunStatus
    error_code: str
    duration_ms: int | None
    tokens_in: int | None
    tokens_out: int | None
    agent: str
    agent_version: str | None
    output: Any = None
    context_record: dict[str, Any] | None


class Compared(Schema):
    """A thing both runs may hold, side by side: None for a side that lacks it."""

    a: dict[str, Any] | None
    b: dict[str, Any] | None
    changed: list[str] = Field(..., description="the fields that differ")
    differs: bool


class ComparedInput(Compared):
    name: str | None


class ComparedAction(Compared):
    data: str | None = Field(..., description="the input acted on")
    action: str | None


class ComparedFailure(Compared):
    input: str | None


class OutputDifference(Schema):
    path: str = Field(..., description="an RFC 6901 JSON Pointer into the output")
    op: Literal["added", "removed", "changed"]
    a: Any = None
    b: Any = None


class ComparedToolCall(Schema):
    """A tool call of the pair's runs, matched in the other by tool and arguments."""

    name: str | None = Field(..., description="server.tool")
    arguments: Any = None
    a: dict[str, Any] | None = Field(..., description="id, turn, status, error_code, error, duration_ms, "
                                                      "result_digest, result_preview; null: not called in run a")
    b: dict[str, Any] | None
    verdict: Literal["same_result", "different_result", "only_a", "only_b"] = Field(
        ..., description="by the results' digests")


class ComparedPair(Schema):
    """A pair compared in full. `verdict` is its place in the counts, the same on every page;
    `differs` is this comparison's own finding, which settles a pair counted `unverified`."""

    index: int = Field(..., description="the pair's place among all pairs, whatever the filters")
    node_id: str
    round: int = Field(..., description="the node's n-th first (or reused, edited) run and the attempts after it")
    attempt: int
    verdict: Verdict
    not_repeated: bool = Field(..., description="in one run only, in a round the other run copied (reused or "
                                                "edited) instead of running it: an attempt the copy did not repeat")
    a: ComparedRun | None
    b: ComparedRun | None
    changed: list[str] = Field(..., description="the node run's fields that differ; kind and duration do not count")
    differs: bool
    output_diff: list[OutputDifference]
    output_diff_truncated: bool
    inputs: list[ComparedInput] = Field(..., description="per input: transfer mode and why, tokens, batches")
    actions: list[ComparedAction] = Field(..., description="trim, summarise, batch, compress, reference …")
    failures: list[ComparedFailure] = Field(..., description="resolution failures: code and fallback")
    tool_calls: list[ComparedToolCall] = Field(..., description="the tool calls of both runs, matched by tool and "
                                                                "arguments; shown, not counted in the verdict")


class ComparedNode(Schema):
    node_id: str
    verdict: Verdict
    pairs: int
    open: int = Field(..., description="the index of the pair to show first: its first that differs (an attempt a "
                                       "copy did not repeat aside), else its first unverified, else its last")


class VerdictCounts(Schema):
    same: int
    differs: int
    only_a: int
    only_b: int
    unverified: int = Field(..., description="the light fields are the same, the output or context decisions "
                                             "stored differently, and this answer did not compare them in full")


class ComparisonCounts(Schema):
    pairs: VerdictCounts = Field(..., description="node runs")
    nodes: VerdictCounts


class ComparisonPage(Schema):
    """Which pairs `pairs` holds: from `offset`, at most `limit`, of the `count` the filters keep."""

    offset: int
    limit: int
    count: int = Field(..., description="the pairs the filters keep")
    verdict: ComparisonFilter | None
    node: str | None


class ComparisonOut(Schema):
    """Two runs of one workflow, node run by node run. `nodes` and `counts` cover every
    pair, judged on the node runs' light fields and a digest of their heavy ones; `pairs`
    holds the page of pairs `page` names, each compared in full (output diff, context
    decisions)."""

    a: ComparedExecution
    b: ComparedExecution
    workflow: dict[str, Any] = Field(..., description="workflow_id, name, topology")
    graphs: dict[str, Any] = Field(..., description="`a` and `b`: the nodes and edges of the version of the "
                                                    "workflow each run ran, to draw it on")
    nodes: list[ComparedNode]
    counts: ComparisonCounts
    page: ComparisonPage
    pairs: list[ComparedPair]


# -- evaluations --------------------------------------------------------------------------

class Scores(Shape):
    accuracy: Unit | None = Field(..., description="null: not measured (nothing in the run could be verified); the "
                                                   "overall score is then of the other two, and it does not pass")
    completeness: Unit
    efficiency: Unit


class EvaluationIn(Shape):
    """§7, as a person gives it; `evaluation_id` is made up when absent."""

    evaluation_id: Omittable[Identifier] = None
    target_type: TargetType
    target_id: Identifier = Field(..., description="an execution_id, agent_id or workflow_id that exists")
    scores: Scores
    overall_score: Unit
    passed: bool = Field(..., alias="pass", strict=True)
    feedback: Omittable[list[str]] = None
    action: Action


class EvaluationDocument(EvaluationIn):
    """An evaluation as core-data-structures §7."""

    evaluation_id: Identifier


class EvaluationOut(EvaluationDocument):
    """§7, plus how it was made and recorded."""

    model_config = ConfigDict(extra="allow")

    method: str = Field(..., description="computed (after a run), aggregate (recent evaluations combined) or manual")
    execution_id: str | None = Field(None, description="the run a computed evaluation was computed from")
    details: dict[str, Any] = Field(..., description="each score's formula and the figures it used")
    created_at: str
    updated_at: str | None
    created_by: str


class EvaluationFilters(Schema):
    target_type: TargetType | None = None
    target_id: str | None = Field(None, pattern=ID_PATTERN)
    passed: bool | None = Field(None, description="only evaluations that passed (true) or did not (false)")
    method: Literal["computed", "aggregate", "manual"] | None = Field(
        None, description="computed after a run, aggregate of a target's recent ones, or manual (given by a person)")
