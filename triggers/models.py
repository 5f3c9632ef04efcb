"""Triggers: how runs start from outside the product, and how their end is told back.

- `WebhookTrigger`: a URL of its own (`/hooks/<hook_id>`) that starts a run of a workflow
  when a POST signed with its secret arrives; the secret is kept sealed (signing.py), since
  checking an HMAC needs the secret itself.
- `WorkflowKey`: an API key good for one workflow's runs only; stored as a digest, as
  `core.models.ApiToken` is.
- `TriggeredRun`: which trigger or key started a run, and under which idempotency key (one
  run per key, held by unique constraints, so two concurrent repeats never start two).
- `CallbackDelivery`: a run's summary to POST to a callback URL once the run ends, and how
  each attempt went.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.state_machine import StateMachine
from executions.models import Execution
from workflows.models import Workflow

KEY_PREFIX_LENGTH = 8  # hex digits of a workflow key's prefix, which finds its row


class WebhookTrigger(models.Model):
    hook_id = models.CharField(max_length=40, unique=True)
    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="webhook_triggers")
    name = models.CharField(max_length=100)
    version = models.PositiveIntegerField(null=True, blank=True, help_text="the workflow version run; null: its latest")
    sealed_secret = models.TextField(help_text="the signing secret, encrypted with a key derived from SECRET_KEY")
    input_mapping = models.JSONField(default=dict, blank=True, help_text="run input field → JSONPath into the body")
    idempotency_path = models.CharField(max_length=2000, blank=True,
                                        help_text="a JSONPath into the body whose value is the idempotency key")
    callback_url = models.CharField(max_length=2000, blank=True)
    max_body_bytes = models.PositiveIntegerField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    disabled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.hook_id})"


class WorkflowKey(models.Model):
    """A key reads `swk_<prefix>_<secret>`; only the secret's SHA-256 is stored. Callbacks of
    the runs it starts are signed with its callback secret, sealed as a webhook's is."""

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="workflow_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=KEY_PREFIX_LENGTH, unique=True)
    digest = models.CharField(max_length=64)
    rate_per_minute = models.PositiveIntegerField()
    callback_url = models.CharField(max_length=2000, blank=True)
    sealed_callback_secret = models.TextField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix})"


class TriggeredRun(models.Model):
    """A run started by a webhook or a workflow key (or a person through a workflow's runs
    operation): one row per run."""

    execution = models.OneToOneField(Execution, on_delete=models.CASCADE, related_name="triggered")
    webhook = models.ForeignKey(WebhookTrigger, null=True, blank=True, on_delete=models.CASCADE, related_name="runs")
    workflow_key = models.ForeignKey(WorkflowKey, null=True, blank=True, on_delete=models.CASCADE,
                                     related_name="runs")
    idempotency_key = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["webhook", "idempotency_key"], name="triggers_webhook_idempotency",
                                    condition=Q(webhook__isnull=False) & ~Q(idempotency_key="")),
            models.UniqueConstraint(fields=["workflow_key", "idempotency_key"], name="triggers_key_idempotency",
                                    condition=Q(workflow_key__isnull=False) & ~Q(idempotency_key="")),
        ]

    def __str__(self) -> str:
        return f"{self.execution_id} by {self.webhook or self.workflow_key or 'a person'}"


class CallbackDelivery(models.Model):
    """One run's summary for one callback URL. `waiting` until the run ends; `pending` to
    send (again, once `next_attempt_at` comes); `sending` while an attempt is made; then
    `delivered`, or `failed` after CALLBACK_MAX_ATTEMPTS."""

    class Status(models.TextChoices):
        WAITING = "waiting"
        PENDING = "pending"
        SENDING = "sending"
        DELIVERED = "delivered"
        FAILED = "failed"

    STATES = StateMachine(
        "callback delivery",
        {
            "waiting": {"pending"},
            "pending": {"sending"},
            "sending": {"delivered", "failed", "pending"},
            "delivered": set(),
            "failed": set(),
        },
    )

    execution = models.ForeignKey(Execution, on_delete=models.CASCADE, related_name="callback_deliveries")
    url = models.CharField(max_length=2000)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.WAITING)
    attempts = models.PositiveIntegerField(default=0)
    response_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["execution", "status"], name="triggers_delivery_run")]

    def __str__(self) -> str:
        return f"{self.execution_id} → {self.url} ({self.status})"
