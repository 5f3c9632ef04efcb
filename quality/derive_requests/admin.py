"""Derive requests in the admin site, edited as their §6 document. They are agents' rows, so
the admin lists them under Agents (/admin/agents/deriverequest/)."""
from django.contrib import admin

from agents.models import DeriveRequest
from core.admin_documents import DocumentAdmin


@admin.register(DeriveRequest)
class DeriveRequestAdmin(DocumentAdmin):
    kind_name = "derive_request"
    audit_saves = True  # its import does not record itself
    list_display = ["derive_request_id", "parent_agent", "trigger", "new_name", "status", "result_agent", "created_at", "decided_by"]
    list_filter = ["status", "trigger", "created_at"]
    search_fields = ["derive_request_id", "parent_agent__agent_id", "new_name", "domain_focus"]
    list_select_related = ["parent_agent", "result_agent", "decided_by"]
    date_hierarchy = "created_at"
