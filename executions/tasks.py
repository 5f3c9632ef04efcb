"""Celery tasks: ids in, one service call each; safe to deliver twice."""
from celery import shared_task

from executions.evaluations import execution_evaluate
from executions.services import node_run_execute, node_runs_sweep_exclusive


@shared_task(name="executions.run_node", bind=True, ignore_result=True)
def run_node(self, node_run_id: int) -> str:
    return node_run_execute(node_run_id=node_run_id, worker=self.request.hostname or "worker")


@shared_task(name="executions.sweep", ignore_result=True)
def sweep() -> dict:
    return node_runs_sweep_exclusive()


@shared_task(name="executions.evaluate", ignore_result=True)
def evaluate(execution_pk: int) -> str | None:
    evaluation = execution_evaluate(execution_pk=execution_pk)
    return evaluation.evaluation_id if evaluation else None
