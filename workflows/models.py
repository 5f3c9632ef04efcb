"""Blueprints (core-data-structures §3.1) and workflows (§4.1).

A workflow is stored as rows (nodes, transitions) so runs can point at a node, but it
is only ever written whole, through `workflows.services.workflow_save`, which
validates the graph first.
"""
from __future__ import annotations

from django.db import models
from django.utils import timezone

from agents.models import Agent, identifier


class Blueprint(models.Model):
    blueprint_id = models.CharField(max_length=100, unique=True, validators=[identifier])
    name = models.CharField(max_length=200)
    version = models.CharField(max_length=50, default="1.0.0")
    domain = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["blueprint_id"]

    def __str__(self) -> str:
        return self.blueprint_id


class BlueprintAgent(models.Model):
    class Source(models.TextChoices):
        REUSE = "reuse"
        NEW = "new"
        DERIVE = "derive"

    blueprint = models.ForeignKey(Blueprint, on_delete=models.CASCADE, related_name="agents")
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="blueprint_roles")
    source = models.CharField(max_length=10, choices=Source.choices)
    role_in_workflow = models.CharField(max_length=200, blank=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["blueprint", "position"]


class Contract(models.Model):
    """The data passed from one agent to another, as a JSON Schema checked at run time."""

    blueprint = models.ForeignKey(Blueprint, on_delete=models.CASCADE, related_name="contracts")
    key = models.CharField(max_length=250, help_text="As written in the document, e.g. 'Scholar → Validator'.")
    from_agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="+")
    to_agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="+")
    data_type = models.CharField(max_length=100)
    schema = models.JSONField(default=dict)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["blueprint", "position"]


class Workflow(models.Model):
    class Topology(models.TextChoices):
        SEQ = "seq"
        PAR = "par"
        DAG = "dag"
        STATE_MACHINE = "state_machine"

    workflow_id = models.CharField(max_length=100, unique=True, validators=[identifier])
    name = models.CharField(max_length=200)
    topology = models.CharField(max_length=20, choices=Topology.choices)
    description = models.TextField(blank=True)
    # error_handling (§4.1)
    retry_count = models.PositiveIntegerField(default=0)
    fallback_agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    escalate_to = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    # Limits of a run: a state machine may loop, so its steps are bounded.
    max_steps = models.PositiveIntegerField(default=50)
    max_wall_seconds = models.PositiveIntegerField(default=3600)
    # What a run may spend on model calls: max_cost (per run) and max_node_cost (per node run),
    # USD as decimal text, and on_budget (fail | escalate). Empty: no limit.
    cost_limits = models.JSONField(default=dict, blank=True)
    # Evaluation (core-data-structures §7): the knowledge domain its runs work in (the
    # frequency rule counts an agent's uses per domain), an optional judge agent, and an
    # optional quality gate: score name → the minimum a run's evaluation must reach.
    domain = models.CharField(max_length=200, blank=True)
    judge_agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    quality_gate = models.JSONField(null=True, blank=True)
    # What a run must be given (engine/inputs.py): a JSON Schema of its input; None takes any.
    input_schema = models.JSONField(null=True, blank=True)
    # Where the workflow came from, when it was imported in another shape (e.g. a task chain).
    source_format = models.CharField(max_length=30, default="workflow")
    # What a version must pass to be released: {"dataset": name, "thresholds": {scorer: minimum
    # mean}}, checked against the version's latest ended experiment over that dataset. None:
    # any version may be released. Set by authors (workflows.releases names who checks it).
    release_requirement = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["workflow_id"]

    def __str__(self) -> str:
        return self.workflow_id


class Node(models.Model):
    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="nodes")
    node_id = models.CharField(max_length=100, validators=[identifier])
    position = models.PositiveIntegerField(default=0)
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="nodes")
    input_mapping = models.JSONField(default=dict, blank=True)
    output_mapping = models.JSONField(default=dict, blank=True)
    output_schema = models.CharField(max_length=100, blank=True, help_text="Name of the data type the node produces.")
    # parallel-agent-compression: compress the outputs of this node's dependencies.
    compress = models.BooleanField(default=False)
    compress_model = models.CharField(max_length=100, default="flash")
    compress_ratio = models.FloatField(default=0.3)
    # Where the graph editor drew the node; None means "lay it out automatically".
    layout = models.JSONField(null=True, blank=True)
    # A gate (engine/gates.py): the run stops here for a person to approve, reject or edit.
    gate = models.JSONField(null=True, blank=True)
    # A sub-workflow node (engine/subworkflows.py): the node runs another workflow as a child run.
    subworkflow = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["workflow", "position"]
        constraints = [models.UniqueConstraint(fields=["workflow", "node_id"], name="node_id_unique_in_workflow")]

    def __str__(self) -> str:
        return f"{self.workflow.workflow_id}/{self.node_id}"


class Transition(models.Model):
    """An edge. `from`/`to` are node ids; on_success/on_failure name a node or an action."""

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="transitions")
    position = models.PositiveIntegerField(default=0)
    from_node = models.CharField(max_length=100)
    to_node = models.CharField(max_length=100)
    condition = models.TextField(null=True, blank=True)
    on_success = models.CharField(max_length=100, null=True, blank=True)
    on_failure = models.CharField(max_length=100, null=True, blank=True)

    class Meta:
        ordering = ["workflow", "position"]

    def __str__(self) -> str:
        return f"{self.from_node} → {self.to_node}"


class WorkflowVersion(models.Model):
    """A workflow as one save left it: its whole §4.1 document (node positions included),
    who saved it and when. Every save that changes a workflow adds one; none is ever deleted
    and its document never changes, so a run can keep the version it ran and a page can draw
    it long after. Only its release mark is set, once, when a person releases it."""

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    document = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=150, blank=True)
    note = models.CharField(max_length=200, blank=True, help_text="Why it was made, e.g. 'restored from version 1'.")
    released_at = models.DateTimeField(null=True, blank=True)
    released_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["workflow", "number"]
        constraints = [models.UniqueConstraint(fields=["workflow", "number"], name="version_number_unique_in_workflow")]

    def __str__(self) -> str:
        return f"{self.workflow.workflow_id} v{self.number}"
