from django.apps import AppConfig


class ExecutionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "executions"

    def ready(self):
        # knowledge's db_query registry does not know executions: executions tells it its table.
        from executions.tables import register_tables

        register_tables()
