"""Webhooks and workflow keys (authors make, disable and revoke them; viewers list them), a
workflow's runs operation (a workflow key's only door, or a person's), and a run's trigger
and callbacks.

A workflow key is taken by `POST /workflows/{id}/runs` and `GET /workflows/{id}/runs/{execution_id}`
only (`KEY_OR_PERSON`): every other operation authenticates with `core.api_support.AUTH`,
which answers a live workflow key 403 (`register_scoped_key`, from TriggersConfig.ready()).
"""
from __future__ import annotations

from django.http import JsonResponse
from django.urls import reverse
from ninja import Header, Path, Router, Status
from ninja.pagination import paginate
from ninja.security import HttpBearer

from core.api_support import AUTH, ErrorOut, Page, Rendered, responses
from core.roles import AUTHOR, Forbidden, require_role
from engine.shapes import ID_PATTERN
from executions import selectors as execution_selectors
from triggers import rate_limits, selectors, services
from triggers.models import WebhookTrigger, WorkflowKey
from triggers.schemas import (
    KeyCreatedOut,
    KeyIn,
    KeyOut,
    RunIn,
    RunStartedOut,
    RunTriggerOut,
    TriggeredExecutionOut,
    WebhookCreatedOut,
    WebhookIn,
    WebhookOut,
)
from workflows.selectors import workflow_get

router = Router(tags=["triggers"])


class WorkflowKeyAuth(HttpBearer):
    """`Authorization: Bearer swk_…`: a live workflow key (its operation checks the workflow).
    Anything else is left to AUTH after it; a revoked or unknown key ends there as 401."""

    def authenticate(self, request, token: str):
        if not token.startswith(f"{services.KEY_KIND}_"):
            return None
        return services.key_authenticate(token)


KEY_OR_PERSON = [WorkflowKeyAuth(), *AUTH]
RATE_LIMITED = {429: ErrorOut}


def workflow_param():
    return Path(..., pattern=ID_PATTERN, description="the workflow's workflow_id")


def _key_of(request, workflow_id: str) -> WorkflowKey | None:
    """The workflow key the request came with (None: a person), refused for another workflow."""
    key = request.auth if isinstance(request.auth, WorkflowKey) else None
    if key is not None and key.workflow.workflow_id != workflow_id:
        raise Forbidden(f"the workflow key '{key.prefix}' is good for workflow '{key.workflow.workflow_id}' only",
                        details={"workflow_id": key.workflow.workflow_id})
    return key


def _too_many(key: WorkflowKey) -> JsonResponse | None:
    """429 with Retry-After once the key has made its requests of this minute."""
    wait = rate_limits.retry_after(key.prefix, key.rate_per_minute)
    if wait is None:
        return None
    response = JsonResponse({"code": "RATE_LIMITED", "message": f"the workflow key '{key.prefix}' may make "
                             f"{key.rate_per_minute} requests a minute; try again in {wait} s",
                             "details": {"retry_after_seconds": wait, "rate_per_minute": key.rate_per_minute}},
                            status=429)
    response["Retry-After"] = str(wait)
    return response


def _webhook_out(request, webhook: WebhookTrigger) -> dict:
    return {"hook_id": webhook.hook_id, "name": webhook.name,
            "url": request.build_absolute_uri(reverse("triggers:receive", args=[webhook.hook_id])),
            "version": webhook.version, "input_mapping": webhook.input_mapping,
            "idempotency_path": webhook.idempotency_path, "callback_url": webhook.callback_url,
            "max_body_bytes": webhook.max_body_bytes,
            "created_by": webhook.created_by.username if webhook.created_by else None,
            "created_at": webhook.created_at, "disabled_at": webhook.disabled_at}


def _key_out(key: WorkflowKey) -> dict:
    return {"prefix": key.prefix, "name": key.name, "rate_per_minute": key.rate_per_minute,
            "callback_url": key.callback_url, "created_by": key.created_by.username if key.created_by else None,
            "created_at": key.created_at, "last_used_at": key.last_used_at, "revoked_at": key.revoked_at}


# -- webhooks ----------------------------------------------------------------------------

@router.get("/workflows/{workflow_id}/webhooks", response=responses(200, list[WebhookOut]),
            summary="A workflow's webhooks, newest first (disabled ones too)")
@paginate(Page)
def webhooks_list(request, workflow_id: str = workflow_param()):
    rows = selectors.webhooks_of(workflow_get(workflow_id)).select_related("created_by")
    return Rendered(rows, lambda page: [_webhook_out(request, webhook) for webhook in page])


@router.post("/workflows/{workflow_id}/webhooks", response=responses(201, WebhookCreatedOut),
             summary="Create a webhook that starts runs of the workflow: its URL, and its signing secret, shown once")
def webhooks_create(request, payload: WebhookIn, workflow_id: str = workflow_param()):
    require_role(request.user, AUTHOR, to="create webhooks")
    webhook, secret = services.webhook_create(workflow=workflow_get(workflow_id), actor=request.user,
                                              **payload.dict())
    return Status(201, {**_webhook_out(request, webhook), "secret": secret})


@router.delete("/workflows/{workflow_id}/webhooks/{hook_id}", response=responses(200, WebhookOut),
               summary="Disable a webhook: its URL answers 404 from now on; its runs keep naming it")
def webhooks_disable(request, hook_id: str, workflow_id: str = workflow_param()):
    require_role(request.user, AUTHOR, to="disable webhooks")
    webhook = selectors.webhook_of(workflow_get(workflow_id), hook_id)
    return _webhook_out(request, services.webhook_disable(webhook=webhook, actor=request.user))


# -- workflow keys -----------------------------------------------------------------------

@router.get("/workflows/{workflow_id}/keys", response=responses(200, list[KeyOut]),
            summary="A workflow's keys, newest first (revoked ones too)")
@paginate(Page)
def keys_list(request, workflow_id: str = workflow_param()):
    rows = selectors.keys_of(workflow_get(workflow_id)).select_related("created_by")
    return Rendered(rows, lambda page: [_key_out(key) for key in page])


@router.post("/workflows/{workflow_id}/keys", response=responses(201, KeyCreatedOut),
             summary="Create a key that starts and reads this workflow's runs only: the key and its callback "
                     "secret, shown once")
def keys_create(request, payload: KeyIn, workflow_id: str = workflow_param()):
    require_role(request.user, AUTHOR, to="create workflow keys")
    key, presented, callback_secret = services.key_create(workflow=workflow_get(workflow_id), actor=request.user,
                                                          **payload.dict())
    return Status(201, {**_key_out(key), "key": presented, "callback_secret": callback_secret})


@router.delete("/workflows/{workflow_id}/keys/{prefix}", response=responses(200, KeyOut),
               summary="Revoke a workflow key: refused (401) from now on")
def keys_revoke(request, prefix: str, workflow_id: str = workflow_param()):
    require_role(request.user, AUTHOR, to="revoke workflow keys")
    key = selectors.key_of(workflow_get(workflow_id), prefix)
    return _key_out(services.key_revoke(key=key, actor=request.user))


# -- a workflow's runs: a workflow key's door ----------------------------------------------

@router.post("/workflows/{workflow_id}/runs", auth=KEY_OR_PERSON,
             response={**responses(202, RunStartedOut), **RATE_LIMITED},
             summary="Start a run: with the workflow's key (or an author's token); answered 202 at once. "
                     "An Idempotency-Key (a key's runs) answers the run it started before")
def workflow_runs_start(request, payload: RunIn, workflow_id: str = workflow_param(),
                        idempotency_key: str | None = Header(None, alias="Idempotency-Key")):
    key = _key_of(request, workflow_id)
    if key is not None and (limited := _too_many(key)):
        return limited
    if key is None:
        require_role(request.user, AUTHOR, to="start runs")
    started = services.run_start(workflow=workflow_get(workflow_id), input=payload.input,
                                 version=payload.workflow_version, key=key, actor=request.user if key is None else None,
                                 idempotency_key=idempotency_key if key is not None else None,
                                 callback_url=payload.callback_url)
    execution = started.execution
    return Status(202, {
        "execution_id": execution.execution_id, "status": execution.status, "repeated": started.repeated,
        "url": request.build_absolute_uri(reverse("executions:detail", args=[execution.execution_id])),
        "api_url": request.build_absolute_uri(f"/api/workflows/{workflow_id}/runs/{execution.execution_id}"),
    })


@router.get("/workflows/{workflow_id}/runs/{execution_id}", auth=KEY_OR_PERSON,
            response={**responses(200, TriggeredExecutionOut), **RATE_LIMITED},
            summary="One run of the workflow (a workflow key: only a run it started), with its trigger and callbacks")
def workflow_runs_detail(request, execution_id: str = Path(..., pattern=ID_PATTERN),
                         workflow_id: str = workflow_param()):
    key = _key_of(request, workflow_id)
    if key is not None and (limited := _too_many(key)):
        return limited
    execution = selectors.workflow_run(workflow_get(workflow_id), execution_id, key=key)
    return {**execution_selectors.execution_detail(execution), "trigger": selectors.run_trigger(execution),
            "callbacks": selectors.deliveries_of(execution)}


@router.get("/executions/{execution_id}/trigger", response=responses(200, RunTriggerOut),
            summary="Which webhook or workflow key started a run, and each callback delivery: status, attempts, "
                    "response code, last error")
def executions_trigger(request, execution_id: str = Path(..., pattern=ID_PATTERN)):
    execution = execution_selectors.execution_get(execution_id)
    return {"trigger": selectors.run_trigger(execution), "callbacks": selectors.deliveries_of(execution)}
