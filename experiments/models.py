"""Datasets, and the experiments run over them.

Datasets: a named list of items, kept as immutable versions.

Every change (an import, a run added as an item, an item removed) makes the dataset's next
`DatasetVersion` with all its items as rows of their own (`DatasetItem`); a version and its
items are never changed afterwards, so an experiment can name the version it ran over.

Experiments: a workflow version run over a dataset version, item by item, each item a real
run (`ExperimentItem.execution`), scored by the experiment's scorers when it ends. Both
statuses follow the state machines below, changed only through core.status_writes.
"""
from __future__ import annotations

from django.db import models
from django.utils import timezone

from agents.models import identifier
from core.state_machine import StateMachine
from executions.models import Execution
from workflows.models import Workflow, WorkflowVersion


class Immutable(models.Model):
    """A row written once: saving it again is refused (a change is a new version)."""

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise ValueError(f"{type(self).__name__} rows are never changed: a change makes a new version")
        super().save(*args, **kwargs)


class Dataset(models.Model):
    name = models.CharField(max_length=100, unique=True, validators=[identifier])
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=150, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class DatasetVersion(Immutable):
    class Change(models.TextChoices):
        IMPORT = "import"  # the items replaced by a file's
        APPEND = "append"  # a file's items added
        ADD_RUN = "add_run"  # a run added as an item
        REMOVE = "remove"  # an item removed

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    change = models.CharField(max_length=10, choices=Change.choices)
    note = models.CharField(max_length=200, blank=True)
    item_count = models.PositiveIntegerField(default=0)
    # The CSV columns the items came with ([{"column", "target"}], in order), kept from version
    # to version so that a CSV export writes them back; None when no CSV was imported.
    csv_columns = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["dataset", "number"]
        constraints = [models.UniqueConstraint(fields=["dataset", "number"], name="dataset_version_number_unique")]

    def __str__(self) -> str:
        return f"{self.dataset.name} v{self.number}"


class DatasetItem(Immutable):
    """One item of one version. `has_expected` keeps an absent expected apart from JSON null."""

    version = models.ForeignKey(DatasetVersion, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()
    item_id = models.CharField(max_length=200)
    input = models.JSONField(default=dict)
    has_expected = models.BooleanField(default=False)
    expected = models.JSONField(null=True, blank=True)
    metadata = models.JSONField(null=True, blank=True)  # None: the item has none
    # What the items page searches: the id and the JSON of input, expected and metadata, in
    # lower case, so that a search is one LIKE over one version's rows.
    search_text = models.TextField(blank=True)

    class Meta:
        ordering = ["version", "position"]
        constraints = [
            models.UniqueConstraint(fields=["version", "position"], name="dataset_item_position_unique"),
            models.UniqueConstraint(fields=["version", "item_id"], name="dataset_item_id_unique"),
        ]

    def __str__(self) -> str:
        return self.item_id

    def document(self) -> dict:
        """The item as the files hold it: absent keys left out."""
        out: dict = {"id": self.item_id, "input": self.input}
        if self.has_expected:
            out["expected"] = self.expected
        if self.metadata is not None:
            out["metadata"] = self.metadata
        return out


class Experiment(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"  # created, not started
        RUNNING = "running"
        SUCCESS = "success"  # every item ended (each succeeded, failed or was cancelled)
        CANCELLED = "cancelled"  # by a person, or by its max_cost

    STATES = StateMachine(
        "experiment",
        {
            "pending": {"running", "cancelled"},
            "running": {"success", "cancelled"},
            "success": set(),
            "cancelled": set(),
        },
    )

    experiment_id = models.CharField(max_length=100, unique=True, validators=[identifier])
    name = models.CharField(max_length=200, blank=True)
    workflow = models.ForeignKey(Workflow, on_delete=models.PROTECT, related_name="experiments")
    workflow_version = models.ForeignKey(WorkflowVersion, on_delete=models.PROTECT, related_name="experiments")
    dataset_version = models.ForeignKey(DatasetVersion, on_delete=models.PROTECT, related_name="experiments")
    # node id → AgentVersion pk (a pin asked per agent is stored for each node that runs it).
    agent_versions = models.JSONField(default=dict, blank=True)
    # node id → the agent content parts its runs use in their agent's place (agents.documents.agent_with).
    agent_overrides = models.JSONField(default=dict, blank=True)
    # What was asked, as asked (by node or by agent), for the record and the pages.
    asked = models.JSONField(default=dict, blank=True)
    scorers = models.JSONField(default=list, blank=True)
    concurrency = models.PositiveIntegerField(default=4)
    # In units of 10⁻¹² USD (agents/backends/metering.py); None: no limit.
    max_cost = models.BigIntegerField(null=True, blank=True)
    # What the judge's calls spent, and what its calls in flight claim (the runs' costs are on them).
    judge_cost = models.BigIntegerField(default=0)
    cost_reserved = models.BigIntegerField(default=0)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    created_by = models.CharField(max_length=150, blank=True)
    cancelled_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)
    # The aggregates (engine.experiments.aggregates), refreshed as items end.
    summary = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "created_at"], name="experiment_status_created")]

    def __str__(self) -> str:
        return self.experiment_id


class ExperimentItem(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"  # its run started; it stays running until that run ended and was scored
        SUCCESS = "success"
        FAILED = "failed"
        CANCELLED = "cancelled"

    STATES = StateMachine(
        "experiment item",
        {
            "pending": {"running", "failed", "cancelled"},
            "running": {"success", "failed", "cancelled"},
            "success": set(),
            "failed": set(),
            "cancelled": set(),
        },
    )
    ENDED = ("success", "failed", "cancelled")
    ACTIVE = ("pending", "running")

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="items")
    dataset_item = models.ForeignKey(DatasetItem, on_delete=models.PROTECT, related_name="experiment_items")
    position = models.PositiveIntegerField()
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    execution = models.OneToOneField(Execution, null=True, blank=True, on_delete=models.PROTECT,
                                     related_name="experiment_item")
    # The run's output as a sub-workflow node gets it: {"state", "nodes"} (None: no run, or it failed).
    output = models.JSONField(null=True, blank=True)
    # scorer name → {"score", "reason"} | {"not_scored": code, "reason"}
    scores = models.JSONField(default=dict, blank=True)
    error_code = models.CharField(max_length=100, blank=True)
    error = models.TextField(blank=True)
    tokens = models.BigIntegerField(default=0)
    cost = models.BigIntegerField(default=0)  # units: its run's and its judge's calls
    latency_seconds = models.FloatField(null=True, blank=True)
    # Its run's node runs as engine.experiments.records.NodeRecord fields, for the aggregates.
    nodes = models.JSONField(default=list, blank=True)
    # Who scores it now (a token; "" nobody) and since when: a claim taken by a conditional
    # UPDATE before any judge is asked, so two deliveries never both pay for its scoring; one
    # whose holder went silent for EXPERIMENT_SCORING_STALE_SECONDS is taken over by the sweep.
    scoring_claim = models.CharField(max_length=64, blank=True)
    scoring_claimed_at = models.DateTimeField(null=True, blank=True)
    # Claims taken so far, and the last one's error: past EXPERIMENT_SCORING_ATTEMPTS the item
    # fails (SCORING_FAILED) rather than stay running.
    scoring_attempts = models.PositiveIntegerField(default=0)
    scoring_error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["experiment", "position"]
        constraints = [models.UniqueConstraint(fields=["experiment", "position"], name="experiment_item_position")]
        indexes = [
            # A page of items by status, and the counts by status (read from the index alone).
            models.Index(fields=["experiment", "status", "position"], name="experiment_item_status"),
            # The items running across all experiments, counted against EXPERIMENT_MAX_RUNNING_ITEMS.
            models.Index(fields=["experiment"], condition=models.Q(status="running"), name="experiment_item_running"),
        ]

    def __str__(self) -> str:
        return f"{self.experiment_id}#{self.position}"


class EvidencePair(models.Model):
    """Two experiments started together as a derive request's evidence: its parent agent as
    it is (the baseline) and the candidate child run in the parent's place, over the same
    dataset version and workflow version. The request's decision may name the pair by its
    child experiment (experiments/evidence.py)."""

    derive_request = models.ForeignKey("agents.DeriveRequest", on_delete=models.CASCADE, related_name="evidence_pairs")
    parent_experiment = models.OneToOneField(Experiment, on_delete=models.CASCADE, related_name="evidence_as_parent")
    child_experiment = models.OneToOneField(Experiment, on_delete=models.CASCADE, related_name="evidence_as_child")
    created_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["derive_request", "-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.derive_request_id}: {self.parent_experiment_id} vs {self.child_experiment_id}"
