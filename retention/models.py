"""A workflow's own retention rule, and what is left of a run whose details retention removed."""
from __future__ import annotations

from django.db import models
from django.utils import timezone

from executions.models import Execution
from workflows.models import Workflow


class WorkflowRetention(models.Model):
    """A workflow's rule, set by its authors: each field None keeps the global setting of the
    same name (RETENTION_DAYS, RETENTION_FAILED_DAYS, RETENTION_SUCCESS_DETAIL_DAYS); 0 is
    "for ever" as there. A row of its own, so that the workflow's document, versions and
    imports are untouched by it."""

    workflow = models.OneToOneField(Workflow, on_delete=models.CASCADE, related_name="retention")
    days = models.PositiveIntegerField(null=True, blank=True, help_text="Ended runs are deleted this many days "
                                                                        "after they were created (0: kept for ever)")
    failed_days = models.PositiveIntegerField(null=True, blank=True, help_text="Failed runs, this many (0: as the "
                                                                               "others; never sooner than they)")
    success_detail_days = models.PositiveIntegerField(
        null=True, blank=True, help_text="Successful runs keep only their summary and cost after this many days "
                                         "(0: their details are kept as long as they are)")
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.CharField(max_length=150, blank=True)

    def __str__(self) -> str:
        return f"retention of {self.workflow.workflow_id}"


class RetainedSummary(models.Model):
    """A successful run whose node runs (outputs, prompts, context records) retention deleted:
    the figures its pages and API still show — node runs by status, tokens, calls — with when.
    The run's own row keeps its status, times, input, state, cost and evaluation. Read by the
    run's page and API through the run's reverse one-to-one `retained_summary`."""

    execution = models.OneToOneField(Execution, on_delete=models.CASCADE, related_name="retained_summary")
    removed_at = models.DateTimeField(default=timezone.now)
    summary = models.JSONField(default=dict)
    # False while its node runs are being deleted (a sweep that stopped between its batches
    # goes on with them next time).
    complete = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"details of {self.execution_id} removed {self.removed_at:%Y-%m-%d}"


class RunDeletion(models.Model):
    """A run retention has begun to delete: written, under the run's row lock, in the
    transaction that deletes its first node runs, and deleted with the run's row. While it
    exists, operations that read the run's node runs (a re-run, a comparison, a trial) are
    refused (`executions/run_details.py`), so that none reads a run half deleted; a re-run
    made before it was written keeps the run (the deletion re-checks under the lock)."""

    execution = models.OneToOneField(Execution, on_delete=models.CASCADE, related_name="retention_deletion")
    started_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"deletion of {self.execution_id} since {self.started_at:%Y-%m-%d}"
