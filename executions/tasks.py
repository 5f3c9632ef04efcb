"""Celery tasks: ids in, one service call each; safe to deliver twice."""
from celery import shared_task
from django.conf import settings

from executions.services.node_run import node_run_execute
from executions.services.rerun import rerun_copy as rerun_copy_service
from executions.services.subworkflows import child_ended as child_ended_service
from executions.services.sweep import node_runs_sweep_exclusive


# The time limits cover the whole task: the node, and the quick nodes of a chain it may
# run after it (see executions.services.inline.INLINE_SECONDS). These are the defaults; the
# services send each node run with the limits of the settings as they are then.
@shared_task(name="executions.run_node", bind=True, ignore_result=True,
             soft_time_limit=settings.NODE_SOFT_TIME_LIMIT_SECONDS, time_limit=settings.NODE_HARD_TIME_LIMIT_SECONDS)
def run_node(self, node_run_id: int) -> str:
    return node_run_execute(node_run_id=node_run_id, worker=self.request.hostname or "worker")


@shared_task(name="executions.rerun_copy", ignore_result=True)
def rerun_copy(execution_pk: int) -> str:
    return rerun_copy_service(execution_pk=execution_pk)


@shared_task(name="executions.sweep", ignore_result=True)
def sweep() -> dict:
    return node_runs_sweep_exclusive()



@shared_task(name="executions.child_ended", ignore_result=True)
def child_ended(execution_pk: int) -> str:
    return child_ended_service(child_pk=execution_pk)
