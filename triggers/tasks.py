"""Celery tasks: ids in, one service call each; safe to deliver twice."""
from celery import shared_task

from triggers.callbacks import deliveries_sweep, delivery_attempt


@shared_task(name="triggers.deliver_callback", ignore_result=True)
def deliver_callback(delivery_pk: int) -> str:
    return delivery_attempt(delivery_pk=delivery_pk)


@shared_task(name="triggers.sweep", ignore_result=True)
def sweep() -> dict:
    return deliveries_sweep()
