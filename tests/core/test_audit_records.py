"""Each change of consequence leaves exactly one entry on the audit trail, with who made it,
from where (an API token, a page, a command, the admin site) and the values before and after."""
import json
import sys

import pytest
from django.contrib.auth.models import Group, User
from django.db.models import Max
from django.test import Client

import manage
from agents.models import Agent, DeriveRequest
from core.models import ApiToken, AuditEntry
from tests.replay import load_demo
from workflows.models import Workflow

pytestmark = pytest.mark.django_db

REVIEW = {
    "workflow_id": "paper_review", "name": "Paper review", "topology": "seq",
    "nodes": [{"id": "read", "agent_ref": "Scholar", "input_mapping": {}},
              {"id": "check", "agent_ref": "Validator", "input_mapping": {}}],
    "transitions": [{"from": "read", "to": "check"}],
}


@pytest.fixture
def demo(tmp_path, settings):
    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)


class Trail:
    """The entries a test made: those after every entry its fixtures wrote (the demo's
    import, the users of `api`)."""

    def __init__(self):
        self.first = (AuditEntry.objects.aggregate(last=Max("id"))["last"] or 0) + 1

    def ours(self):
        return AuditEntry.objects.filter(id__gte=self.first)

    def entry(self, action: str) -> AuditEntry:
        """The one entry of `action` the test made (a second one fails the test)."""
        (entry,) = self.ours().filter(action=action)
        return entry


@pytest.fixture
def trail(request):
    for name in ("api", "demo"):  # written before the trail starts
        if name in request.fixturenames:
            request.getfixturevalue(name)
    return Trail()


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def token_prefix(client) -> str:
    return ApiToken.objects.get(user=client.user).prefix


def test_it_records_an_agent_created_and_edited_through_the_api_as_the_token_that_did_it(api, demo, trail):
    document = {"agent_id": "Critic", "name": "Critic", "prompt_config": {"system_prompt": "Find the flaw."}}
    assert api.author.post("/api/agents", document).status_code == 201
    changed = {**document, "prompt_config": {"system_prompt": "Find every flaw."}}
    assert api.author.put("/api/agents/Critic", changed).status_code == 200
    assert api.author.put("/api/agents/Critic", changed).status_code == 200  # nothing changed: no entry

    created, updated = trail.entry("agent.create"), trail.entry("agent.update")
    for entry in (created, updated):
        assert (entry.actor_id, entry.actor_name) == (api.author.user.pk, "author-user")
        assert (entry.via, entry.via_detail) == ("api_token", token_prefix(api.author))
        assert (entry.object_type, entry.object_id) == ("agent", "Critic")
    assert created.before is None
    assert created.after["version"] == "1.0.0" and created.after["prompt_config"] == {"system_prompt": "Find the flaw."}
    assert updated.before == {"version": "1.0.0", "prompt_config": {"system_prompt": "Find the flaw."}}
    assert updated.after == {"version": "1.0.1", "prompt_config": {"system_prompt": "Find every flaw."}}

    assert api.author.post("/api/agents/Critic/deprecate").status_code == 200
    deprecated = trail.entry("agent.deprecate")
    assert (deprecated.before, deprecated.after, deprecated.actor_name) == (
        {"status": "active"}, {"status": "deprecated"}, "author-user")


def test_it_records_an_agent_edited_on_its_page_as_from_the_page(api, demo, trail):
    author = signed_in(api.author.user)
    form = author.get("/agents/Scholar/edit/").context["form"]
    values = {name: form[name].value() or "" for name in form.fields} | {"name": "Scholar the Second"}

    assert author.post("/agents/Scholar/edit/", values, REMOTE_ADDR="10.1.2.3").status_code == 302

    entry = trail.entry("agent.update")
    assert (entry.via, entry.via_detail, entry.actor_name) == ("page", "10.1.2.3", "author-user")
    assert entry.before == {"version": "1.0.0", "name": "Scholar"}
    assert entry.after == {"version": "1.0.1", "name": "Scholar the Second"}


def test_it_records_a_documents_import_as_the_command_that_made_it(demo, tmp_path, monkeypatch, trail):
    path = tmp_path / "critic.json"
    path.write_text(json.dumps({"agent_id": "Critic", "name": "Critic"}))
    # Through manage.py's own door, in this process (so on the test database, which the
    # command must then leave open).
    monkeypatch.setattr(sys, "argv", ["manage.py", "import_document", str(path)])
    monkeypatch.setattr("django.core.management.base.connections.close_all", lambda: None)
    manage.main()

    entry = trail.entry("agent.create")
    assert (entry.via, entry.via_detail, entry.object_id, entry.actor_id) == ("command", "import_document", "Critic",
                                                                               None)


def test_it_records_workflow_saves_a_restore_and_a_delete_once_each(api, demo, trail):
    assert api.author.post("/api/workflows", REVIEW).status_code == 201
    renamed = {**REVIEW, "name": "Paper review, twice"}
    assert api.author.put("/api/workflows/paper_review", renamed).status_code == 200
    restored = api.author.post("/api/workflows/paper_review/versions/1/restore")
    assert restored.status_code == 201, restored.json()

    created, updated, restore = (trail.entry(action) for action in
                                 ("workflow.create", "workflow.update", "workflow.restore"))
    assert created.before is None and created.after["version"] == 1 and created.after["name"] == "Paper review"
    assert (updated.before, updated.after) == ({"version": 1, "name": "Paper review"},
                                               {"version": 2, "name": "Paper review, twice"})
    assert (restore.before, restore.after) == ({"version": 2, "name": "Paper review, twice"},
                                               {"version": 3, "name": "Paper review", "restored_from": 1})
    assert {entry.via for entry in (created, updated, restore)} == {"api_token"}

    assert api.author.delete("/api/workflows/paper_review").status_code == 204
    deleted = trail.entry("workflow.delete")
    assert (deleted.object_id, deleted.actor_name, deleted.after) == ("paper_review", "author-user", None)
    assert deleted.before == {"name": "Paper review", "topology": "seq", "nodes": ["read", "check"], "versions": 3}
    assert trail.ours().filter(object_type="workflow").count() == 4


def test_it_records_api_tokens_created_and_revoked(api, trail):
    author = signed_in(api.author.user)
    created = author.post("/api/tokens", {"name": "nightly"}, content_type="application/json").json()
    revoke = author.delete(f"/api/tokens/{created['id']}")
    assert revoke.status_code == 200 and revoke.json()["revoked_at"]
    author.delete(f"/api/tokens/{created['id']}")  # revoked already: no second entry

    made, revoked = trail.entry("token.create"), trail.entry("token.revoke")
    assert (made.object_id, made.via, made.after) == (created["prefix"], "page", {"name": "nightly",
                                                                                   "user": "author-user"})
    assert revoked.before == {"name": "nightly", "user": "author-user", "revoked_at": None}
    assert revoked.after["revoked_at"] and revoked.actor_name == "author-user"


def test_it_records_a_change_of_roles_through_the_api_as_one_entry(api, trail):
    response = api.admin.put(f"/api/users/{api.author.user.pk}/roles", {"roles": ["approver"]})
    assert response.status_code == 200, response.json()

    entry = trail.entry("user.roles")  # a remove and an add of groups, one change
    assert (entry.object_type, entry.object_id, entry.actor_name) == ("user", "author-user", "admin-user")
    assert (entry.before, entry.after) == ({"roles": ["viewer", "author"]}, {"roles": ["viewer", "approver"]})


def test_it_records_groups_given_outside_the_api_and_the_admin_too(api, trail):
    api.viewer.user.groups.add(Group.objects.get(name="author"))

    entry = trail.entry("user.roles")
    assert (entry.object_id, entry.before, entry.after, entry.via) == (
        "viewer-user", {"groups": []}, {"groups": ["author"]}, "system")


def test_it_records_a_users_groups_changed_on_the_admin_site_as_one_entry(api, trail):
    superuser = User.objects.create_superuser("root", password="a long password")
    user = api.author.user
    admin = signed_in(superuser)
    form = admin.get(f"/admin/auth/user/{user.pk}/change/").context["adminform"].form
    values = {name: form[name].value() for name in form.fields if form[name].value() is not None}
    values.update(groups=[Group.objects.get(name="admin").pk], is_staff="on", date_joined_0="2026-01-01",
                  date_joined_1="00:00:00")
    values.pop("password", None)
    values.pop("last_login", None)

    response = admin.post(f"/admin/auth/user/{user.pk}/change/", values)

    assert response.status_code == 302, response.context["adminform"].form.errors
    entry = trail.entry("user.change")
    assert (entry.object_id, entry.actor_name, entry.via) == ("author-user", "root", "page")
    assert entry.before["groups"] == ["author"] and entry.after["groups"] == ["admin"]
    assert entry.before["is_staff"] is False and entry.after["is_staff"] is True
    assert not trail.ours().filter(action="user.roles").exists()


def test_it_records_a_password_set_on_the_admin_site_without_its_value(api, trail):
    admin = signed_in(User.objects.create_superuser("root", password="a long password"))
    response = admin.post(f"/admin/auth/user/{api.viewer.user.pk}/password/",
                          {"password1": "another long password", "password2": "another long password",
                           "usable_password": "true", "set_usable_password": "true"})

    assert response.status_code == 302
    entry = trail.entry("user.password")
    assert (entry.object_id, entry.actor_name, entry.after) == ("viewer-user", "root", {"password": "(set)"})
    assert "another long password" not in json.dumps([entry.before, entry.after])


def test_it_records_an_agent_edited_and_deleted_on_the_admin_site(api, demo, trail):
    superuser = User.objects.create_superuser("root", password="a long password")
    admin = signed_in(superuser)
    agent = Agent.objects.get(agent_id="Validator")
    document = admin.get(f"/admin/agents/agent/{agent.pk}/change/").context["adminform"].form["document"].value()
    changed = {**json.loads(document), "name": "Validator Prime"}
    response = admin.post(f"/admin/agents/agent/{agent.pk}/change/", {"document": json.dumps(changed)})
    assert response.status_code == 302

    updated = trail.entry("agent.update")  # the import's own entry; the dry run's was rolled back
    assert (updated.via, updated.actor_name, updated.after["name"]) == ("page", "root", "Validator Prime")

    workflow = Workflow.objects.create(workflow_id="lonely", name="Lonely", topology="seq")
    response = admin.post(f"/admin/workflows/workflow/{workflow.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    deleted = trail.entry("workflow.delete")
    assert (deleted.object_id, deleted.actor_name, deleted.before["name"]) == ("lonely", "root", "Lonely")


def test_it_records_a_derive_request_approved_with_who_and_why(api, demo, trail):
    raised = api.author.post("/api/derive-requests", {"parent_agent_id": "Scholar", "trigger": "quality_issue",
                                                      "specialization": {"new_name": "Scholar (CV)"}})
    assert raised.status_code == 201, raised.json()
    request_id = raised.json()["derive_request_id"]

    answer = api.approver.post(f"/api/derive-requests/{request_id}/approve", {"comment": "worth a try"})

    assert answer.status_code == 200, answer.json()
    entry = trail.entry("derive_request.approve")
    assert (entry.object_type, entry.object_id, entry.actor_name, entry.via) == (
        "derive_request", request_id, "approver-user", "api_token")
    assert entry.before == {"status": "pending"}
    assert entry.after == {"status": "approved", "decided_by": "approver-user", "comment": "worth a try"}


def test_it_records_a_datasets_item_removed(api, demo, trail):
    from experiments.dataset_services import dataset_import

    dataset_import(name="qa", data=b'{"id": "a", "input": {"q": 1}}\n{"id": "b", "input": {"q": 2}}\n',
                   fmt="jsonl", actor="author-user")

    assert api.author.delete("/api/datasets/qa/items/a").status_code == 200

    entry = trail.entry("dataset.remove_item")
    assert (entry.object_id, entry.actor_name, entry.via) == ("qa", "author-user", "api_token")
    assert entry.before == {"version": 1, "items": 2, "item_id": "a",
                            "item": {"input": {"q": 1}, "expected": None, "has_expected": False}}
    assert entry.after == {"version": 2, "items": 1}


def test_it_records_a_release_requirement_a_release_and_an_evaluation_given_by_hand(api, demo, trail):
    from experiments.dataset_services import dataset_import

    dataset_import(name="qa", data=b'{"id": "a", "input": {"q": 1}}\n', fmt="jsonl", actor="author-user")
    assert api.author.post("/api/workflows", REVIEW).status_code == 201
    requirement = {"dataset": "qa", "thresholds": {"exact": 0.5}}
    assert api.author.put("/api/workflows/paper_review/release-requirement",
                          {"release_requirement": requirement}).status_code == 200
    assert api.author.put("/api/workflows/paper_review/release-requirement",
                          {"release_requirement": None}).status_code == 200
    assert api.author.post("/api/workflows/paper_review/versions/1/release").status_code == 200
    given = api.author.post("/api/evaluations", {
        "evaluation_id": "by_hand", "target_type": "workflow", "target_id": "paper_review",
        "scores": {"accuracy": 0.0, "completeness": 0.0, "efficiency": 0.0}, "overall_score": 0.0, "pass": False,
        "feedback": ["wrong file"], "action": "reject"})
    assert given.status_code == 201, given.json()

    set_, cleared = trail.ours().filter(action="workflow.release_requirement").order_by("id")
    assert (set_.before, set_.after) == ({"release_requirement": None},
                                         {"release_requirement": {"dataset": "qa", "thresholds": {"exact": 0.5}}})
    assert cleared.after == {"release_requirement": None}
    released = trail.entry("workflow.release")
    assert (released.actor_name, released.before) == ("author-user", {"version": 1, "released_at": None})
    assert released.after["version"] == 1 and released.after["released_at"]
    evaluation = trail.entry("evaluation.create")
    assert (evaluation.object_id, evaluation.actor_name, evaluation.after["target"], evaluation.after["passed"]) == (
        "by_hand", "author-user", "workflow paper_review", False)


def test_it_records_a_derive_requests_document_edited_on_the_admin_site(api, demo, trail):
    raised = api.author.post("/api/derive-requests", {"parent_agent_id": "Scholar", "trigger": "quality_issue",
                                                      "specialization": {"new_name": "Scholar (CV)"}}).json()
    request = DeriveRequest.objects.get(derive_request_id=raised["derive_request_id"])
    admin = signed_in(User.objects.create_superuser("root", password="a long password"))
    address = f"/admin/agents/deriverequest/{request.pk}/change/"
    document = json.loads(admin.get(address).context["adminform"].form["document"].value())
    document["specialization"]["domain_focus"] = "computer vision"

    assert admin.post(address, {"document": json.dumps(document)}).status_code == 302

    entry = trail.entry("derive_request.update")
    assert (entry.object_id, entry.actor_name, entry.via) == (request.derive_request_id, "root", "page")
    assert entry.before["specialization"]["domain_focus"] in ("", None)
    assert entry.after["specialization"]["domain_focus"] == "computer vision"


def test_it_records_the_admin_account_ensure_admin_makes_as_the_commands(db, trail):
    from io import StringIO

    from django.core.management import call_command

    from core.audit import acting

    with acting("command", "ensure_admin"):  # as manage.py's door sets it
        call_command("ensure_admin", stdout=StringIO())

    entry = trail.entry("user.create")
    assert (entry.object_id, entry.via, entry.via_detail, entry.actor_id) == ("admin", "command", "ensure_admin", None)
    assert entry.after == {"username": "admin", "is_superuser": True, "is_staff": True, "is_active": True}


def test_it_records_a_field_changed_and_objects_deleted_in_bulk_on_the_admin_site(api, trail):
    from experiments.dataset_services import dataset_import
    from experiments.models import Dataset

    dataset_import(name="qa", data=b'{"id": "a", "input": {"q": 1}}\n', fmt="jsonl", actor="author-user")
    dataset = Dataset.objects.get(name="qa")
    admin = signed_in(User.objects.create_superuser("root", password="a long password"))
    assert admin.post(f"/admin/experiments/dataset/{dataset.pk}/change/",
                      {"description": "<i>questions</i>"}).status_code == 302
    tokens = [ApiToken.issue(api.viewer.user, name)[0] for name in ("one", "two")]

    response = admin.post("/admin/core/apitoken/", {"action": "delete_selected", "post": "yes",
                                                    "_selected_action": [token.pk for token in tokens]})

    assert response.status_code == 302
    changed = trail.entry("dataset.change")
    assert (changed.object_id, changed.before, changed.after) == ("qa", {"description": ""},
                                                                  {"description": "<i>questions</i>"})
    deleted = trail.ours().filter(action="token.delete").order_by("object_id")
    assert sorted(entry.object_id for entry in deleted) == sorted(token.prefix for token in tokens)
    assert {entry.before["name"] for entry in deleted} == {"one", "two"}
    assert all(entry.before["digest"] == "(set)" and entry.actor_name == "root" for entry in deleted)
