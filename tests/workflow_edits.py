"""Edit a stored workflow as the editor and the API do: through the import service, which
saves a new version (the one new runs run)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.utils import timezone

from workflows.documents import workflow_document
from workflows.models import Workflow
from workflows.services import workflow_import_document


def edit_workflow(workflow_id: str, change: Callable[[dict[str, Any]], None], *, actor: str = "test") -> Workflow:
    """Save the workflow's document once `change` has changed it in place."""
    document = workflow_document(Workflow.objects.get(workflow_id=workflow_id))
    change(document)
    workflow, _ = workflow_import_document(document, actor=actor)
    workflow.refresh_from_db()
    return workflow


def store_as_before(workflow_id: str, change: Callable[[dict[str, Any]], None]) -> Workflow:
    """A workflow stored under earlier rules, which the service would refuse today: its latest
    version's document changed in place (as the migration that gave old workflows their first
    version would have written it), and its graph no longer cached anywhere."""
    workflow = Workflow.objects.get(workflow_id=workflow_id)
    version = workflow.versions.order_by("-number").first()
    change(version.document)
    version.save()
    Workflow.objects.filter(pk=workflow.pk).update(updated_at=timezone.now())
    workflow.refresh_from_db()
    return workflow
