from django.apps import AppConfig


class SchedulesConfig(AppConfig):
    """Workflows started on a cron schedule, by the one beat (django-celery-beat's
    DatabaseScheduler). Beside experiments, above executions: it starts runs as a person does."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "schedules"

    def ready(self):
        # Executions' pages name the schedule that started a run, which only this app knows.
        from django.db.models.signals import post_delete

        from executions.run_origins import register_origin_reader
        from schedules.models import Schedule
        from schedules.selectors import schedule_origins

        register_origin_reader(schedule_origins)
        # A schedule deleted, alone or with its workflow, takes its beat entry with it.
        post_delete.connect(_beat_entry_deleted, sender=Schedule, dispatch_uid="schedules.beat_entry_deleted")


def _beat_entry_deleted(sender, instance, **kwargs):
    from schedules.beat import periodic_task_delete

    periodic_task_delete(instance)
