"""The document registry: which seed shape a JSON object is, and how to import or export it.

`import_documents` is the one entry point for bringing documents in (the commands and,
later, the API): it takes one object or a list, imports them in dependency order inside
one transaction, and on any error leaves the database exactly as it was.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from django.db import transaction

from agents.documents import agent_document, derive_request_document
from agents.models import Agent, DeriveRequest
from agents.services import agent_import_document, check_stated_children, derive_request_import_document
from core.errors import DocumentError, NotFound, WorkflowInvalid
from core.jsonutil import check_storable
from executions.documents import evaluation_document, execution_document
from executions.models import Evaluation, Execution
from executions.evaluations import evaluation_import_document
from executions.services import execution_import_document
from workflows.documents import blueprint_document, task_chain_document, workflow_document
from workflows.models import Blueprint, Workflow
from workflows.services import blueprint_import_document, task_chain_import_document, workflow_import_document


@dataclass(frozen=True)
class Kind:
    name: str
    id_key: str
    model: type
    lookup: str
    importer: Callable[..., tuple[Any, str]]
    exporter: Callable[[Any], dict[str, Any]]


# In import order: a kind may refer to the kinds above it.
KINDS = [
    Kind("agent", "agent_id", Agent, "agent_id", agent_import_document, agent_document),
    Kind("blueprint", "blueprint_id", Blueprint, "blueprint_id", blueprint_import_document, blueprint_document),
    Kind("workflow", "workflow_id", Workflow, "workflow_id", workflow_import_document, workflow_document),
    Kind("task_chain", "task_chain", Workflow, "workflow_id", task_chain_import_document, task_chain_document),
    Kind("execution", "execution_id", Execution, "execution_id", execution_import_document, execution_document),
    Kind("derive_request", "derive_request_id", DeriveRequest, "derive_request_id", derive_request_import_document, derive_request_document),
    Kind("evaluation", "evaluation_id", Evaluation, "evaluation_id", evaluation_import_document, evaluation_document),
]
KINDS_BY_NAME = {kind.name: kind for kind in KINDS}


def detect_kind(document: Any) -> Kind:
    if not isinstance(document, dict):
        raise DocumentError(f"expected a JSON object, got {type(document).__name__}")
    # task_chain before workflow: a task chain may also carry a workflow_id.
    for kind in sorted(KINDS, key=lambda k: k.name != "task_chain"):
        if kind.id_key in document:
            return kind
    keys = ", ".join(kind.id_key for kind in KINDS)
    raise DocumentError(f"cannot tell what this document is: it has none of the keys {keys}")


def document_label(document: Any, index: int | None) -> str:
    label = f"document[{index}]" if index is not None else "document"
    try:
        kind = detect_kind(document)
    except DocumentError:
        return label
    identity = document.get(kind.id_key)
    try:
        check_storable(identity)  # a label that cannot be printed would hide the message
    except DocumentError:
        return f"{label} ({kind.name})"
    if isinstance(identity, str):
        return f"{label} ({kind.name} '{identity}')"
    return f"{label} ({kind.name})"


def _agent_order(documents: list[tuple[int, dict]]) -> list[tuple[int, dict]]:
    """Parents before children, so one list can carry a whole lineage tree."""
    by_id = {doc.get("agent_id"): (index, doc) for index, doc in documents}
    ordered, placed = [], set()

    def place(agent_id, trail=()):
        if agent_id in placed or agent_id not in by_id or agent_id in trail:
            return
        lineage = by_id[agent_id][1].get("lineage")
        parent = lineage.get("parent_id") if isinstance(lineage, dict) else None
        place(parent, trail + (agent_id,))
        placed.add(agent_id)
        ordered.append(by_id[agent_id])

    for _, doc in documents:
        place(doc.get("agent_id"))
    return ordered + [(i, d) for i, d in documents if d.get("agent_id") not in placed]


@transaction.atomic
def import_documents(payload: Any, *, actor: str = "") -> list[dict[str, Any]]:
    """Import one document or a list of them; returns what happened to each."""
    many = isinstance(payload, list)
    documents = list(enumerate(payload)) if many else [(None, payload)]
    grouped: dict[str, list[tuple[int | None, dict]]] = {kind.name: [] for kind in KINDS}
    for index, document in documents:
        try:
            check_storable(document)
            grouped[detect_kind(document).name].append((index, document))
        except DocumentError as error:
            raise error.located(document_label(document, index)) from None
    grouped["agent"] = _agent_order(grouped["agent"])

    report = []
    for kind in KINDS:
        for index, document in grouped[kind.name]:
            try:
                obj, outcome = kind.importer(document, actor=actor)
            except DocumentError as error:
                raise error.located(document_label(document, index)) from None
            except WorkflowInvalid as error:
                for problem in error.problems:
                    problem["where"] = f"{document_label(document, index)}.{problem['where']}"
                raise
            report.append({"kind": kind.name, "id": getattr(obj, kind.lookup), "result": outcome, "index": index})
    for index, document in grouped["agent"]:
        try:
            check_stated_children(document)
        except DocumentError as error:
            raise error.located(document_label(document, index)) from None
    return sorted(report, key=lambda entry: entry["index"] if entry["index"] is not None else -1)


def export_document(kind_name: str, identifier: str) -> dict[str, Any]:
    if kind_name not in KINDS_BY_NAME:
        raise DocumentError(f"unknown kind '{kind_name}' (one of: {', '.join(KINDS_BY_NAME)})")
    kind = KINDS_BY_NAME[kind_name]
    try:
        obj = kind.model.objects.get(**{kind.lookup: identifier})
    except kind.model.DoesNotExist:
        raise NotFound(f"{kind_name} '{identifier}' does not exist") from None
    return kind.exporter(obj)
