"""The workflow page's Webhooks and Keys sections: what each role is given, escaped, and
never a secret (the browser test: tests/pages/test_triggers_pages.py)."""
from __future__ import annotations

import pytest

from tests.pages.conftest import signed_in
from triggers import services
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
