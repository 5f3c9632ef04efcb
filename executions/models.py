"""Executions (core-data-structures §5), their node runs, and evaluations (§7).

The database is the source of truth for the state of a run: Celery messages carry
ids only. The statuses follow the state machines below: a row is created in its first
status by the services, and every later change is a conditional UPDATE made by
core.status_writes, which refuses what the machine does not allow.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import MD5, Cast, Coalesce, Concat
from django.utils import timezone

from agents.models import Agent, AgentVersion, identifier
from core.db_functions import JSONArrayLength
from core.state_machine import Guard, StateMachine
from workflows.models import Workflow


class Execution(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        ESCALATED = "escalated"
        WAITING = "waiting"  # nothing left to run but gates waiting for people (executions/services/gates.py)
        SUCCESS = "success"
        FAILED = "failed"
        CANCELLED = "cancelled"

    STATES = StateMachine(
        "execution",
        {
            "pending": {"running", "cancelled", "failed"},
            "running": {"success", "failed", "escalated", "cancelled", "waiting"},
            # A person resumes or retries an escalated run, or aborts it.
            "escalated": {"running", "failed", "cancelled"},
            # A person decides a gate (or its time-out does), or cancels the run.
            "waiting": {"running", "cancelled"},
            "success": set(),
            "failed": set(),
            "cancelled": set(),
        },
    )

    execution_id = models.CharField(max_length=100, unique=True, validators=[identifier])
    workflow = models.ForeignKey(Workflow, on_delete=models.PROTECT, related_name="executions")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    input = models.JSONField(default=dict, blank=True)
    state = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    ended_reason = models.CharField(max_length=200, blank=True, help_text="Which limit or error ended the run.")
    escalation = models.JSONField(null=True, blank=True, help_text="While escalated: the node, its error and who should act.")
    domain = models.CharField(max_length=200, blank=True, help_text="The knowledge domain: the input's `domain`, else the workflow's.")
    quality_gate = models.JSONField(null=True, blank=True, help_text="The workflow's gate as judged on the run's evaluation: passed, failed scores.")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    # The version of the workflow this run runs (None: imported, or run before workflows had
    # versions; such a run reads the workflow as it is now). A re-run checks that the workflow
    # has not changed shape since (engine.replay.shape_changes).
    workflow_version = models.ForeignKey("workflows.WorkflowVersion", null=True, blank=True,
                                         on_delete=models.PROTECT, related_name="executions")
    # A re-run (executions/services/rerun.py): the run it started from, and what it took from
    # it: the node it ran from (and the step, in a state machine), the outputs reused, edited
    # and the agent versions pinned.
    rerun_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="reruns")
    rerun = models.JSONField(null=True, blank=True)
    # While a large re-run's copies of the node runs it reuses are made on a worker (the run
    # is pending until they all are): what is copied and how far the copy has got
    # (executions/services/rerun.py); None otherwise.
    copying = models.JSONField(null=True, blank=True)
    # A child run: the node run of a sub-workflow node (engine/subworkflows.py) that started
    # it, and how many runs deep it is (0: started by a person or the API), held to
    # SUBWORKFLOW_MAX_DEPTH. The parent's node settles when the child ends.
    parent_node_run = models.ForeignKey("NodeRun", null=True, blank=True, on_delete=models.CASCADE,
                                        related_name="children")
    depth = models.PositiveSmallIntegerField(default=0)
    # node id → the pk of the AgentVersion its runs use (a re-run's pins); others use the latest.
    agent_versions = models.JSONField(default=dict, blank=True)
    # A node tried alone (`node_try`): one node run, no evaluation, no derive rules, not listed
    # among the workflow's runs.
    trial = models.BooleanField(default=False)
    # An item of an experiment (experiments/): the experiment's id. Such a run is test traffic:
    # its experiment scores it, it is listed among the runs only when asked for, and it moves
    # no aggregate evaluation and raises no derive request.
    experiment = models.CharField(max_length=100, blank=True, default="")
    # node id → the parts of its agent's versioned content the node's runs use in their place
    # (agents.documents.agent_with): an experiment's candidate child agent, or another model.
    agent_overrides = models.JSONField(default=dict, blank=True)
    # Time spent waiting for people (escalated, or nothing but gates open) is not the run's
    # own: it does not count against `max_wall_seconds`. `paused_at`: since when, while paused.
    paused_seconds = models.FloatField(default=0)
    paused_at = models.DateTimeField(null=True, blank=True)
    # What its model calls cost (agents/backends/metering.py), in units of 10⁻¹² USD: its node
    # runs' and the judge's; `cost_complete` is False once a call's model had no prices.
    cost = models.BigIntegerField(default=0)
    cost_complete = models.BooleanField(default=True)
    # Claimed from the run's max_cost by its judge's calls in flight (the most each may
    # cost), released when each is made; a running node run holds its calls' claims on its
    # own row (NodeRun.cost_reserved), so that a claim dies with the claim that made it.
    cost_reserved = models.BigIntegerField(default=0)
    calls = models.JSONField(default=list, blank=True, help_text="The model calls made for the run outside its "
                                                                 "node runs: the judge's")

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The list of runs, newest first: all of them, by status, by workflow, or by cost.
            models.Index(fields=["status", "created_at"]),
            models.Index(fields=["created_at", "id"], name="execution_created"),
            models.Index(fields=["workflow", "created_at", "id"], name="execution_workflow_created"),
            models.Index(fields=["cost", "created_at"], name="execution_cost"),
        ]

    def __str__(self) -> str:
        return self.execution_id

    @property
    def copy_progress(self) -> dict[str, int] | None:
        """While a re-run's reused node runs are copied on a worker: how many are, of how many."""
        if not self.copying or self.status != self.Status.PENDING:
            return None
        return {"copied": self.copying["copied"], "of": self.copying["of"]}


def _compared_texts() -> list[models.Expression]:
    """The JSON text of a node run's output, resolved inputs, resolution failures and context
    actions (`context_record.resolution.actions`) — all that `engine.comparison` compares of
    it beyond its light fields — joined by U+001F, a character JSON text never holds
    unescaped, so that two different sets of texts never join to the same text. A missing
    value is the empty text, which no JSON value is."""
    text = models.TextField()
    parts = [Cast("output", text), Cast("resolved_inputs", text), Cast("resolution_failures", text),
             Cast(models.F("context_record__resolution__actions"), text)]
    joined: list[models.Expression] = []
    for part in parts:
        if joined:
            joined.append(models.Value("\x1f", output_field=text))
        joined.append(Coalesce(part, models.Value("", output_field=text)))
    return joined


class NodeRun(models.Model):
    """One attempt of one node: a `results[]` entry of the seed plus what inspection needs."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        WAITING = "waiting"  # a gate open for a person's decision
        SUCCESS = "success"
        FAILED = "failed"
        SKIPPED = "skipped"
        CANCELLED = "cancelled"

    # A run is created pending, running (claimed for the worker that made it ready),
    # waiting (a gate), success (an output a person gave) or skipped (on_failure: skip); a
    # skipped run is never a pending one that moved, so pending → skipped is not a move.
    STATES = StateMachine(
        "node run",
        {
            # pending → cancelled: the run ended (failed, cancelled, aborted) before it started.
            "pending": {"running", "cancelled"},
            # running → pending: the sweep re-dispatches a run whose worker went silent, and a
            # worker gives back a claimed run it will not get to. running → cancelled: the run
            # was cancelled, or had ended or passed its wall time when the worker took it.
            # running → waiting: a node stopped for a person's decision on tool calls its model
            # asked for (executions/node_kinds/tool_loop.py).
            "running": {"success", "failed", "cancelled", "pending", "waiting"},
            # A gate: approved or edited (success), rejected or timed out (failed), or the run ended.
            # waiting → pending: the decision on a node's tool calls is made, and it goes on.
            "waiting": {"success", "failed", "cancelled", "pending"},
            "success": set(),
            "failed": set(),
            "skipped": set(),
            "cancelled": set(),
        },
        # A worker asks, under its execution's lock, whether any other run is still to end
        # (services/node_run.py): every run that starts or stops being one writes that row.
        guard=Guard("execution", frozenset({"pending", "running", "waiting"})),
    )

    # Still to end: a run is not finished while it has one (a gate waiting for a person too).
    ACTIVE = (Status.PENDING, Status.RUNNING, Status.WAITING)

    # Indexed as the first column of the indexes below, which serve every read by execution.
    execution = models.ForeignKey(Execution, on_delete=models.CASCADE, related_name="node_runs", db_index=False)
    node_id = models.CharField(max_length=100)
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="node_runs")
    agent_version = models.ForeignKey(AgentVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    class Kind(models.TextChoices):
        FIRST = "first"
        RETRY = "retry"
        FALLBACK = "fallback"
        MANUAL = "manual"  # an output a person gave when resuming an escalated run
        REUSED = "reused"  # a re-run's copy of its source's output (`reused_from`): not run again
        EDITED = "edited"  # the same, with the output a person edited before the re-run

    COPIES = (Kind.REUSED, Kind.EDITED)  # a re-run's copies: not runs of the agent in their own right
    RAN = (Kind.FIRST, Kind.RETRY, Kind.FALLBACK, Kind.MANUAL)  # the others: done in their execution

    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.FIRST)
    attempt = models.PositiveIntegerField(default=1)
    # A run that starts a round (a first attempt, a re-run's copy: engine/replay.ROUND_STARTS)
    # takes the next round of its node; a retry, the fallback, a skipped run and an output a
    # person gave keep the round they follow (engine/comparison.py keys runs the same way).
    round = models.PositiveIntegerField(
        default=1, db_default=1, help_text="The n-th time the run came to this node: a state machine's second "
                                           "visit is round 2; attempts count within a round.")
    sequence = models.PositiveIntegerField(default=0, help_text="Order of the run within its execution.")
    step = models.PositiveIntegerField(
        null=True, blank=True, help_text="A run that starts a step (a first attempt in a state machine, a re-run's "
                                         "copy): how many steps the run has taken with it, which max_steps bounds")
    output = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    error_code = models.CharField(max_length=50, blank=True)
    error_details = models.JSONField(null=True, blank=True, help_text="e.g. the missing skills or tools of a CAPABILITY_GAP")
    available_at = models.DateTimeField(null=True, blank=True, help_text="Not before: the backoff of a retry.")
    dispatches = models.PositiveIntegerField(default=0, help_text="Times sent to a worker (re-sent by the sweep).")
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    backend_process = models.JSONField(
        null=True, blank=True, help_text="The local process a backend started for the claim's call (pid, machine, "
                                         "start time): ended if the node run is sent again while it still runs")
    backend = models.CharField(max_length=50, blank=True)
    model = models.CharField(max_length=200, blank=True)
    tokens_in = models.PositiveIntegerField(null=True, blank=True)
    tokens_out = models.PositiveIntegerField(null=True, blank=True)
    prompt = models.TextField(blank=True)
    resolved_inputs = models.JSONField(default=list, blank=True)
    context_record = models.JSONField(null=True, blank=True, help_text="data-transfer-protocol §7.2 context_management")
    resolution_failures = models.JSONField(default=list, blank=True)
    compression = models.JSONField(null=True, blank=True, help_text="parallel-agent-compression: per dependency lines and cache hits")
    decision = models.JSONField(null=True, blank=True, help_text="The transition taken after this run, with the condition values")
    reused_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="+",
                                    help_text="A reused or edited run: the node run of the source execution it copies.")
    gate = models.JSONField(null=True, blank=True, help_text="A gate's run: what was asked, of whom, the data shown, "
                                                             "and the decision, who made it, when, the comment")
    decide_by = models.DateTimeField(null=True, blank=True, help_text="A waiting gate's time-out")
    conversation = models.JSONField(null=True, blank=True, help_text="A node waiting for a decision on tool calls: "
                                    "the conversation it goes on from once the decision is made")
    turns = models.JSONField(default=list, blank=True, help_text="A node whose agent has tools: each model turn, its "
                                                                 "tokens, its calls and its context decisions")
    tool_calls = models.JSONField(default=list, blank=True, help_text="Every tool call, in order: tool, arguments, "
                                                                      "result (preview, digest), status, duration")
    calls = models.JSONField(default=list, blank=True, help_text="Every model call: purpose, backend, model, "
                                                                 "tokens (reported or counted), cost")
    cost = models.BigIntegerField(default=0, help_text="Its priced calls' cost, in units of 10⁻¹² USD (while it "
                                                       "runs in a run with a max_cost: those made so far)")
    cost_complete = models.BooleanField(default=True, help_text="False once a call's model had no prices")
    # While it runs, in a run with a max_cost: what its calls in flight claim from the limit
    # (the most each may cost), in units. A run's spend and claims are its own `cost` and
    # `cost_reserved` and those of its running node runs (executions/services/budget.py);
    # a node run that stops running, whoever moves it, claims nothing any more.
    cost_reserved = models.BigIntegerField(default=0)
    # Kept by the database from the columns above, for the run's summary to read from an index.
    next_node = models.GeneratedField(expression=KeyTextTransform("node_id", "decision"),
                                      output_field=models.CharField(max_length=100, null=True), db_persist=True,
                                      help_text="The node the transition taken after this run chose")
    call_count = models.GeneratedField(expression=JSONArrayLength("calls"), output_field=models.IntegerField(),
                                       db_persist=True, help_text="The model calls it made")
    # And for comparing two runs from an index, whatever the size of what it digests.
    compared_digest = models.GeneratedField(
        expression=MD5(Concat(*_compared_texts(), output_field=models.TextField())),
        output_field=models.CharField(max_length=32), db_persist=True,
        help_text="md5 of the stored JSON text of what comparing two runs compares beyond the light fields "
                  "(executions/comparison.py): equal digests, equal values",
    )

    class Meta:
        ordering = ["execution", "sequence", "id"]
        indexes = [
            # A node's runs (advancing a run, the node panel), and the run's summary: its node
            # runs grouped by node and status, read from the index alone on PostgreSQL.
            models.Index(fields=["execution", "node_id", "status", "next_node"], name="noderun_node_status",
                         include=["sequence", "cost", "cost_complete", "tokens_in", "tokens_out", "call_count"]),
            # What advancing a run reads: the last sequence number, and whether any run is still
            # active; a page of the run's node runs, its ids read from the index alone; and the
            # light fields of every node run of two runs compared, in order, read from the index
            # alone too (`executions/comparison.py`), however large the outputs and records beside them.
            models.Index(fields=["execution", "sequence", "id"], name="noderun_sequence",
                         include=["node_id", "kind", "attempt", "status", "error_code", "duration_ms", "tokens_in",
                                  "tokens_out", "agent", "agent_version", "compared_digest"]),
            models.Index(fields=["execution", "status"]),
            # A node's latest runs, read from its last backwards (its latest output, whatever
            # the number of its runs before).
            models.Index(fields=["execution", "node_id", "sequence", "id"], name="noderun_node_sequence"),
            # The timeline: the runs going in a window of time, and when the run's first and last ran.
            models.Index(fields=["execution", "started_at"], name="noderun_started",
                         include=["completed_at", "node_id", "status"]),
            models.Index(fields=["execution", "completed_at"], name="noderun_completed"),
            models.Index(fields=["status", "heartbeat_at"]),  # the sweep
            models.Index(fields=["status", "decide_by"]),  # gates that time out
        ]

    def __str__(self) -> str:
        return f"{self.execution.execution_id}/{self.node_id}#{self.attempt}"


class ThoughtSearch(models.Model):
    """A Tree-of-Thoughts search (tot-protocol) performed by one node run: the ThoughtTree
    exactly as the seed, every message the roles exchanged, the stats and the outcome."""

    node_run = models.OneToOneField(NodeRun, on_delete=models.CASCADE, related_name="thought_search")
    execution = models.ForeignKey(Execution, on_delete=models.CASCADE, related_name="thought_searches")
    problem = models.TextField()
    task_type = models.CharField(max_length=50)
    tree = models.JSONField(help_text="ThoughtTree: task_id, problem, task_type, search_config, nodes, root_id, search_state")
    messages = models.JSONField(default=list, blank=True, help_text="every message, in order: from, to, type, payload, task_id")
    stats = models.JSONField(default=dict, blank=True, help_text="total_nodes, total_backtracks, llm_calls")
    final_solution = models.JSONField(null=True, blank=True, help_text="the final_solution payload, when one was found")
    error = models.JSONField(null=True, blank=True, help_text="code, message, recoverable (e.g. SEARCH_EXHAUSTED)")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"ToT {self.problem[:40]} ({self.node_run_id})"


class Evaluation(models.Model):
    class TargetType(models.TextChoices):
        EXECUTION = "execution"
        AGENT = "agent"
        WORKFLOW = "workflow"

    class Action(models.TextChoices):
        APPROVE = "approve"
        REJECT = "reject"
        REVISE = "revise"

    class Method(models.TextChoices):
        COMPUTED = "computed"  # by the rules (and judge) after a run
        AGGREGATE = "aggregate"  # an agent's or workflow's recent evaluations combined
        MANUAL = "manual"  # given by a person, or imported

    evaluation_id = models.CharField(max_length=100, unique=True, validators=[identifier])
    target_type = models.CharField(max_length=20, choices=TargetType.choices)
    target_id = models.CharField(max_length=100)
    accuracy = models.FloatField(null=True, blank=True, help_text="Null: not measured (the run had nothing "
                                                                   "verifiable); `details` says so.")
    completeness = models.FloatField()
    efficiency = models.FloatField()
    overall_score = models.FloatField()
    passed = models.BooleanField()
    feedback = models.JSONField(default=list, blank=True)
    action = models.CharField(max_length=10, choices=Action.choices)
    method = models.CharField(max_length=10, choices=Method.choices, default=Method.MANUAL)
    execution = models.ForeignKey(Execution, null=True, blank=True, on_delete=models.CASCADE, related_name="evaluations",
                                  help_text="The run a computed evaluation was computed from.")
    workflow = models.ForeignKey(Workflow, null=True, blank=True, on_delete=models.PROTECT, related_name="evaluations",
                                 help_text="The workflow an evaluation of a workflow names: it keeps the workflow "
                                           "from being deleted.")
    details = models.JSONField(default=dict, blank=True, help_text="Each score's formula and the figures it used.")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["target_type", "target_id", "created_at"])]
        constraints = [
            # A run is evaluated once per target however often the task is delivered.
            models.UniqueConstraint(fields=["execution", "target_type", "target_id"],
                                    condition=models.Q(method="computed"), name="one_computed_evaluation_per_target"),
            models.UniqueConstraint(fields=["target_type", "target_id"], condition=models.Q(method="aggregate"),
                                    name="one_aggregate_evaluation_per_target"),
        ]

    def __str__(self) -> str:
        return self.evaluation_id
