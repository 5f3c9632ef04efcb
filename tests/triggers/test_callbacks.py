"""Callbacks out: a run's signed summary POSTed to a loopback server of the test's own when
the run ends, tried again after a 500 with a growing wait, never sent to a host that is not
allowed (when given, and again when sent), never following a redirect."""
from __future__ import annotations

import json
import time
from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from executions.models import Execution
from executions.services import execution_cancel
from tests.conftest import ApiClient
from tests.triggers.conftest import CallbackServer, signed_post
from triggers import signing
from triggers.callbacks import deliveries_sweep, delivery_attempt
from triggers.models import CallbackDelivery

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent():
    """No message goes to a worker: the node runs' and the deliveries' sends are recorded."""
    with mock.patch("executions.tasks.run_node.apply_async"), \
            mock.patch("triggers.tasks.deliver_callback.apply_async") as deliveries:
        yield deliveries


@pytest.fixture
def ended_run(hooked, api, callback_server, sent, django_capture_on_commit_callbacks):
    """A run a webhook with a callback started, then cancelled: its delivery is due. The
    webhook's answer (with its secret) is `ended_run.webhook`."""
    webhook = api.author.post("/api/workflows/hooked/webhooks", {
        "name": "issues", "input_mapping": {"repository": "$.repo"}, "callback_url": callback_server.url}).json()
    with django_capture_on_commit_callbacks(execute=True):
        started = signed_post(f"/hooks/{webhook['hook_id']}", {"repo": "acme"}, webhook["secret"])
    execution = Execution.objects.get(execution_id=started.json()["execution_id"])
    assert CallbackDelivery.objects.get(execution=execution).status == "waiting"
    with django_capture_on_commit_callbacks(execute=True):
        execution_cancel(execution=execution)
    execution.webhook = webhook
    return execution


def test_it_posts_the_runs_signed_summary_once_the_run_ends(ended_run, callback_server, sent, api):
    delivery = CallbackDelivery.objects.get()
    assert delivery.status == "pending" and [call.args[0] for call in sent.call_args_list] == [(delivery.pk,)]

    assert delivery_attempt(delivery_pk=delivery.pk) == "delivered (200)"

    (request,) = callback_server.received
    headers = request["headers"]
    assert signing.signature_problem(ended_run.webhook["secret"], timestamp=headers["X-Switchyard-Timestamp"],
                                     signed=headers["X-Switchyard-Signature"], body=request["body"],
                                     now=time.time(), window=300) is None
    summary = json.loads(request["body"])
    assert {key: summary[key] for key in ("execution_id", "workflow_ref", "status")} == {
        "execution_id": ended_run.execution_id, "workflow_ref": "hooked", "status": "cancelled"}
    assert summary["trigger"]["kind"] == "webhook" and summary["completed_at"] and "cost" in summary
    shown = api.viewer.get(f"/api/executions/{ended_run.execution_id}/trigger").json()["callbacks"]
    assert [(row["status"], row["attempts"], row["response_code"]) for row in shown] == [("delivered", 1, 200)]


def test_it_tries_again_after_a_500_waiting_longer_each_time(ended_run, callback_server, settings,
                                                            django_capture_on_commit_callbacks, sent):
    settings.CALLBACK_BACKOFF_SECONDS = 5
    callback_server.answers = [(500, {}), (503, {})]
    delivery = CallbackDelivery.objects.get()
    sent.reset_mock()

    with django_capture_on_commit_callbacks(execute=True):
        delivery_attempt(delivery_pk=delivery.pk)
        delivery_attempt(delivery_pk=delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_code, delivery.last_error) == \
        ("pending", 2, 503, "answered 503")
    assert [call.kwargs["countdown"] for call in sent.call_args_list] == [5, 10]

    delivery_attempt(delivery_pk=delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("delivered", 3, 200)
    assert len(callback_server.received) == 3


def test_it_fails_the_delivery_after_its_last_attempt(ended_run, callback_server, settings):
    settings.CALLBACK_MAX_ATTEMPTS = 2
    callback_server.answers = [(500, {}), (500, {})]
    delivery = CallbackDelivery.objects.get()

    delivery_attempt(delivery_pk=delivery.pk)
    assert delivery_attempt(delivery_pk=delivery.pk).startswith("failed after 2 attempts")
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", 2)
    assert delivery_attempt(delivery_pk=delivery.pk).startswith("not pending")  # a second message does nothing


def test_it_never_calls_a_host_taken_off_the_list_since(ended_run, callback_server, settings):
    settings.CALLBACK_ALLOWED_HOSTS = ["hooks.example.com"]
    delivery = CallbackDelivery.objects.get()

    delivery_attempt(delivery_pk=delivery.pk)

    delivery.refresh_from_db()
    assert delivery.status == "failed" and f"'{callback_server.host}', which is not among" in delivery.last_error
    assert callback_server.received == []


def test_it_does_not_follow_a_redirect(ended_run, callback_server, settings):
    elsewhere = CallbackServer()
    try:
        settings.CALLBACK_ALLOWED_HOSTS = [callback_server.host, elsewhere.host]
        callback_server.answers = [(302, {"Location": elsewhere.url})]
        delivery = CallbackDelivery.objects.get()

        delivery_attempt(delivery_pk=delivery.pk)

        delivery.refresh_from_db()
        assert (delivery.status, delivery.response_code) == ("pending", 302)
        assert "a redirect, not followed" in delivery.last_error and elsewhere.received == []
    finally:
        elsewhere.stop()


def test_it_refuses_a_callback_url_on_a_host_not_allowed_starting_nothing(hooked, api, callback_server):
    made = api.author.post("/api/workflows/hooked/keys", {"name": "ci"}).json()
    client = ApiClient(None, made["key"])

    answer = client.post("/api/workflows/hooked/runs", {"input": {"repository": "a"},
                                                        "callback_url": "http://169.254.169.254/latest"})

    assert answer.status_code == 422
    assert answer.json()["message"].startswith("callback_url: the callback URL names the host '169.254.169.254'")
    assert answer.json()["details"] == {"host": "169.254.169.254"}
    assert not Execution.objects.exists() and not CallbackDelivery.objects.exists()
    refused_key = api.author.post("/api/workflows/hooked/keys", {"name": "ci", "callback_url": "ftp://" + callback_server.host})
    assert refused_key.status_code == 422 and "must be an http or https URL" in refused_key.json()["message"]


@pytest.mark.django_db(transaction=True)
def test_it_runs_a_webhooks_run_on_a_real_worker_and_delivers_its_callback_after_a_500(hooked, api, workers,
                                                                                     callback_server):
    callback_server.answers = [(500, {})]
    workers.start(1, CALLBACK_ALLOWED_HOSTS=callback_server.host, CALLBACK_BACKOFF_SECONDS="0.2")
    webhook = api.author.post("/api/workflows/hooked/webhooks", {
        "name": "issues", "input_mapping": {"repository": "$.repo"}, "callback_url": callback_server.url}).json()

    started = signed_post(f"/hooks/{webhook['hook_id']}", {"repo": "acme"}, webhook["secret"])
    assert started.status_code == 202, started.content

    delivery = CallbackDelivery.objects.get()
    deadline = time.monotonic() + 60
    while delivery.status != "delivered":
        assert time.monotonic() < deadline, f"the callback is {delivery.status}\n{workers.logs()}"
        time.sleep(0.1)
        delivery.refresh_from_db()
    assert delivery.execution.status == "success" and delivery.attempts == 2
    summaries = [json.loads(request["body"]) for request in callback_server.received]
    assert [(summary["execution_id"], summary["status"]) for summary in summaries] == \
        [(delivery.execution.execution_id, "success")] * 2
    assert summaries[-1]["results"][0]["node_id"] == "analyse" and summaries[-1]["results"][0]["output"]


def test_the_sweep_takes_up_deliveries_a_lost_signal_message_or_worker_left(hooked, api, callback_server, sent,
                                                                             django_capture_on_commit_callbacks):
    webhook = api.author.post("/api/workflows/hooked/webhooks", {
        "name": "issues", "input_mapping": {"repository": "$.repo"}, "callback_url": callback_server.url}).json()
    runs = [signed_post(f"/hooks/{webhook['hook_id']}", {"repo": name}, webhook["secret"]).json()["execution_id"]
            for name in ("unheard", "lost", "stuck")]
    for execution_id in runs:  # ended, but the signal after the commit never runs in this test's transaction
        execution_cancel(execution=Execution.objects.get(execution_id=execution_id))
    deliveries = {execution_id: CallbackDelivery.objects.get(execution__execution_id=execution_id)
                  for execution_id in runs}
    long_ago = timezone.now() - timedelta(minutes=5)
    CallbackDelivery.objects.filter(pk=deliveries[runs[1]].pk).update(status="pending",
                                                                                next_attempt_at=long_ago)
    CallbackDelivery.objects.filter(pk=deliveries[runs[2]].pk).update(status="sending", last_attempt_at=long_ago)

    with django_capture_on_commit_callbacks(execute=True):
        assert deliveries_sweep() == {"woken": 1, "resent": 1, "stuck": 1}

    assert sorted(call.args[0][0] for call in sent.call_args_list) == sorted(d.pk for d in deliveries.values())
    for delivery in deliveries.values():
        delivery.refresh_from_db()
    assert [(d.status, d.attempts) for d in deliveries.values()] == [("pending", 0), ("pending", 0), ("pending", 1)]
    assert deliveries[runs[2]].last_error == "no answer: the worker stopped during the attempt"
