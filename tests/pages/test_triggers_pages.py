"""The workflow page's Webhooks and Keys sections in a real browser (Debian's chromium): a
webhook and a key made, each secret shown once, a refusal shown at its field, a key revoked,
and the webhook's run naming it on its page. (What each role is given: tests/triggers/test_pages.py.)"""
from __future__ import annotations

import pytest

from tests.triggers.conftest import load_hooked, signed_post
from triggers.models import WebhookTrigger, WorkflowKey


@pytest.mark.django_db(transaction=True)
def test_it_makes_a_webhook_and_a_key_showing_each_secret_once_and_revokes_the_key(api, page_for, settings, tmp_path):
    settings.WORKSPACE_ROOT = tmp_path
    load_hooked()
    page = page_for(api.author.user)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto("/workflows/hooked/#webhooks")

    page.click("#webhook-new summary")
    page.fill("#webhook-form input[name=name]", "issues")
    page.fill("#webhook-form textarea[name=input_mapping]", '{"repository": "$.repo.full_name"}')
    page.click("#webhook-form button[type=submit]")
    page.wait_for_selector("#webhook-created:not([hidden])")
    secret = page.text_content('#webhook-created [data-field="secret"]')
    webhook = WebhookTrigger.objects.get()
    assert secret.startswith("whsec_") and page.text_content('#webhook-created [data-field="url"]').endswith(
        f"/hooks/{webhook.hook_id}")
    assert webhook.input_mapping == {"repository": "$.repo.full_name"}

    page.click("#key-new summary")
    page.fill("#key-form input[name=name]", "ci")
    page.fill("#key-form input[name=callback_url]", "https://elsewhere.example/done")
    page.click("#key-form button[type=submit]")
    page.wait_for_selector('#key-form [data-field="error"]:has-text("elsewhere.example")')
    assert not WorkflowKey.objects.exists()
    page.fill("#key-form input[name=callback_url]", "")
    page.click("#key-form button[type=submit]")
    page.wait_for_selector("#key-created:not([hidden])")
    presented = page.text_content('#key-created [data-field="key"]')
    key = WorkflowKey.objects.get()
    assert presented.startswith(f"swk_{key.prefix}_")

    started = signed_post(f"/hooks/{webhook.hook_id}", {"repo": {"full_name": "acme/shop"}}, secret)
    assert started.status_code == 202, started.content

    page.reload()
    html = page.content()
    assert secret not in html and presented not in html, "each is shown once, when made"
    assert page.locator(f'#webhooks-table tr[data-hook="{webhook.hook_id}"]').count() == 1
    page.click(f'button.key-revoke[data-key="{key.prefix}"]')
    page.wait_for_selector(f'#keys-table tr[data-key="{key.prefix}"] .badge:has-text("revoked")')
    key.refresh_from_db()
    assert key.revoked_at is not None

    page.goto(f"/executions/{started.json()['execution_id']}/")
    page.wait_for_selector("#run-trigger:has-text('Started by the webhook issues')")
    assert webhook.hook_id in page.text_content("#run-trigger") and errors == []
