"""The admin site's changes on the audit trail: what a person adds, changes or deletes there.

Every ModelAdmin that lets anything be written derives from `AuditedAdmin`. A save records
the form's changed fields, old and new (a password only as changed); a delete records what
the object was. Both are recorded inside the admin's own transaction (its add, change and
delete views are atomic; the bulk delete is made so here). Where a save goes through a
service that records itself (the document forms: an agent's or a workflow's import),
`audit_saves` is False and only deletes are recorded here."""
from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import models, transaction
from django.forms.models import model_to_dict

from core.account_audit import one_entry
from core.audit import compact, record

HIDDEN = ("password", "digest")  # fields whose values never go on the trail, only that they changed


def _shown(name: str, value: Any) -> Any:
    """A form or model value as the trail keeps it: related objects by their names, secrets hidden."""
    if any(word in name for word in HIDDEN):
        return "(set)" if value else ""
    if isinstance(value, models.Model):
        return str(value)
    if isinstance(value, (list, tuple, set, models.QuerySet)) and all(isinstance(item, models.Model) for item in value):
        return sorted(str(item) for item in value)
    return compact(value)


class AuditedAdmin(admin.ModelAdmin):
    """A ModelAdmin whose saves and deletes go on the audit trail as `<audit_type>.create`,
    `.change` and `.delete`, the object named by `audit_id_field` (its primary key by default)."""

    audit_type = ""  # the object type on the trail; the model's name when empty
    audit_id_field = "pk"
    audit_saves = True

    def audit_object_type(self) -> str:
        return self.audit_type or self.model._meta.model_name

    def audit_id(self, obj) -> str:
        return str(getattr(obj, self.audit_id_field))

    def audit_snapshot(self, obj) -> dict[str, Any]:
        """What the trail keeps of an object deleted: its fields, each bounded."""
        return {name: _shown(name, value) for name, value in model_to_dict(obj).items()}

    def save_model(self, request, obj, form, change):
        with one_entry():  # what a user's form changes is this one entry, not the signals' (core/account_audit.py)
            super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        with one_entry():
            super().save_related(request, form, formsets, change)
        if not self.audit_saves:
            return
        fields = list(form.changed_data)
        if change and not fields:
            return
        before = {name: _shown(name, form.initial.get(name)) for name in fields} if change else None
        after = {name: _shown(name, form.cleaned_data.get(name)) for name in fields}
        record(f"{self.audit_object_type()}.{'change' if change else 'create'}", actor=request.user,
               object_type=self.audit_object_type(), object_id=self.audit_id(form.instance), before=before, after=after)

    def delete_model(self, request, obj):
        object_id, before = self.audit_id(obj), self.audit_snapshot(obj)
        super().delete_model(request, obj)
        record(f"{self.audit_object_type()}.delete", actor=request.user, object_type=self.audit_object_type(),
               object_id=object_id, before=before)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            gone = [(self.audit_id(obj), self.audit_snapshot(obj)) for obj in queryset]
            super().delete_queryset(request, queryset)
            for object_id, before in gone:
                record(f"{self.audit_object_type()}.delete", actor=request.user, object_type=self.audit_object_type(),
                       object_id=object_id, before=before)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows the admin site shows and never writes (no add, change or delete, superusers
    included): what only a service makes, or what must not change (a version, the trail)."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
