from django.contrib import admin

from core.admin_documents import DocumentAdmin
from workflows.models import Blueprint, Node, Transition, Workflow


class NodeInline(admin.TabularInline):
    model = Node
    fields = ["node_id", "agent", "compress", "compress_ratio", "input_mapping", "output_mapping"]
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False


class TransitionInline(admin.TabularInline):
    model = Transition
    fields = ["from_node", "to_node", "condition", "on_success", "on_failure"]
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False


@admin.register(Workflow)
class WorkflowAdmin(DocumentAdmin):
    kind_name = "workflow"
    list_display = ["workflow_id", "name", "topology", "retry_count", "fallback_agent", "escalate_to", "source_format", "updated_at"]
    list_filter = ["topology", "source_format", "updated_at"]
    search_fields = ["workflow_id", "name", "nodes__node_id", "nodes__agent__agent_id"]
    list_select_related = ["fallback_agent", "escalate_to"]
    inlines = [NodeInline, TransitionInline]


@admin.register(Blueprint)
class BlueprintAdmin(DocumentAdmin):
    kind_name = "blueprint"
    list_display = ["blueprint_id", "name", "version", "domain", "updated_at"]
    list_filter = ["domain"]
    search_fields = ["blueprint_id", "name", "domain", "agents__agent__agent_id"]
