"""The workflow page's Webhooks and Keys sections: what each role is given (server-side),
and in a real browser (Debian's chromium) a webhook and a key made, each secret shown once,
a refusal shown at its field, a key revoked, and the webhook's run naming it on its page."""
from __future__ import annotations

import pytest

from tests.pages.conftest import signed_in
from tests.triggers.conftest import signed_post
from triggers import services
from triggers.models import WebhookTrigger, WorkflowKey
from workflows.models import Workflow

XSS = "<script>window.pwned=1</script>"


@pytest.mark.django_db
def test_it_lists_webhooks_and_keys_and_gives_forms_to_authors_only(hooked, api):
    workflow = Workflow.objects.get(workflow_id="hooked")
    webhook, secret = services.webhook_create(workflow=workflow, actor=api.author.user, name=XSS,
                                              input_mapping={"repository": "$.repo"})
    key, presented, _ = services.key_create(workflow=workflow, actor=api.author.user, name="ci")

    author = signed_in(api.author.user).get("/workflows/hooked/").content.decode()
    assert f'data-hook="{webhook.hook_id}"' in author and f'data-key="{key.prefix}"' in author
    assert 'id="webhook-form"' in author and 'id="key-form"' in author and "js/workflow_triggers.js" in author
    assert XSS not in author and "&lt;script&gt;window.pwned=1&lt;/script&gt;" in author
    assert secret not in author and presented not in author
    viewer = signed_in(api.viewer.user).get("/workflows/hooked/").content.decode()
    assert f'data-hook="{webhook.hook_id}"' in viewer and f'data-key="{key.prefix}"' in viewer
    assert "webhook-form" not in viewer and "key-revoke" not in viewer and "webhook-disable" not in viewer


@pytest.mark.django_db(transaction=True)
def test_it_makes_a_webhook_and_a_key_showing_each_secret_once_and_revokes_the_key(hooked, api, page_for):
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
