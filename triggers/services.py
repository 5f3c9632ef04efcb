"""The writes of triggers: webhooks and workflow keys made, disabled and revoked (each on the
audit trail), and runs started by them, at most once per idempotency key."""
from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.audit import acting, record
from core.errors import DocumentError, NotFound, SwitchyardError, echo
from core.jsonutil import check_storable, parse_json
from engine.context.errors import RefError
from engine.context.resolution import select_path
from engine.jsonpath import PathError, compile_path
from executions.models import Execution
from executions.services import execution_start
from triggers import signing
from triggers.callback_hosts import check_callback_url
from triggers.models import KEY_PREFIX_LENGTH, CallbackDelivery, TriggeredRun, WebhookTrigger, WorkflowKey
from workflows.models import Workflow
from workflows.services import workflow_version_get

IDEMPOTENCY_KEY_MAX = 200  # characters


class Unauthenticated(SwitchyardError):
    """A webhook's request whose signature or timestamp does not hold (401)."""

    code = "UNAUTHENTICATED"


class PayloadTooLarge(SwitchyardError):
    code = "PAYLOAD_TOO_LARGE"


@dataclass(frozen=True)
class Started:
    """A run a trigger started, or the one it started before for the same idempotency key."""

    execution: Execution
    repeated: bool


# -- webhooks ----------------------------------------------------------------------------

def webhook_create(*, workflow: Workflow, actor, name: str, version: int | None = None,
                   input_mapping: dict[str, str] | None = None, idempotency_path: str = "",
                   callback_url: str = "", max_body_bytes: int | None = None) -> tuple[WebhookTrigger, str]:
    """A webhook of `workflow` and its signing secret, which is never shown again. Each
    setting is checked first, a refusal naming its field; nothing is stored then."""
    name = _name(name)
    if version is not None:
        try:
            workflow_version_get(workflow=workflow, number=version)
        except NotFound as missing:
            raise DocumentError(missing.message, where="version") from None
    mapping = _checked_mapping(input_mapping or {})
    idempotency_path = _checked_path(idempotency_path, where="idempotency_path") if idempotency_path else ""
    callback_url = check_callback_url(callback_url, where="callback_url")
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    max_body_bytes = settings.WEBHOOK_MAX_BODY_BYTES if max_body_bytes is None else max_body_bytes
    if limit is not None and not 1 <= max_body_bytes <= limit:
        raise DocumentError(f"must be from 1 to {limit} bytes (the server's limit on any request body)",
                            where="max_body_bytes")
    secret = signing.new_secret("whsec")
    with transaction.atomic():
        webhook = WebhookTrigger.objects.create(
            hook_id=secrets.token_hex(16), workflow=workflow, name=name, version=version,
            sealed_secret=signing.seal(secret), input_mapping=mapping, idempotency_path=idempotency_path,
            callback_url=callback_url, max_body_bytes=max_body_bytes, created_by=_person(actor))
        record("webhook.create", actor=actor, object_type="webhook", object_id=webhook.hook_id,
               after=webhook_settings(webhook))
    return webhook, secret


def webhook_disable(*, webhook: WebhookTrigger, actor) -> WebhookTrigger:
    """The webhook answers 404 from now on; its runs keep naming it."""
    return _ended_once(webhook, "disabled_at", "webhook.disable", webhook.hook_id, webhook_settings, actor)


def webhook_settings(webhook: WebhookTrigger) -> dict[str, Any]:
    """What the audit trail keeps of a webhook (never its secret)."""
    return {"workflow": webhook.workflow.workflow_id, "name": webhook.name, "version": webhook.version,
            "input_mapping": webhook.input_mapping, "idempotency_path": webhook.idempotency_path,
            "callback_url": webhook.callback_url, "max_body_bytes": webhook.max_body_bytes,
            "disabled_at": webhook.disabled_at}


def webhook_receive(*, webhook: WebhookTrigger, body: bytes, timestamp: str | None, signed: str | None,
                    idempotency_key: str | None) -> Started:
    """A POST to an enabled webhook's URL (`webhook_get`): checked in the order that costs
    the sender least to learn (the size, the signature and its time, the JSON, the mapping),
    then its run started under the `webhook` source, or the run of an earlier request with
    the same idempotency key found. Every refusal starts nothing."""
    check_body_size(webhook, len(body))
    try:
        secret = signing.unseal(webhook.sealed_secret)
    except ValueError as unreadable:
        raise Unauthenticated(f"{unreadable}: no request to this webhook can be checked; make a new webhook") from None
    problem = signing.signature_problem(secret, timestamp=timestamp, signed=signed, body=body, now=time.time(),
                                        window=settings.TRIGGER_REPLAY_WINDOW_SECONDS)
    if problem:
        raise Unauthenticated(problem)
    try:
        document = parse_json(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise DocumentError("the body is not UTF-8 text", where="body") from None
    except DocumentError as refused:
        raise refused.located("body") from None
    check_storable(document, where="body")
    run_input = mapped_input(webhook, document)
    key = idempotency_key if idempotency_key is not None else _idempotency_from_body(webhook, document)
    with acting("webhook", webhook.hook_id):
        return _start_triggered(workflow=webhook.workflow, version=webhook.version, input=run_input,
                                idempotency_key=_checked_idempotency_key(key), callback_url=webhook.callback_url,
                                webhook=webhook)


def webhook_get(hook_id: str) -> WebhookTrigger:
    """An enabled webhook by its URL's id; NotFound for anything else (a disabled one too)."""
    webhook = None
    if len(hook_id) == 32 and all(c in "0123456789abcdef" for c in hook_id):
        webhook = (WebhookTrigger.objects.select_related("workflow")
                   .filter(hook_id=hook_id, disabled_at__isnull=True).first())
    if webhook is None:
        raise NotFound("no webhook answers at this address")
    return webhook


def check_body_size(webhook: WebhookTrigger, size: int) -> None:
    if size > webhook.max_body_bytes:
        raise PayloadTooLarge(f"the request body is {size} bytes; this webhook's limit is {webhook.max_body_bytes} bytes",
                              details={"limit_bytes": webhook.max_body_bytes})


def mapped_input(webhook: WebhookTrigger, body: Any) -> dict[str, Any]:
    """The run's input: each field the value its JSONPath selects in the body (engine's
    `select_path`: a singular path its value, any other the list of the values); with no
    mapping, the body itself, which must then be an object. A path that selects nothing
    is refused (422) naming the field and the path."""
    if not webhook.input_mapping:
        if not isinstance(body, dict):
            raise DocumentError("is not a JSON object: a webhook with no input mapping runs with the body as its input",
                                where="body")
        return body
    run_input = {}
    for field, path in webhook.input_mapping.items():
        try:
            run_input[field] = select_path(body, path)
        except RefError as missing:
            raise DocumentError(f"the path '{path}' of the input mapping selects nothing in the body",
                                where=f"input_mapping.{field}",
                                details={"field": field, "path": path, "reason": missing.code}) from None
    return run_input


def _idempotency_from_body(webhook: WebhookTrigger, body: Any) -> str | None:
    if not webhook.idempotency_path:
        return None
    try:
        value = select_path(body, webhook.idempotency_path)
    except RefError:
        raise DocumentError(f"the path '{webhook.idempotency_path}' selects nothing in the body",
                            where="idempotency_path", details={"path": webhook.idempotency_path}) from None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise DocumentError(f"the path '{webhook.idempotency_path}' selects a {type(value).__name__}, "
                            "not a string or an integer", where="idempotency_path")
    return str(value)


def _checked_mapping(mapping: Any) -> dict[str, str]:
    if not isinstance(mapping, dict):
        raise DocumentError("is an object of run input field → JSONPath", where="input_mapping")
    for field, path in mapping.items():
        if not isinstance(field, str) or not field.strip() or len(field) > 200:
            raise DocumentError("a run input field is a name of 1 to 200 characters", where="input_mapping")
        _checked_path(path, where=f"input_mapping.{field}")
    return dict(mapping)


def _checked_path(path: Any, *, where: str) -> str:
    if not isinstance(path, str):
        raise DocumentError("is a JSONPath (text starting with '$')", where=where)
    try:
        compile_path(path)
    except PathError as invalid:
        raise DocumentError(invalid.message, where=where, details={"code": invalid.code}) from None
    return path


def _checked_idempotency_key(key: str | None) -> str:
    if key is None:
        return ""
    if not key or len(key) > IDEMPOTENCY_KEY_MAX or not key.isprintable():
        raise DocumentError(f"an idempotency key is 1 to {IDEMPOTENCY_KEY_MAX} printable characters, "
                            f"not '{echo(key)}'", where="Idempotency-Key")
    return key


# -- workflow keys -------------------------------------------------------------------------

KEY_KIND = "swk"


def key_create(*, workflow: Workflow, actor, name: str, rate_per_minute: int | None = None,
               callback_url: str = "") -> tuple[WorkflowKey, str, str]:
    """A key good for `workflow`'s runs only, the key itself and the secret its callbacks are
    signed with: both shown once, never again (the key is kept as a digest)."""
    name = _name(name)
    rate = settings.WORKFLOW_KEY_RATE_PER_MINUTE if rate_per_minute is None else rate_per_minute
    if not 1 <= rate <= 100_000:
        raise DocumentError("must be from 1 to 100000 requests a minute", where="rate_per_minute")
    callback_url = check_callback_url(callback_url, where="callback_url")
    prefix = secrets.token_hex(KEY_PREFIX_LENGTH // 2)
    secret = secrets.token_urlsafe(32)
    callback_secret = signing.new_secret("cbsec")
    with transaction.atomic():
        key = WorkflowKey.objects.create(
            workflow=workflow, name=name, prefix=prefix, digest=signing.digest(secret), rate_per_minute=rate,
            callback_url=callback_url, sealed_callback_secret=signing.seal(callback_secret),
            created_by=_person(actor))
        record("workflow_key.create", actor=actor, object_type="workflow_key", object_id=prefix,
               after=key_settings(key))
    return key, f"{KEY_KIND}_{prefix}_{secret}", callback_secret


def key_revoke(*, key: WorkflowKey, actor) -> WorkflowKey:
    """The key is refused from now on (401); the runs it started stay."""
    return _ended_once(key, "revoked_at", "workflow_key.revoke", key.prefix, key_settings, actor)


def _ended_once(row, field: str, action: str, object_id: str, settings_of, actor):
    """`row`'s `field` (when it was disabled or revoked) set to now, once: a conditional
    UPDATE, so that two requests at once make one change and one audit entry."""
    with transaction.atomic():
        before, now = settings_of(row), timezone.now()
        if type(row).objects.filter(pk=row.pk, **{f"{field}__isnull": True}).update(**{field: now}):
            setattr(row, field, now)
            record(action, actor=actor, object_type=action.split(".")[0], object_id=object_id, before=before,
                   after=settings_of(row))
        else:
            row.refresh_from_db(fields=[field])
    return row


def key_settings(key: WorkflowKey) -> dict[str, Any]:
    return {"workflow": key.workflow.workflow_id, "name": key.name, "rate_per_minute": key.rate_per_minute,
            "callback_url": key.callback_url, "revoked_at": key.revoked_at}


def key_authenticate(presented: str) -> WorkflowKey | None:
    """The live key a presented `swk_<prefix>_<secret>` is, or None."""
    parts = presented.split("_", 2)
    if (len(parts) != 3 or parts[0] != KEY_KIND or len(parts[1]) != KEY_PREFIX_LENGTH
            or not all(c in "0123456789abcdef" for c in parts[1])):
        return None
    key = (WorkflowKey.objects.select_related("workflow")
           .filter(prefix=parts[1], revoked_at__isnull=True).first())
    if key is None or not hmac.compare_digest(key.digest, signing.digest(parts[2])):
        return None
    now = timezone.now()
    if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
        WorkflowKey.objects.filter(pk=key.pk).update(last_used_at=now)  # at most once a minute
    return key


def key_scope(presented: str) -> str | None:
    """For the API's authentication (core.api_support.register_scoped_key): what a live
    workflow key is good for; None for anything else."""
    key = key_authenticate(presented) if presented.startswith(f"{KEY_KIND}_") else None
    if key is None:
        return None
    path = f"/api/workflows/{key.workflow.workflow_id}/runs"
    return f"the workflow key '{key.prefix}' of workflow '{key.workflow.workflow_id}': it starts runs (POST {path}) " \
           f"and reads the runs it started (GET {path}/{{execution_id}})"


def run_start(*, workflow: Workflow, input: dict[str, Any] | None, version: int | None, key: WorkflowKey | None,
              actor=None, idempotency_key: str | None = None, callback_url: str | None = None) -> Started:
    """A run of `workflow` started through its runs operation: by a workflow key (source
    `workflow_key`, its prefix), or by a person (their own source). The callback URL given
    replaces the key's; a person's run has none. An idempotency key is the key's only."""
    if key is None and callback_url:
        raise DocumentError("a callback is sent for runs started with a workflow key or a webhook only",
                            where="callback_url")
    url = check_callback_url(callback_url, where="callback_url") if callback_url else (key.callback_url if key else "")
    if key is None:
        return _start_triggered(workflow=workflow, version=version, input=input or {}, idempotency_key="",
                                callback_url="", actor=actor)
    with acting("workflow_key", key.prefix):
        return _start_triggered(workflow=workflow, version=version, input=input or {},
                                idempotency_key=_checked_idempotency_key(idempotency_key), callback_url=url,
                                workflow_key=key)


def _start_triggered(*, workflow: Workflow, version: int | None, input: dict[str, Any], idempotency_key: str,
                     callback_url: str, webhook: WebhookTrigger | None = None, workflow_key: WorkflowKey | None = None,
                     actor=None) -> Started:
    """Start the run and say who started it, in one transaction; or, for an idempotency key
    already used, the run it started. Two concurrent requests with the same key both start
    one: the second's TriggeredRun breaks a unique constraint, its transaction (its run
    included) is rolled back, and it answers the first's run."""
    source = {"webhook": webhook} if webhook else {"workflow_key": workflow_key}
    if idempotency_key:
        earlier = _earlier_run(source, idempotency_key)
        if earlier is not None:
            return Started(earlier, repeated=True)
    try:
        with transaction.atomic():
            execution = execution_start(workflow=workflow, input=input, actor=actor, version=version)
            if webhook or workflow_key or callback_url:
                TriggeredRun.objects.create(execution=execution, idempotency_key=idempotency_key, **source)
            if callback_url:
                CallbackDelivery.objects.create(execution=execution, url=callback_url)
            record("execution.trigger", actor=actor, object_type="execution", object_id=execution.execution_id,
                   after={"workflow": workflow.workflow_id, "workflow_version": version, "input": input,
                          "webhook": webhook.hook_id if webhook else None,
                          "workflow_key": workflow_key.prefix if workflow_key else None,
                          "idempotency_key": idempotency_key or None, "callback_url": callback_url or None})
    except IntegrityError:
        earlier = _earlier_run(source, idempotency_key) if idempotency_key else None
        if earlier is None:
            raise
        return Started(earlier, repeated=True)
    return Started(execution, repeated=False)


def _earlier_run(source: dict[str, Any], idempotency_key: str) -> Execution | None:
    found = (TriggeredRun.objects.select_related("execution")
             .filter(idempotency_key=idempotency_key, **source).first())
    return found.execution if found else None


def _name(name: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise DocumentError("is 1 to 100 characters", where="name")
    return name


def _person(actor):
    return actor if getattr(actor, "pk", None) else None
