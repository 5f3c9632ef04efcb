from django.apps import AppConfig


class ExperimentsConfig(AppConfig):
    """Datasets (and, to come, experiments over them): named, versioned lists of items a
    workflow can be run over. Above executions (a run can become an item), below quality."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "experiments"
