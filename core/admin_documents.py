"""Admin editing through documents: one path for every write.

Seed objects are edited in the admin as their JSON document, and saved by the same
import service the command line and the API use, so validation, versioning and
lineage rules apply here too. The form does a dry run (imported, then rolled back) to
show every problem next to the document before anything is saved.
"""
from __future__ import annotations

import json

from django import forms
from django.db import transaction
from django.forms.fields import InvalidJSONInput

from core.admin_audit import AuditedAdmin
from core.audit import changes, compact, record
from core.documents import KINDS_BY_NAME, import_documents
from core.errors import DocumentError, WorkflowInvalid
from core.jsonutil import parse_json
from engine.errors import EngineError


class _DryRun(EngineError):
    """Raised inside the dry run's transaction to roll the import back."""

    code = "DRY_RUN"


class DocumentField(forms.JSONField):
    """A document's JSON text, read by the import's own parser: deep nesting, NaN and
    integers of thousands of digits get a message on the form, not a server error."""

    def to_python(self, value):
        if isinstance(value, str) and value.strip():
            try:
                parse_json(value)
            except DocumentError as error:
                raise forms.ValidationError(error.message, code="invalid") from None
        return super().to_python(value)

    def bound_data(self, data, initial):
        # Shown again exactly as it was sent: parsed and dumped again, the text could
        # hold a lone surrogate that no page can encode, or be too deep to parse at all.
        return initial if self.disabled or data is None else InvalidJSONInput(data)


class DocumentForm(forms.ModelForm):
    document = DocumentField(
        widget=forms.Textarea(attrs={"rows": 30, "cols": 100}),
        help_text="The object as its seed JSON document. Saving validates it whole.",
    )
    kind_name = ""

    class Meta:
        fields: list[str] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        kind = KINDS_BY_NAME[self.kind_name]
        if self.instance.pk:
            self.fields["document"].initial = json.loads(json.dumps(kind.exporter(self.instance)))

    def clean_document(self):
        document = self.cleaned_data["document"]
        kind = KINDS_BY_NAME[self.kind_name]
        if not isinstance(document, dict):
            raise forms.ValidationError("the document is one JSON object")
        current = getattr(self.instance, kind.lookup, None) if self.instance.pk else None
        if current and document.get(kind.id_key) != current:
            raise forms.ValidationError(f"{kind.id_key} cannot change here (it is '{current}'); add a new object instead")
        try:
            with transaction.atomic():
                import_documents(document, actor=self.actor)
                raise _DryRun("a dry run: the import is rolled back")
        except _DryRun:
            pass
        except WorkflowInvalid as error:
            raise forms.ValidationError([f"{p['where']}: {p['message']}" for p in error.problems]) from error
        except DocumentError as error:
            raise forms.ValidationError(error.message) from error
        return document


class DocumentAdmin(AuditedAdmin):
    """A ModelAdmin whose add and change forms edit the object's document. A delete is
    recorded on the audit trail here, with the document the object was; a save is recorded
    by the import where its kind's importer does so (agents, blueprints, workflows), and here
    otherwise (`audit_saves`: the document's keys that changed)."""

    kind_name = ""
    audit_saves = False

    def audit_object_type(self) -> str:
        return self.kind_name

    def audit_id(self, obj) -> str:
        return str(getattr(obj, KINDS_BY_NAME[self.kind_name].lookup))

    def audit_snapshot(self, obj) -> dict:
        return {key: compact(value) for key, value in KINDS_BY_NAME[self.kind_name].exporter(obj).items()}
    # Read-only facts shown under the document (methods or fields of the admin).
    derived_fields: list[str] = []

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = type(
            f"{self.kind_name.title()}DocumentForm",
            (DocumentForm,),
            {"kind_name": self.kind_name, "actor": request.user.get_username(), "Meta": type("Meta", (), {"model": self.model, "fields": []})},
        )
        return form

    def get_fieldsets(self, request, obj=None):
        # The admin's own "monospace" fieldset class sets the document's font (a style
        # attribute would break the Content-Security-Policy).
        fieldsets = [(None, {"fields": ["document"], "classes": ["monospace"]})]
        if obj is not None and self.derived_fields:
            fieldsets.append(("Derived (read-only)", {"fields": self.derived_fields}))
        return fieldsets

    def get_readonly_fields(self, request, obj=None):
        return self.derived_fields if obj is not None else []

    def save_model(self, request, obj, form, change):
        kind = KINDS_BY_NAME[self.kind_name]
        report = import_documents(form.cleaned_data["document"], actor=request.user.get_username())
        saved = kind.model.objects.get(**{kind.lookup: report[0]["id"]})
        obj.pk = saved.pk
        obj.__dict__.update({k: v for k, v in saved.__dict__.items() if not k.startswith("_")})

    def save_related(self, request, form, formsets, change):
        """Nodes, contracts and versions are written by the import service; the save goes on
        the audit trail here when its importer does not record it."""
        if not self.audit_saves:
            return
        kind = KINDS_BY_NAME[self.kind_name]
        before, after = changes(form.fields["document"].initial if change else None, kind.exporter(form.instance))
        if change and not after:
            return  # the import changed nothing
        record(f"{self.kind_name}.{'update' if change else 'create'}", actor=request.user,
               object_type=self.kind_name, object_id=self.audit_id(form.instance), before=before, after=after)
