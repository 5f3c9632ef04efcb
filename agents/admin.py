from django.contrib import admin
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe

from agents.models import Agent, AgentVersion
from core.admin_audit import ReadOnlyAdmin
from core.admin_documents import DocumentAdmin


@admin.register(Agent)
class AgentAdmin(DocumentAdmin):
    kind_name = "agent"
    list_display = ["agent_id", "name", "version", "type", "status", "role", "backend", "level", "root", "parent"]
    list_filter = ["status", "type", "backend", "level", "role"]
    search_fields = ["agent_id", "name", "role", "created_by"]
    list_select_related = ["root", "parent"]
    derived_fields = ["root", "level", "version_history"]

    @admin.display(description="versions")
    def version_history(self, agent):
        return format_html_join(
            mark_safe("<br>"), "{} — {} {}", ((v.version, v.created_at, v.created_by) for v in agent.versions.all())
        )


@admin.register(AgentVersion)
class AgentVersionAdmin(ReadOnlyAdmin):
    """Versions are immutable snapshots: readable, never edited."""

    list_display = ["agent", "version", "created_at", "created_by"]
    list_filter = ["created_at"]
    search_fields = ["agent__agent_id", "version"]
    list_select_related = ["agent"]
