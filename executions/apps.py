from django.apps import AppConfig


class ExecutionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "executions"

    def ready(self):
        # core's document registry, knowledge's db_query registry and agents' pages do not
        # know executions: executions tells them its kinds, its table and an agent's runs.
        from celery.exceptions import SoftTimeLimitExceeded

        from engine.errors import register_interrupt
        from executions.document_kinds import register_document_kinds
        from executions.run_records import register_agent_run_records
        from executions.tables import register_tables

        register_document_kinds()
        register_tables()
        register_agent_run_records()
        # A node past its soft time limit stops, even inside engine code that records failures.
        register_interrupt(SoftTimeLimitExceeded)
