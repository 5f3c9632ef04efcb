from django.apps import AppConfig


class ToolsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "tools"

    def ready(self) -> None:
        from tools import workspace_tools  # noqa: F401 - registers read_file
