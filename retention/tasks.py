"""Celery tasks: the retention sweep, sent by the beat (settings.CELERY_BEAT_SCHEDULE)."""
from celery import shared_task

from retention.sweep import retention_sweep_exclusive


@shared_task(name="retention.sweep", ignore_result=True)
def sweep() -> dict:
    return retention_sweep_exclusive()
