from django.apps import AppConfig


class QualityConfig(AppConfig):
    """Evaluations, quality gates and the derive-request triggers: what a run's outcome says
    about the workflow and its agents. Above executions (whose rows it reads and scores),
    below the demo."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "quality"

    def ready(self):
        from quality.document_kinds import register_document_kinds

        register_document_kinds()
