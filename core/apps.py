from django.apps import AppConfig


class CoreConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "core"

    def ready(self):
        from django.urls import register_converter

        from core import account_audit
        from core.converters import RowIdConverter

        register_converter(RowIdConverter, "row_id")
        account_audit.connect()
