"""Celery tasks that belong to no app in particular."""
from celery import shared_task


@shared_task(name="core.tasks.ping", bind=True)
def ping(self, value):
    """Echo `value` back with the name of the worker that ran it: proves the wiring."""
    return {"pong": value, "worker": self.request.hostname}


def send_after_commit(task, *args, countdown: float | None = None) -> None:
    """Send `task(*args)` to the workers' queue once the current transaction commits, so a
    worker never looks for a row that is not there yet (at once when there is none)."""
    from django.conf import settings
    from django.db import transaction

    queue = settings.CELERY_TASK_DEFAULT_QUEUE  # the queue as it is now, not when the commit comes
    transaction.on_commit(lambda: task.apply_async(args, countdown=countdown or None, queue=queue))
