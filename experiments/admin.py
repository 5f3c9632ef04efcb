from django.contrib import admin

from core.admin_audit import AuditedAdmin
from experiments.models import Dataset, DatasetItem, DatasetVersion


class ReadOnly(AuditedAdmin):
    """Versions and items are never changed (a change is a new version): the admin shows them."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Dataset)
class DatasetAdmin(AuditedAdmin):
    audit_id_field = "name"
    list_display = ["name", "created_by", "created_at", "updated_at"]
    search_fields = ["name", "description"]
    readonly_fields = ["name", "created_at", "created_by", "updated_at"]

    def has_add_permission(self, request):
        return False  # a dataset is made by its first import


@admin.register(DatasetVersion)
class DatasetVersionAdmin(ReadOnly):
    list_display = ["dataset", "number", "change", "item_count", "note", "created_by", "created_at"]
    list_filter = ["change"]
    search_fields = ["dataset__name", "note"]
    list_select_related = ["dataset"]


@admin.register(DatasetItem)
class DatasetItemAdmin(ReadOnly):
    list_display = ["item_id", "version", "position", "has_expected"]
    search_fields = ["item_id", "version__dataset__name"]
    list_select_related = ["version__dataset"]
    raw_id_fields = ["version"]
