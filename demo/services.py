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
    report = _upsert_all(Paper, "paper_id", PAPERS, "papers")
    papers = Paper.objects.in_bulk({atom["paper_id"] for atom in KNOWLEDGE_ATOMS}, field_name="paper_id")
    atoms = [{**{name: value for name, value in atom.items() if name != "paper_id"}, "paper": papers[atom["paper_id"]]}
             for atom in KNOWLEDGE_ATOMS]
    report += _upsert_all(KnowledgeAtom, "atom_id", atoms, "knowledge atoms")
    by_id = KnowledgeAtom.objects.in_bulk(
        {r["source_atom_id"] for r in RELATIONS} | {r["target_atom_id"] for r in RELATIONS}, field_name="atom_id"
    )
    relations = [{**{name: value for name, value in relation.items() if name not in ("source_atom_id", "target_atom_id")},
                  "source": by_id[relation["source_atom_id"]], "target": by_id[relation["target_atom_id"]]}
                 for relation in RELATIONS]
    report += _upsert_all(Relation, "relation_id", relations, "relations")
    report += _upsert_all(QualityRecord, "record_id", QUALITY_RECORDS, "quality records")
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


def _upsert_all(model, key: str, rows: list[dict], kind: str) -> list[dict]:
    """Create the rows missing (in one INSERT) and bring the others in line with the demo;
    each row reported 'created', 'updated' or 'unchanged'."""
    existing = model.objects.in_bulk([row[key] for row in rows], field_name=key)
    report, missing = [], []
    for row in rows:
        values = {name: value for name, value in row.items() if name != key}
        if "created_at" in values:
            values["created_at"] = parse_datetime(values["created_at"], f"{model.__name__}.created_at")
        instance = existing.get(row[key])
        if instance is None:
            missing.append(model(**{key: row[key]}, **values))
            result = "created"
        else:
            stale = [name for name, value in values.items() if _current(instance, name, value) != value]
            for name in stale:
                setattr(instance, name, values[name])
            if stale:
                instance.save(update_fields=stale)
            result = "updated" if stale else "unchanged"
        report.append({"kind": kind, "id": row[key], "result": result})
    model.objects.bulk_create(missing)
    return report


def _current(instance, name: str, value):
    if isinstance(value, models.Model):  # compare a foreign key by its id, without fetching the row
        return value if getattr(instance, f"{name}_id") == value.pk else None
    return getattr(instance, name)
