"""Celery tasks: ids in, one service call each; safe to deliver twice."""
from celery import shared_task

from agents.derivation import derive_request_create_child, derive_requests_awaiting_child
from core.tasks import send_after_commit


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
