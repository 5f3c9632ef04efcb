"""The kinds of documents this app brings to core's document registry: blueprints, workflows
and task chains (a task chain is imported as a workflow)."""
from core.documents import Kind, register_kind
from workflows.documents import blueprint_document, task_chain_document, workflow_document
from workflows.models import Blueprint, Workflow
from workflows.services import blueprint_import_document, task_chain_import_document, workflow_import_document


def register_document_kinds() -> None:
    register_kind(Kind("blueprint", "blueprint_id", Blueprint, "blueprint_id", blueprint_import_document,
                       blueprint_document))
    register_kind(Kind("workflow", "workflow_id", Workflow, "workflow_id", workflow_import_document,
                       workflow_document))
    register_kind(Kind("task_chain", "task_chain", Workflow, "workflow_id", task_chain_import_document,
                       task_chain_document))
