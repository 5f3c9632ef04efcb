"""Celery tasks: ids in, one service call each; safe to deliver twice.

The name stays `executions.evaluate`: a run that ends sends it by name (executions imports
nothing of this app), and messages already queued keep their worker. The derive-request
tasks are `quality/derive_requests/tasks.py`.
"""
from celery import shared_task

from quality.evaluations import execution_evaluate


@shared_task(name="executions.evaluate", ignore_result=True)
def evaluate(execution_pk: int) -> str | None:
    evaluation = execution_evaluate(execution_pk=execution_pk)
    return evaluation.evaluation_id if evaluation else None
