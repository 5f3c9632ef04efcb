from django.apps import AppConfig


class AgentsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "agents"

    def ready(self):
        # core's document registry does not know the apps: each app tells it its kinds.
        from agents.document_kinds import register_document_kinds

        register_document_kinds()
