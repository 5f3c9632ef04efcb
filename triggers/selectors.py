"""The reads of triggers: a workflow's webhooks and keys, a run's trigger and callbacks."""
from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from core.errors import NotFound
from executions.models import Execution
from triggers.callbacks import trigger_of
from triggers.models import CallbackDelivery, TriggeredRun, WebhookTrigger, WorkflowKey
from workflows.models import Workflow


def webhooks_of(workflow: Workflow) -> QuerySet[WebhookTrigger]:
    return workflow.webhook_triggers.order_by("-created_at", "-id")


def keys_of(workflow: Workflow) -> QuerySet[WorkflowKey]:
    return workflow.workflow_keys.order_by("-created_at", "-id")


def webhook_of(workflow: Workflow, hook_id: str) -> WebhookTrigger:
    webhook = workflow.webhook_triggers.filter(hook_id=hook_id).first() if hook_id.isalnum() else None
    if webhook is None:
        raise NotFound(f"workflow '{workflow.workflow_id}' has no webhook '{hook_id}'")
    return webhook


def key_of(workflow: Workflow, prefix: str) -> WorkflowKey:
    key = workflow.workflow_keys.filter(prefix=prefix).first() if prefix.isalnum() else None
    if key is None:
        raise NotFound(f"workflow '{workflow.workflow_id}' has no key '{prefix}'")
    return key


def workflow_run(workflow: Workflow, execution_id: str, *, key: WorkflowKey | None) -> Execution:
    """A run of `workflow`; for a workflow key, only a run that key started. NotFound for any
    other, the same answer whether the run does not exist or is not the key's to read."""
    runs = Execution.objects.filter(workflow=workflow, execution_id=execution_id)
    if key is not None:
        runs = runs.filter(triggered__workflow_key=key)
    execution = runs.select_related("workflow", "workflow_version").first()
    if execution is None:
        raise NotFound(f"no run '{execution_id}' of workflow '{workflow.workflow_id}'"
                       + (" started with this key" if key is not None else ""))
    return execution


def deliveries_of(execution: Execution) -> list[dict[str, Any]]:
    """Every callback delivery of the run, as the API and the run's page show them."""
    return [delivery_out(delivery) for delivery in CallbackDelivery.objects.filter(execution=execution)]


def delivery_out(delivery: CallbackDelivery) -> dict[str, Any]:
    return {"url": delivery.url, "status": delivery.status, "attempts": delivery.attempts,
            "response_code": delivery.response_code, "last_error": delivery.last_error,
            "last_attempt_at": delivery.last_attempt_at, "next_attempt_at": delivery.next_attempt_at,
            "delivered_at": delivery.delivered_at}


def run_trigger(execution: Execution) -> dict[str, Any] | None:
    """Which webhook or key started the run (`kind`, `id`, `name`, `idempotency_key`), or None."""
    triggered = (TriggeredRun.objects.select_related("webhook", "workflow_key")
                 .filter(execution=execution).first())
    return trigger_of(triggered)
