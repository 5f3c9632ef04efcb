from django.contrib import admin

from core.admin_audit import AuditedAdmin
from knowledge.models import KnowledgeAtom, Paper, QualityRecord, Relation


@admin.register(Paper)
class PaperAdmin(AuditedAdmin):
    audit_id_field = "paper_id"
    list_display = ["paper_id", "title", "year", "venue", "domain", "created_at"]
    list_filter = ["domain", "year"]
    search_fields = ["paper_id", "title", "venue", "abstract"]


@admin.register(KnowledgeAtom)
class KnowledgeAtomAdmin(AuditedAdmin):
    audit_id_field = "atom_id"
    list_display = ["atom_id", "paper", "atom_type", "confidence", "domain", "source_section", "created_at"]
    list_filter = ["atom_type", "domain"]
    search_fields = ["atom_id", "paper__paper_id", "content", "source_section"]
    list_select_related = ["paper"]
    raw_id_fields = ["paper"]


@admin.register(Relation)
class RelationAdmin(AuditedAdmin):
    audit_id_field = "relation_id"
    list_display = ["relation_id", "source", "relation_type", "target", "confidence", "created_at"]
    list_filter = ["relation_type"]
    search_fields = ["relation_id", "source__atom_id", "target__atom_id"]
    list_select_related = ["source", "target"]
    raw_id_fields = ["source", "target"]


@admin.register(QualityRecord)
class QualityRecordAdmin(AuditedAdmin):
    audit_id_field = "record_id"
    list_display = ["record_id", "target_type", "target_id", "score", "passed", "created_at"]
    list_filter = ["target_type", "passed"]
    search_fields = ["record_id", "target_type", "target_id"]
