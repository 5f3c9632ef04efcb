"""Callbacks out: a run's summary POSTed, signed, to the URL its trigger names once it ends.

1. A run started with a callback URL has a `waiting` CallbackDelivery from its start.
2. When the run ends, the run core's `run_ended` signal (sent after commit) reaches
   `run_ended_received`: the run's waiting deliveries become `pending` and
   `triggers.deliver_callback` is sent for each.
3. `delivery_attempt` (the task) claims the delivery (`pending` → `sending`, one conditional
   UPDATE: a second delivery of the message finds nothing to do), checks the host against
   CALLBACK_ALLOWED_HOSTS again, POSTs the summary without following redirects, and stores
   how it went: `delivered` on a 2xx; otherwise `pending` again with the next attempt sent
   after CALLBACK_BACKOFF_SECONDS × 2^(attempts-1), or `failed` after CALLBACK_MAX_ATTEMPTS.
4. `deliveries_sweep` (the beat's `triggers.sweep`) picks up what a lost message or a dead
   worker left: a run's end never heard, a message never delivered, an attempt never settled.
"""
from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.urls import reverse
from django.utils import timezone

from agents.backends.metering import usd
from core.status_writes import claim_row, transition, transition_all
from core.tasks import send_after_commit
from executions.documents import execution_document
from executions.models import Execution
from triggers import signing
from triggers.callback_hosts import callback_url_problem
from triggers.models import CallbackDelivery, TriggeredRun

logger = logging.getLogger(__name__)

TASK = "triggers.deliver_callback"
MAX_BACKOFF_SECONDS = 900.0  # below the broker's visibility timeout, which would deliver a held message again
SUMMARY_MAX_BYTES = 256 * 1024  # past this, the nodes' outputs are left out of the summary
ERROR_MAX = 500  # characters of an attempt's error kept
SWEEP_GRACE_SECONDS = 60  # how late a delivery may be before the sweep takes it for lost
ENDED_STATUSES = (Execution.Status.SUCCESS, Execution.Status.FAILED, Execution.Status.CANCELLED)


def run_ended_received(sender, *, execution_pk: int, status: str, **kwargs) -> None:
    """The run core's `run_ended` receiver: the run's deliveries are due now."""
    due = CallbackDelivery.objects.filter(execution_id=execution_pk, status=CallbackDelivery.Status.WAITING)
    pks = list(due.values_list("pk", flat=True))
    if pks:
        transition_all(due, CallbackDelivery.Status.WAITING, CallbackDelivery.Status.PENDING,
                       next_attempt_at=timezone.now())
        for pk in pks:
            send_after_commit(TASK, pk)


def deliveries_sweep() -> dict[str, int]:
    """The beat's: deliveries a lost message or a dead worker left behind, due again.

    - `waiting` for a run that has ended (the process that ended it died before the signal
      after its commit): due now;
    - `pending` past its attempt's time by SWEEP_GRACE_SECONDS (its message was lost, Redis
      away when it was sent): sent again;
    - `sending` for longer than an attempt can take (its worker died while it waited for an
      answer): that attempt counted, then pending again, or failed if it was the last.
    A message sent twice is claimed once (`delivery_attempt`), so sending again is safe."""
    now = timezone.now()
    ended = CallbackDelivery.objects.filter(status=CallbackDelivery.Status.WAITING,
                                            execution__status__in=ENDED_STATUSES)
    woken = list(ended.values_list("execution_id", flat=True).distinct())
    for execution_pk in woken:
        run_ended_received(None, execution_pk=execution_pk, status="")
    late = now - timedelta(seconds=SWEEP_GRACE_SECONDS)
    lost = list(CallbackDelivery.objects.filter(status=CallbackDelivery.Status.PENDING, next_attempt_at__lt=late)
                .values_list("pk", flat=True))
    for pk in lost:
        send_after_commit(TASK, pk)
    silent = now - timedelta(seconds=settings.CALLBACK_TIMEOUT_SECONDS + SWEEP_GRACE_SECONDS)
    stuck = CallbackDelivery.objects.filter(status=CallbackDelivery.Status.SENDING, last_attempt_at__lt=silent)
    for delivery in stuck:
        attempts = delivery.attempts + 1
        last = attempts >= settings.CALLBACK_MAX_ATTEMPTS
        moved = _settle(delivery, attempts, status=CallbackDelivery.Status.FAILED if last else CallbackDelivery.Status.PENDING,
                        code=None, error="no answer: the worker stopped during the attempt", next_attempt_at=now)
        if moved and not last:
            send_after_commit(TASK, delivery.pk)
    return {"woken": len(woken), "resent": len(lost), "stuck": len(stuck)}


def delivery_attempt(*, delivery_pk: int) -> str:
    """One attempt at a pending delivery; what happened, for the task's log."""
    delivery = claim_row(CallbackDelivery, delivery_pk, CallbackDelivery.Status.PENDING,
                         CallbackDelivery.Status.SENDING, select_related="execution__workflow",
                         last_attempt_at=timezone.now())
    if delivery is None:
        return "not pending: delivered, failed or being sent by another worker"
    attempts = delivery.attempts + 1
    problem = callback_url_problem(delivery.url)
    if problem:  # taken off the list since: never called, and never tried again
        _settle(delivery, attempts, status=CallbackDelivery.Status.FAILED, code=None,
                error=f"not sent: the callback URL {problem}")
        return "refused: host not allowed"
    try:
        secret = _secret_of(delivery.execution)
    except ValueError as unreadable:  # SECRET_KEY changed: it would never be signed again
        _settle(delivery, attempts, status=CallbackDelivery.Status.FAILED, code=None, error=f"not sent: {unreadable}")
        return "refused: secret unreadable"
    code, error = post_summary(delivery.url, summary(delivery.execution), secret)
    if code is not None and 200 <= code < 300:
        _settle(delivery, attempts, status=CallbackDelivery.Status.DELIVERED, code=code, error="",
                delivered_at=timezone.now())
        return f"delivered ({code})"
    if attempts >= settings.CALLBACK_MAX_ATTEMPTS:
        _settle(delivery, attempts, status=CallbackDelivery.Status.FAILED, code=code, error=error)
        return f"failed after {attempts} attempts: {error}"
    wait = min(settings.CALLBACK_BACKOFF_SECONDS * 2 ** (attempts - 1), MAX_BACKOFF_SECONDS)
    _settle(delivery, attempts, status=CallbackDelivery.Status.PENDING, code=code, error=error,
            next_attempt_at=timezone.now() + timedelta(seconds=wait))
    send_after_commit(TASK, delivery.pk, countdown=wait)
    return f"attempt {attempts} failed ({error}); again in {wait:g} s"


def _settle(delivery: CallbackDelivery, attempts: int, *, status: str, code: int | None, error: str,
            **fields: Any) -> int:
    return transition(CallbackDelivery, delivery.pk, CallbackDelivery.Status.SENDING, status, attempts=attempts,
               response_code=code, last_error=error[:ERROR_MAX], **fields)


def summary(execution: Execution) -> dict[str, Any]:
    """What a callback says: the run's §5 document (execution_id, workflow_ref, status,
    started_at, completed_at, results), why it ended, its version, cost, state, where to
    read it, and which trigger started it. Past SUMMARY_MAX_BYTES the results' outputs
    are left out (`outputs_omitted`): the run's API has them."""
    triggered = TriggeredRun.objects.select_related("webhook", "workflow_key").filter(execution=execution).first()
    document = execution_document(execution)
    body = {
        **document,
        "workflow_version": execution.workflow_version.number if execution.workflow_version is not None else None,
        "ended_reason": execution.ended_reason,
        "cost": usd(execution.cost),
        "cost_complete": execution.cost_complete,
        "state": execution.state,
        "page": reverse("executions:detail", args=[execution.execution_id]),
        "trigger": trigger_of(triggered),
        "outputs_omitted": False,
    }
    if len(_encoded(body)) > SUMMARY_MAX_BYTES:
        body["results"] = [{**result, "output": None} for result in body["results"]]
        body["state"] = {}
        body["outputs_omitted"] = True
    return body


def trigger_of(triggered: TriggeredRun | None) -> dict[str, Any] | None:
    """Which trigger started a run: `{"kind": "webhook" | "workflow_key", "id", "name"}`."""
    if triggered is None:
        return None
    if triggered.webhook is not None:
        return {"kind": "webhook", "id": triggered.webhook.hook_id, "name": triggered.webhook.name,
                "idempotency_key": triggered.idempotency_key or None}
    if triggered.workflow_key is not None:
        return {"kind": "workflow_key", "id": triggered.workflow_key.prefix, "name": triggered.workflow_key.name,
                "idempotency_key": triggered.idempotency_key or None}
    return None


def _secret_of(execution: Execution) -> str:
    triggered = TriggeredRun.objects.select_related("webhook", "workflow_key").get(execution=execution)
    if triggered.webhook is not None:
        return signing.unseal(triggered.webhook.sealed_secret)
    assert triggered.workflow_key is not None  # a delivery exists only for runs one of them started
    return signing.unseal(triggered.workflow_key.sealed_callback_secret)


def _encoded(body: dict[str, Any]) -> bytes:
    return json.dumps(body, cls=DjangoJSONEncoder, ensure_ascii=False).encode()


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is answered as it is (a failed attempt): following it could reach a host
    that is not allowed."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def post_summary(url: str, body: dict[str, Any], secret: str) -> tuple[int | None, str]:
    """POST `body` signed with `secret`: the answer's status code (None when there was none)
    and what went wrong ("" for a 2xx)."""
    payload = _encoded(body)
    timestamp = str(int(time.time()))
    request = urllib.request.Request(url, data=payload, method="POST", headers={
        "Content-Type": "application/json", "User-Agent": "Switchyard-Callback",
        signing.TIMESTAMP_HEADER: timestamp, signing.SIGNATURE_HEADER: signing.signature(secret, timestamp, payload)})
    try:
        with _OPENER.open(request, timeout=settings.CALLBACK_TIMEOUT_SECONDS) as response:
            return response.status, ""
    except urllib.error.HTTPError as answered:
        answered.close()
        return answered.code, f"answered {answered.code}" + (" (a redirect, not followed)"
                                                             if 300 <= answered.code < 400 else "")
    except (urllib.error.URLError, OSError, ValueError) as failed:
        reason = getattr(failed, "reason", failed)
        return None, f"no answer: {reason}"
