from django.contrib import admin

from core.admin_audit import AuditedAdmin
from core.admin_documents import DocumentAdmin
from executions.models import Evaluation, Execution, NodeRun


class ReadOnlyAdmin(AuditedAdmin):
    """Runs are records of what happened; the admin shows them and never rewrites them (a
    delete is on the audit trail)."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class NodeRunInline(admin.TabularInline):
    model = NodeRun
    fields = ("sequence", "node_id", "agent", "status", "attempt", "duration_ms", "tokens_in", "tokens_out", "worker")
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = True


@admin.register(Execution)
class ExecutionAdmin(ReadOnlyAdmin):
    audit_id_field = "execution_id"
    list_display = ["execution_id", "workflow", "status", "started_at", "completed_at", "ended_reason", "created_by"]
    list_filter = ["status", "workflow", "created_at"]
    search_fields = ["execution_id", "workflow__workflow_id"]
    list_select_related = ["workflow", "created_by"]
    date_hierarchy = "created_at"
    inlines = [NodeRunInline]


@admin.register(NodeRun)
class NodeRunAdmin(ReadOnlyAdmin):
    list_display = ["execution", "node_id", "agent", "status", "attempt", "duration_ms", "tokens_in", "tokens_out", "backend", "worker"]
    list_filter = ["status", "backend", "started_at"]
    search_fields = ["execution__execution_id", "node_id", "agent__agent_id", "worker"]
    list_select_related = ["execution", "agent"]


@admin.register(Evaluation)
class EvaluationAdmin(DocumentAdmin):
    kind_name = "evaluation"
    audit_saves = True  # its import does not record itself
    list_display = ["evaluation_id", "target_type", "target_id", "overall_score", "passed", "action", "created_at"]
    list_filter = ["target_type", "passed", "action", "created_at"]
    search_fields = ["evaluation_id", "target_id"]
