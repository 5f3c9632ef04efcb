"""Celery tasks: ids in, one service call each; safe to deliver twice."""
from celery import shared_task

from experiments.scoring import experiments_sweep, item_run_ended


@shared_task(name="experiments.run_ended", ignore_result=True)
def run_ended(execution_pk: int) -> str:
    """Sent by executions when a run of an experiment's item ends: score it, then advance."""
    return item_run_ended(execution_pk=execution_pk)


@shared_task(name="experiments.sweep", ignore_result=True)
def sweep() -> dict:
    return experiments_sweep()
