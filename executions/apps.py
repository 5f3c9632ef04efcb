from django.apps import AppConfig


class ExecutionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "executions"

    def ready(self):
        # core's document registry, knowledge's db_query registry and agents' pages do not
        # know executions: executions tells them its kinds, its table and an agent's runs.
        from celery.exceptions import SoftTimeLimitExceeded

        from core.cancellation import Cancelled
        from engine.errors import register_interrupt
        from executions.agent_run_readers import register_agent_run_readers
        from executions.document_kinds import register_document_kinds
        from executions.execution_logs import register_execution_logs_table

        register_document_kinds()
        register_execution_logs_table()
        register_agent_run_readers()
        # A node past its soft time limit stops, even inside engine code that records failures.
        register_interrupt(SoftTimeLimitExceeded)
        # So does a node whose run was cancelled while it ran (core/cancellation.py).
        register_interrupt(Cancelled)
