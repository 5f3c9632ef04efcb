from django.apps import AppConfig


class ExecutionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "executions"

    def ready(self):
        # core's document registry, knowledge's db_query registry and agents' pages do not
        # know executions: executions tells them its kinds, its table and an agent's runs.
        from executions.document_kinds import register_document_kinds
        from executions.run_records import register_agent_run_records
        from executions.tables import register_tables

        register_document_kinds()
        register_tables()
        register_agent_run_records()
