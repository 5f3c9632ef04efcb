from django.apps import AppConfig


class TriggersConfig(AppConfig):
    """Webhooks that start runs, workflow-scoped API keys, and callbacks at a run's end.
    Beside experiments, above executions: the run core tells it of a run's end by a signal,
    and the API's authentication learns of workflow keys by a registry, so neither imports it."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "triggers"

    def ready(self):
        from core.api_support import register_scoped_key
        from executions.signals import run_ended
        from triggers.callbacks import run_ended_received
        from triggers.services import key_scope

        register_scoped_key(key_scope)
        run_ended.connect(run_ended_received, dispatch_uid="triggers.callbacks")
