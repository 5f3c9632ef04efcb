from django.apps import AppConfig


class ExperimentsConfig(AppConfig):
    """Datasets (named, versioned lists of items) and experiments: a workflow version run over
    a dataset version, each item a real run, scored. Above quality (an experiment's item may
    be scored by the seed's evaluation), below demo and benchmarks."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "experiments"
