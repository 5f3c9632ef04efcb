from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "workflows"

    def ready(self):
        # core's document registry does not know the apps: each app tells it its kinds.
        from workflows.document_kinds import register_document_kinds

        register_document_kinds()
