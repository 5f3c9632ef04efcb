"""Celery tasks that belong to no app in particular."""
from celery import shared_task


@shared_task(name="core.tasks.ping", bind=True)
def ping(self, value):
    """Echo `value` back with the name of the worker that ran it: proves the wiring."""
    return {"pong": value, "worker": self.request.hostname}
