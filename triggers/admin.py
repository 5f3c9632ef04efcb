"""Webhooks, workflow keys and callback deliveries, read-only: each is made, disabled or
revoked on the workflow's page or through the API, where its secret is shown once and the
change is audited."""
from django.contrib import admin

from core.admin_audit import ReadOnlyAdmin
from triggers.models import CallbackDelivery, WebhookTrigger, WorkflowKey


@admin.register(WebhookTrigger)
class WebhookTriggerAdmin(ReadOnlyAdmin):
    list_display = ("name", "hook_id", "workflow", "version", "created_at", "disabled_at")
    exclude = ("sealed_secret",)


@admin.register(WorkflowKey)
class WorkflowKeyAdmin(ReadOnlyAdmin):
    list_display = ("name", "prefix", "workflow", "rate_per_minute", "created_at", "last_used_at", "revoked_at")
    exclude = ("digest", "sealed_callback_secret")


@admin.register(CallbackDelivery)
class CallbackDeliveryAdmin(ReadOnlyAdmin):
    list_display = ("execution", "url", "status", "attempts", "response_code", "delivered_at")
