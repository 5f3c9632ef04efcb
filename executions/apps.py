from django.apps import AppConfig


class ExecutionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "executions"

    def ready(self):
        # core's document registry and knowledge's db_query registry do not know executions:
        # executions tells them its kinds and its table.
        from executions.document_kinds import register_document_kinds
        from executions.tables import register_tables

        register_document_kinds()
        register_tables()
