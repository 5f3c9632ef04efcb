from collections import Counter

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import models, transaction

from core.demo import DOCUMENTS, KNOWLEDGE_ATOMS, PAPERS, QUALITY_RECORDS, RELATIONS, write_workspace_files
from core.documents import import_documents
from core.jsonutil import parse_datetime
from knowledge.models import KnowledgeAtom, Paper, QualityRecord, Relation


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


def load_knowledge() -> list[dict]:
    """The demo's papers, atoms, relations and quality records; rows are matched by their
    public id, so loading again changes nothing."""
    report = []
    with transaction.atomic():
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


class Command(BaseCommand):
    help = ("Load the demo agents, blueprint and workflows, the knowledge base, and write the sample paper. "
            "Safe to run again.")

    def handle(self, *args, **options):
        report = import_documents(DOCUMENTS, actor="demo")
        changed = [entry for entry in report if entry["result"] != "unchanged"]
        for entry in changed:
            self.stdout.write(f"{entry['result']}: {entry['kind']} {entry['id']}")
        knowledge = load_knowledge()
        knowledge_changed = [entry for entry in knowledge if entry["result"] != "unchanged"]
        for (result, kind), count in Counter((e["result"], e["kind"]) for e in knowledge_changed).items():
            self.stdout.write(f"{result}: {kind} ({count})")
        for path in write_workspace_files(settings.WORKSPACE_ROOT):
            self.stdout.write(f"wrote {path}")
        self.stdout.write(f"Demo data ready ({len(report)} documents and {len(knowledge)} knowledge rows, "
                          f"{len(changed) + len(knowledge_changed)} changed).")
