from django.contrib import admin

from triggers.models import CallbackDelivery, WebhookTrigger, WorkflowKey


@admin.register(WebhookTrigger)
class WebhookTriggerAdmin(admin.ModelAdmin):
    list_display = ("name", "hook_id", "workflow", "version", "created_at", "disabled_at")
    exclude = ("sealed_secret",)
    readonly_fields = ("hook_id", "workflow", "created_by", "created_at")


@admin.register(WorkflowKey)
class WorkflowKeyAdmin(admin.ModelAdmin):
    list_display = ("name", "prefix", "workflow", "rate_per_minute", "created_at", "last_used_at", "revoked_at")
    exclude = ("digest", "sealed_callback_secret")
    readonly_fields = ("prefix", "workflow", "created_by", "created_at", "last_used_at")


@admin.register(CallbackDelivery)
class CallbackDeliveryAdmin(admin.ModelAdmin):
    list_display = ("execution", "url", "status", "attempts", "response_code", "delivered_at")
    readonly_fields = [field.name for field in CallbackDelivery._meta.fields]

    def has_add_permission(self, request):
        return False
