from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.db import transaction

from core.admin_audit import AuditedAdmin, ReadOnlyAdmin
from core.audit import record
from core.models import ApiToken, AuditEntry
from core.token_services import tokens_revoke


@admin.register(ApiToken)
class ApiTokenAdmin(AuditedAdmin):
    """Admins see and revoke tokens; tokens are created by their owners (API), shown once."""

    audit_type = "token"
    audit_id_field = "prefix"

    list_display = ["user", "name", "prefix", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["user__username", "name", "prefix"]
    readonly_fields = ["user", "name", "prefix", "digest", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset):
        count = tokens_revoke(queryset, actor=request.user)
        self.message_user(request, f"Revoked {count} token(s).")


# Roles are groups (core/roles.py), given on a user's admin form: what that form changes, a
# user's groups and superuser status included, is one entry on the audit trail.
admin.site.unregister(get_user_model())
admin.site.unregister(Group)


@admin.register(get_user_model())
class AuditedUserAdmin(AuditedAdmin, UserAdmin):
    audit_type = "user"
    audit_id_field = "username"

    def user_change_password(self, request, id, form_url=""):
        """A password set (or made unusable) here is on the trail as `user.password`, never its value."""
        with transaction.atomic():
            response = super().user_change_password(request, id, form_url)
            if request.method == "POST" and response.status_code == 302:
                user = self.get_object(request, id)
                record("user.password", actor=request.user, object_type="user", object_id=user.get_username(),
                       after={"password": "(set)" if user.has_usable_password() else "(unusable)"})
        return response


@admin.register(Group)
class AuditedGroupAdmin(AuditedAdmin, GroupAdmin):
    audit_type = "group"
    audit_id_field = "name"


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    """The audit trail, read only: no one adds, changes or deletes an entry here, superusers
    included (the model refuses it too)."""

    list_display = ["at", "actor_name", "via", "via_detail", "action", "object_type", "object_id"]
    list_filter = ["via", "action", "object_type"]
    search_fields = ["actor_name", "action", "object_type", "object_id", "via_detail"]
    date_hierarchy = "at"
    readonly_fields = ["at", "actor_id", "actor_name", "via", "via_detail", "action", "object_type", "object_id",
                       "before", "after"]
