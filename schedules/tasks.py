"""Celery tasks: ids in, one service call each; safe to deliver twice."""
from celery import shared_task

from schedules.services import schedule_fire


@shared_task(name="schedules.fire", ignore_result=True)
def fire(schedule_id: int) -> str:
    """Sent by the beat at each of a schedule's fire times: start its run, once per fire time."""
    return schedule_fire(schedule_id=schedule_id)
