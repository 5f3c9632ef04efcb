from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    """The benchmarks and the large runs they measure: code of their own, outside the apps
    whose work they time; the commands `benchmark_*` are thin wrappers over it."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "benchmarks"
