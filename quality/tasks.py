"""Celery tasks: ids in, one service call each; safe to deliver twice.

The names stay `executions.*`: a run that ends sends them by name (executions imports
nothing of this app), and messages already queued keep their worker.
"""
from celery import shared_task

from quality.derive_triggers import derive_requests_raise_for_execution
from quality.evaluations import execution_evaluate


@shared_task(name="executions.evaluate", ignore_result=True)
def evaluate(execution_pk: int) -> str | None:
    evaluation = execution_evaluate(execution_pk=execution_pk)
    return evaluation.evaluation_id if evaluation else None


@shared_task(name="executions.raise_derive_requests", ignore_result=True)
def raise_derive_requests(execution_pk: int) -> list[str]:
    return [request.derive_request_id for request in derive_requests_raise_for_execution(execution_pk=execution_pk)]
