"""What the workflow page (workflows, below triggers) shows of it, read here so that
workflows imports nothing of it: its template includes `triggers/workflow_sections.html`,
which loads these tags. (A run's page reads its trigger from the API: run_trigger.js.)"""
from __future__ import annotations

from typing import Any

from django import template

from triggers import selectors

register = template.Library()


@register.simple_tag
def workflow_triggers(workflow) -> dict[str, Any]:
    """A workflow's webhooks and keys, newest first (disabled and revoked ones too)."""
    return {"webhooks": list(selectors.webhooks_of(workflow).select_related("created_by")),
            "keys": list(selectors.keys_of(workflow).select_related("created_by"))}
