"""Loading the demo: its documents, its knowledge base and the sample paper in the workspace.

Every write is matched by the row's public id (or the file's bytes), so loading again
changes nothing and says so.
"""
from __future__ import annotations

from pathlib import Path

from django.db import models, transaction

from core.documents import import_documents
from core.jsonutil import parse_datetime
from knowledge.models import KnowledgeAtom, Paper, QualityRecord, Relation

from .documents import DOCUMENTS, KNOWLEDGE_ATOMS, PAPERS, QUALITY_RECORDS, RELATIONS, paper_markdown, paper_pdf


def demo_documents_import(*, actor: str = "demo") -> list[dict]:
    """The demo's agents, blueprint and workflows, imported as any document is."""
    return import_documents(DOCUMENTS, actor=actor)


@transaction.atomic
def demo_knowledge_load() -> list[dict]:
    """The demo's papers, atoms, relations and quality records, each reported as
    'created', 'updated' or 'unchanged'."""
    report = []
    for row in PAPERS:
        report.append({"kind": "papers", "id": row["paper_id"], "result": _upsert(Paper, "paper_id", row)})
    papers = {paper.paper_id: paper for paper in Paper.objects.filter(paper_id__in={a["paper_id"] for a in KNOWLEDGE_ATOMS})}
    for atom in KNOWLEDGE_ATOMS:
        row = {name: value for name, value in atom.items() if name != "paper_id"}
        row["paper"] = papers[atom["paper_id"]]
        report.append({"kind": "knowledge atoms", "id": atom["atom_id"], "result": _upsert(KnowledgeAtom, "atom_id", row)})
    atoms = KnowledgeAtom.objects.in_bulk(
        {r["source_atom_id"] for r in RELATIONS} | {r["target_atom_id"] for r in RELATIONS}, field_name="atom_id"
    )
    for relation in RELATIONS:
        row = {name: value for name, value in relation.items() if name not in ("source_atom_id", "target_atom_id")}
        row["source"], row["target"] = atoms[relation["source_atom_id"]], atoms[relation["target_atom_id"]]
        report.append({"kind": "relations", "id": relation["relation_id"], "result": _upsert(Relation, "relation_id", row)})
    for record in QUALITY_RECORDS:
        report.append({"kind": "quality records", "id": record["record_id"],
                       "result": _upsert(QualityRecord, "record_id", record)})
    return report


def demo_workspace_write(*, workspace: Path) -> list[Path]:
    """Write the sample paper into the workspace; files already up to date are left alone."""
    written = []
    for relative, content in (("papers/transformer.pdf", paper_pdf()), ("papers/transformer.md", paper_markdown().encode())):
        path = workspace / relative
        if path.exists() and path.read_bytes() == content:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        written.append(path)
    return written


def _upsert(model, key: str, row: dict) -> str:
    """Create the row, or bring it in line with the demo: 'created', 'updated' or 'unchanged'."""
    values = {name: value for name, value in row.items() if name != key}
    if "created_at" in values:
        values["created_at"] = parse_datetime(values["created_at"], f"{model.__name__}.created_at")
    instance = model.objects.filter(**{key: row[key]}).first()
    if instance is None:
        model.objects.create(**{key: row[key]}, **values)
        return "created"
    stale = [name for name, value in values.items() if _current(instance, name, value) != value]
    if not stale:
        return "unchanged"
    for name in stale:
        setattr(instance, name, values[name])
    instance.save(update_fields=stale)
    return "updated"


def _current(instance, name: str, value):
    if isinstance(value, models.Model):  # compare a foreign key by its id, without fetching the row
        return value if getattr(instance, f"{name}_id") == value.pk else None
    return getattr(instance, name)
