"""A workflow's retention rule, set by its authors (the API), recorded on the audit trail."""
from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from core import audit
from core.status_writes import lock_row
from retention.models import WorkflowRetention
from retention.policy import workflow_rule
from workflows.models import Workflow

FIELDS = ("days", "failed_days", "success_detail_days")


def rule_document(workflow: Workflow, own: WorkflowRetention | None) -> dict[str, Any]:
    """The workflow's own fields (None: the global setting) and the rule its runs get."""
    rule = workflow_rule(own)
    return {"workflow_id": workflow.workflow_id,
            **{name: getattr(own, name) if own is not None else None for name in FIELDS},
            "effective": {name: getattr(rule, name) for name in FIELDS},
            "updated_at": own.updated_at.isoformat() if own is not None else None,
            "updated_by": own.updated_by if own is not None else ""}


def rule_get(workflow: Workflow) -> dict[str, Any]:
    return rule_document(workflow, WorkflowRetention.objects.filter(workflow=workflow).first())


def rule_set(workflow: Workflow, *, values: dict[str, int | None], actor) -> dict[str, Any]:
    """Set the workflow's rule to `values` (each None: the global setting's); all None
    removes its row. Recorded as `retention.rule` with the fields before and after."""
    with transaction.atomic():
        own = lock_row(WorkflowRetention, missing_ok=True, written=False, workflow_id=workflow.pk)
        before = {name: getattr(own, name) for name in FIELDS} if own is not None else None
        if all(values.get(name) is None for name in FIELDS):
            if own is not None:
                own.delete()
            own, after = None, None
        else:
            own = own or WorkflowRetention(workflow=workflow)
            for name in FIELDS:
                setattr(own, name, values.get(name))
            own.updated_at, own.updated_by = timezone.now(), actor.get_username()
            own.save()
            after = {name: getattr(own, name) for name in FIELDS}
        if before != after:
            audit.record("retention.rule", actor=actor, object_type="workflow", object_id=workflow.workflow_id,
                         before=before, after=after)
    return rule_document(workflow, own)
