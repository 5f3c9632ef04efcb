from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo: four workflows, their agents and knowledge base (`load_demo`), and the
    builtin skills only those agents perform."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "demo"
