from django.apps import AppConfig


class QualityConfig(AppConfig):
    """Evaluations and quality gates: what a run's outcome says about the workflow and its
    agents. Above executions (whose rows it reads and scores), below the demo. Derive
    requests, which the evaluations raise, are the app `quality.derive_requests`."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "quality"

    def ready(self):
        from quality.document_kinds import register_document_kinds

        register_document_kinds()
