"""Celery tasks: ids in, one service call each; safe to deliver twice.

The names stay those the tasks had before they moved here (`executions.*` from the
evaluation, `agents.*` from an approval and the beat schedule): they are sent by name, and
messages already queued keep their worker.
"""
from celery import shared_task

from core.tasks import send_after_commit
from quality.derive_requests.child_agent import derive_request_create_child, derive_requests_awaiting_child
from quality.derive_requests.triggers import derive_requests_raise_for_execution


@shared_task(name="executions.raise_derive_requests", ignore_result=True)
def raise_derive_requests(execution_pk: int) -> list[str]:
    return [request.derive_request_id for request in derive_requests_raise_for_execution(execution_pk=execution_pk)]


@shared_task(name="agents.derive_child", ignore_result=True)
def derive_child(request_pk: int) -> str | None:
    child = derive_request_create_child(request_pk=request_pk)
    return child.agent_id if child else None


@shared_task(name="agents.sweep", ignore_result=True)
def sweep() -> list[int]:
    """Send again the child creation of approvals whose message was lost (a Redis restart);
    a request delivered twice still gets one child."""
    request_pks = derive_requests_awaiting_child()
    for request_pk in request_pks:
        send_after_commit("agents.derive_child", request_pk)
    return request_pks
