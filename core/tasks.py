"""Celery tasks that belong to no app in particular."""
import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="core.tasks.ping", bind=True)
def ping(self, value):
    """Echo `value` back with the name of the worker that ran it: proves the wiring."""
    return {"pong": value, "worker": self.request.hostname}


def send_after_commit(task, *args, countdown: float | None = None, **options) -> None:
    """Send `task(*args)` to the workers' queue once the current transaction commits, so a
    worker never looks for a row that is not there yet (at once when there is none).
    `options` go to apply_async as they are (e.g. time limits).

    A send that fails (Redis away) is logged, not raised: what caused it is committed and
    correct, so it must not become a 500 or a failed node. The sweep sends node runs and
    evaluations again from the database once Redis is back."""
    from django.conf import settings
    from django.db import transaction

    queue = settings.CELERY_TASK_DEFAULT_QUEUE  # the queue as it is now, not when the commit comes

    def send():
        try:
            task.apply_async(args, countdown=countdown or None, queue=queue, **options)
        except Exception:  # kombu's OperationalError, redis' errors: the broker could not be reached
            logger.warning("could not send %s%r to the queue %r", task.name, tuple(args), queue, exc_info=True)

    transaction.on_commit(send)
