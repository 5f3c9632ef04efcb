from django.contrib import admin

from core.admin_documents import DocumentAdmin
from workflows.models import Blueprint, Workflow


@admin.register(Workflow)
class WorkflowAdmin(DocumentAdmin):
    kind_name = "workflow"
    list_display = ["workflow_id", "name", "topology", "retry_count", "fallback_agent", "escalate_to", "source_format", "updated_at"]
    list_filter = ["topology", "source_format", "updated_at"]
    search_fields = ["workflow_id", "name", "nodes__node_id", "nodes__agent__agent_id"]
    list_select_related = ["fallback_agent", "escalate_to"]


@admin.register(Blueprint)
class BlueprintAdmin(DocumentAdmin):
    kind_name = "blueprint"
    list_display = ["blueprint_id", "name", "version", "domain", "updated_at"]
    list_filter = ["domain"]
    search_fields = ["blueprint_id", "name", "domain", "agents__agent__agent_id"]
