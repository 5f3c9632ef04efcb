"""Celery tasks that belong to no app in particular."""
import logging

from celery import current_app, shared_task
from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)


@shared_task(name="core.tasks.ping", bind=True)
def ping(self, value):
    """Echo `value` back with the name of the worker that ran it: proves the wiring."""
    return {"pong": value, "worker": self.request.hostname}


def send_after_commit(task_name: str, *args, countdown: float | None = None, **options) -> None:
    """Send the task named `task_name` (e.g. "executions.run_node") with `args` to the
    workers' queue once the current transaction commits (see send_all_after_commit)."""
    send_all_after_commit(task_name, [args], countdown=countdown, **options)


def send_all_after_commit(task_name: str, batch: list[tuple], *, countdown: float | None = None, **options) -> None:
    """Send one message of the task named `task_name` for the args of each item of `batch`
    to the workers' queue once the current transaction commits (at once when there is
    none), so a worker never looks for a row that is not there yet. The batch is published
    together, after the commit, through one producer from the app's pool in kombu's publish
    batch: a layer of a DAG costs one connection from the pool and, on Redis, one pipeline
    per 1,000 messages rather than a round trip each. `options` go to apply_async as they
    are (e.g. time limits).

    By name, so that a service sending a task need not import the tasks module, which
    imports the services (a cycle). A task this process has imported sends itself, with
    its own options; any other goes by name as the same message, keeping no result (no
    one can wait for the result of a send made after commit).

    A send that fails (Redis away) is logged, not raised, with the rest of its batch (some
    of which may have gone): what caused it is committed and correct, so it must not become
    a 500 or a failed node. The sweep sends node runs and evaluations again from the
    database once Redis is back (a node run sent twice is claimed once)."""
    queue = settings.CELERY_TASK_DEFAULT_QUEUE  # the queue as it is now, not when the commit comes
    batch = list(batch)

    def send():
        task = current_app.tasks.get(task_name)
        try:
            # kombu's publish batch: on Redis, the messages go in pipelines of up to 1,000.
            with current_app.producer_or_acquire() as producer, producer.batch():
                for args in batch:
                    if task is not None:
                        task.apply_async(args, countdown=countdown or None, queue=queue, producer=producer, **options)
                    else:
                        current_app.send_task(task_name, args, countdown=countdown or None, queue=queue,
                                              ignore_result=True, producer=producer, **options)
        except Exception:  # kombu's OperationalError, redis' errors: the broker could not be reached
            logger.warning("could not send %s%r to the queue %r%s", task_name, tuple(batch[0]), queue,
                           f" (nor, in whole or in part, the {len(batch) - 1} more of its batch)" if len(batch) > 1
                           else "", exc_info=True)

    transaction.on_commit(send)
