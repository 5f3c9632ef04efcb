from django.apps import AppConfig


class RetentionConfig(AppConfig):
    """Old runs go away before the database fills: the rules (global settings, a workflow's
    own), the sweep that applies them on the beat, and `purge_runs`. Above experiments, whose
    datasets, experiments and derive requests' evidence keep the runs they name; below demo
    and benchmarks."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "retention"
