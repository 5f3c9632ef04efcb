"""The document registry: which seed shape a JSON object is, and how to import or export it.

`import_documents` is the one entry point for bringing documents in (the commands and,
later, the API): it takes one object or a list, imports them in dependency order inside
one transaction, and on any error leaves the database exactly as it was.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import models, transaction

from core.errors import DocumentError, NotFound, WorkflowInvalid
from core.jsonutil import check_storable


@dataclass(frozen=True)
class Kind:
    name: str
    id_key: str
    model: type[models.Model]
    lookup: str
    importer: Callable[..., tuple[Any, str]]
    exporter: Callable[[Any], dict[str, Any]]
    # Puts the kind's (index, document) pairs in the order they are imported in.
    arrange: Callable[[list[tuple[int | None, dict]]], list[tuple[int | None, dict]]] | None = None
    # Checks a document once the whole import is in (it may name rows imported after it).
    check_after: Callable[[dict[str, Any]], None] | None = None


# The kinds in import order: a kind may refer to the kinds above it. Each app registers
# its own kinds from its AppConfig.ready(), since core sits below the apps and imports none.
# A thought tree is only exported: its importer refuses it.
IMPORT_ORDER = ("agent", "blueprint", "workflow", "task_chain", "execution", "derive_request", "evaluation",
                "thought_tree")
KINDS: list[Kind] = []
KINDS_BY_NAME: dict[str, Kind] = {}


def register_kind(kind: Kind) -> Kind:
    if kind.name not in IMPORT_ORDER:
        raise ValueError(f"document kind '{kind.name}' has no place in IMPORT_ORDER ({', '.join(IMPORT_ORDER)})")
    ordered = sorted({**KINDS_BY_NAME, kind.name: kind}.values(), key=lambda known: IMPORT_ORDER.index(known.name))
    KINDS[:] = ordered
    KINDS_BY_NAME.clear()
    KINDS_BY_NAME.update((known.name, known) for known in ordered)
    return kind


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
    for kind in KINDS:
        if kind.arrange:
            grouped[kind.name] = kind.arrange(grouped[kind.name])

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
    for kind in KINDS:
        check_after = kind.check_after
        if check_after is None:
            continue
        for index, document in grouped[kind.name]:
            try:
                check_after(document)
            except DocumentError as error:
                raise error.located(document_label(document, index)) from None
    return sorted(report, key=lambda entry: entry["index"] if entry["index"] is not None else -1)


def export_document(kind_name: str, identifier: str) -> dict[str, Any]:
    if kind_name not in KINDS_BY_NAME:
        raise DocumentError(f"unknown kind '{kind_name}' (one of: {', '.join(KINDS_BY_NAME)})")
    kind = KINDS_BY_NAME[kind_name]
    try:
        obj = kind.model._default_manager.get(**{kind.lookup: identifier})
    except (kind.model.DoesNotExist, ValueError):  # type: ignore[attr-defined]  # every concrete model has one  # ValueError: not a number, for a kind found by a row id
        raise NotFound(f"{kind_name} '{identifier}' does not exist") from None
    return kind.exporter(obj)
