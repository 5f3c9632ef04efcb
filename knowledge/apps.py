from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "knowledge"

    def ready(self) -> None:
        from knowledge.tools import register_tools

        register_tools()  # knowledge_search and db_query, in the tool catalogue
