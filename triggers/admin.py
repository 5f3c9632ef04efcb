"""Webhooks, workflow keys and callback deliveries, read-only: each is made, disabled or
revoked on the workflow's page or through the API, where its secret is shown once and the
change is audited."""
from django.contrib import admin

from triggers.models import CallbackDelivery, WebhookTrigger, WorkflowKey


class ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(WebhookTrigger)
class WebhookTriggerAdmin(ReadOnly):
    list_display = ("name", "hook_id", "workflow", "version", "created_at", "disabled_at")
    exclude = ("sealed_secret",)


@admin.register(WorkflowKey)
class WorkflowKeyAdmin(ReadOnly):
    list_display = ("name", "prefix", "workflow", "rate_per_minute", "created_at", "last_used_at", "revoked_at")
    exclude = ("digest", "sealed_callback_secret")


@admin.register(CallbackDelivery)
class CallbackDeliveryAdmin(ReadOnly):
    list_display = ("execution", "url", "status", "attempts", "response_code", "delivered_at")
