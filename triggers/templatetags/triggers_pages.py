"""What the pages of apps below triggers show of it, read here so that those apps import
nothing of it: their templates include `triggers/*.html`, which load these tags."""
from __future__ import annotations

from typing import Any

from django import template

from triggers import selectors
from triggers.models import CallbackDelivery, TriggeredRun

register = template.Library()


@register.simple_tag
def run_trigger(execution) -> dict[str, Any] | None:
    """The webhook or key that started a run and its callbacks: one query for a run no trigger
    started, two for one that a trigger did."""
    triggered = (TriggeredRun.objects.select_related("webhook", "workflow_key")
                 .filter(execution_id=execution.pk).first())
    if triggered is None:
        return None
    return {"triggered": triggered, "deliveries": list(CallbackDelivery.objects.filter(execution_id=execution.pk))}


@register.simple_tag
def workflow_triggers(workflow) -> dict[str, Any]:
    """A workflow's webhooks and keys, newest first (disabled and revoked ones too)."""
    return {"webhooks": list(selectors.webhooks_of(workflow).select_related("created_by")),
            "keys": list(selectors.keys_of(workflow).select_related("created_by"))}
