from django.apps import AppConfig


class DeriveRequestsConfig(AppConfig):
    """Derive requests (core-data-structures §6), all in this package: an app of its own so
    that Django and Celery find its commands, admin and tasks here. Its rows stay agents'
    (`agents/models.py`, tables `agents_deriverequest*`); it has no models of its own."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "quality.derive_requests"
    label = "derive_requests"

    def ready(self):
        from quality.derive_requests.document_kinds import register_document_kinds

        register_document_kinds()
