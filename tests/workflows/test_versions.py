"""Workflow versions: every saved change adds one; two are compared; an old one is restored
as a new version; the API and the command that list, compare and restore them."""
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents.models import Agent
from core.documents import import_documents
from core.errors import WorkflowInvalid
from demo.documents import _agent
from tests.replay import load_demo
from workflows.documents import workflow_document
from workflows.models import Workflow
from workflows.services import workflow_import_document, workflow_version_restore

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(tmp_path, settings):
    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)


def save(workflow_id, change, actor="ada"):
    document = workflow_document(Workflow.objects.get(workflow_id=workflow_id))
    change(document)
    return workflow_import_document(document, actor=actor)[1]


def edit_three_times():
    """Three saves of release_review that between them change every part of its document."""
    def settings(document):
        document["name"] = "Release review, stricter"
        document["domain"] = "compliance"
        document["error_handling"] = {"retry_count": 0, "fallback_agent": None, "escalate_to": "Reviewer"}
        document["limits"] = {"max_steps": 5, "max_wall_seconds": 60}
        document["evaluation"] = {"judge_agent": None, "quality_gate": {"completeness": 0.5}}

    def node(document, node_id):
        return next(node for node in document["nodes"] if node["id"] == node_id)

    def nodes(document):
        document["nodes"][0]["layout"] = {"x": 300, "y": 40}
        document["nodes"][1]["input_mapping"] = {"draft": "$.state.draft", "topic": "$.input.topic"}
        node(document, "approve")["gate"] = {"prompt": "Publish?", "deciders": {"users": ["ada"]}}
        document["nodes"] = [node for node in document["nodes"] if node["id"] != "compliance"]
        document["transitions"] = [t for t in document["transitions"] if t["to"] != "compliance"]

    def transitions(document):
        document["transitions"][1]["condition"] = "output.verdict == 'revise'"
        node(document, "publish")["compress"] = True

    assert [save("release_review", change) for change in (settings, nodes, transitions)] == ["updated"] * 3


def test_a_workflow_edited_three_times_has_four_versions_with_who_and_when(demo):
    workflow = Workflow.objects.get(workflow_id="release_review")
    (first,) = workflow.versions.all()
    assert first.document == workflow_document(workflow) and first.created_by == "demo"

    edit_three_times()
    versions = list(workflow.versions.order_by("number"))
    assert [v.number for v in versions] == [1, 2, 3, 4]
    assert [v.created_by for v in versions] == ["demo", "ada", "ada", "ada"]
    assert versions[-1].document == workflow_document(Workflow.objects.get(pk=workflow.pk))
    assert versions[1].document["limits"] == {"max_steps": 5, "max_wall_seconds": 60}
    assert [n["id"] for n in versions[2].document["nodes"]] == ["draft", "review", "approve", "publish"]
    assert save("release_review", lambda document: None) == "unchanged"
    assert workflow.versions.count() == 4, "a save that changes nothing adds no version"


def test_restoring_the_first_version_brings_every_field_back_as_a_new_version(demo):
    workflow = Workflow.objects.get(workflow_id="release_review")
    original = workflow_document(workflow)
    edit_three_times()
    assert workflow_document(Workflow.objects.get(pk=workflow.pk)) != original

    restored = workflow_version_restore(workflow=workflow, number=1, actor="grace")
    assert (restored.number, restored.created_by, restored.note) == (5, "grace", "restored from version 1")
    now = workflow_document(Workflow.objects.get(pk=workflow.pk))
    for field in ("name", "topology", "nodes", "transitions", "error_handling", "limits", "domain", "evaluation"):
        assert now[field] == original[field], field
    assert [node.get("layout") for node in now["nodes"]] == [node.get("layout") for node in original["nodes"]]
    assert now == original == restored.document
    assert list(workflow.versions.values_list("number", flat=True)) == [1, 2, 3, 4, 5]


def test_a_version_naming_an_agent_deleted_since_is_not_restored(demo):
    import_documents([_agent("Proofreader", "Proofreader", skills=["review"])], actor="ada")
    save("release_review", lambda document: document["nodes"][1].update(agent_ref="Proofreader"))
    save("release_review", lambda document: document["nodes"][1].update(agent_ref="Reviewer"))
    # No service deletes an agent; an administrator may, once nothing stored points at it.
    Agent.objects.filter(agent_id="Proofreader").update(root=None)
    Agent.objects.get(agent_id="Proofreader").delete()
    workflow = Workflow.objects.get(workflow_id="release_review")
    with pytest.raises(WorkflowInvalid) as refused:
        workflow_version_restore(workflow=workflow, number=2)
    assert [(p["where"], p["code"]) for p in refused.value.problems] == [("nodes[review].agent_ref", "UNKNOWN_AGENT")]
    assert workflow.versions.count() == 3


# -- the API ---------------------------------------------------------------------------


def test_everyone_signed_in_lists_reads_and_compares_versions(api, demo):
    edit_three_times()
    listed = api.viewer.get("/api/workflows/release_review/versions").json()
    assert [(v["number"], v["created_by"], v["runs"]) for v in listed["items"]] == [
        (4, "ada", 0), (3, "ada", 0), (2, "ada", 0), (1, "demo", 0)]
    one = api.viewer.get("/api/workflows/release_review/versions/1").json()
    assert one["document"] == Workflow.objects.get(workflow_id="release_review").versions.get(number=1).document

    diff = api.viewer.get("/api/workflows/release_review/versions/diff", a=1, b=4).json()
    assert (diff["a"], diff["b"], diff["same"]) == (1, 4, False)
    assert diff["nodes"]["removed"] == ["compliance"]
    assert diff["nodes"]["changed"] == [{"id": "draft", "fields": ["layout"]},
                                        {"id": "review", "fields": ["input_mapping"]},
                                        {"id": "approve", "fields": ["gate"]},
                                        {"id": "publish", "fields": ["compress"]}]
    assert [(t["from"], t["to"]) for t in diff["transitions"]["removed"]] == [("publish", "compliance")]
    assert [(t["from"], t["to"], t["fields"]) for t in diff["transitions"]["changed"]] == [
        ("review", "draft", ["condition"])]
    assert [s["name"] for s in diff["settings"]] == ["name", "error_handling", "limits", "domain", "evaluation"]
    assert {"path": "/limits/max_steps", "op": "changed", "a": 12, "b": 5} in diff["json"]

    assert api.anonymous.get("/api/workflows/release_review/versions").status_code == 401
    missing = api.viewer.get("/api/workflows/release_review/versions/9")
    assert missing.status_code == 404 and "its versions: 1 to 4" in missing.json()["message"]
    assert api.viewer.get("/api/workflows/release_review/versions/diff", a=1, b=9).status_code == 404
    assert api.viewer.get("/api/workflows/release_review/versions/diff", a=1).status_code == 422
    assert api.viewer.get("/api/workflows/nope/versions").status_code == 404


def test_authors_restore_a_version_and_viewers_may_not(api, demo):
    edit_three_times()
    assert api.viewer.post("/api/workflows/release_review/versions/1/restore").status_code == 403
    restored = api.author.post("/api/workflows/release_review/versions/1/restore")
    assert restored.status_code == 201
    body = restored.json()
    assert (body["number"], body["created_by"], body["note"]) == (5, "author-user", "restored from version 1")
    assert api.viewer.get("/api/workflows/release_review").json()["limits"] == {"max_steps": 12, "max_wall_seconds": 600}
    again = api.author.post("/api/workflows/release_review/versions/5/restore")
    assert again.status_code == 409 and again.json()["code"] == "CONFLICT", "already as version 5 is"
    assert api.author.post("/api/workflows/release_review/versions/7/restore").status_code == 404
    for method in ("put", "patch", "delete"):
        assert getattr(api.admin, method)("/api/workflows/release_review/versions/1").status_code == 405


def test_saving_through_the_api_adds_a_version_by_its_author(api, demo):
    document = api.viewer.get("/api/workflows/parallel_analysis").json()
    document["name"] = "Parallel analysis, renamed"
    assert api.author.put("/api/workflows/parallel_analysis", document).status_code == 200
    (latest, *_) = api.viewer.get("/api/workflows/parallel_analysis/versions").json()["items"]
    assert (latest["number"], latest["created_by"]) == (2, "author-user")


def test_deleting_a_never_run_workflow_takes_its_versions(api, demo):
    assert api.author.delete("/api/workflows/parallel_analysis").status_code == 204
    assert not Workflow.objects.filter(workflow_id="parallel_analysis").exists()
    from workflows.models import WorkflowVersion
    assert not WorkflowVersion.objects.filter(document__workflow_id="parallel_analysis").exists()


# -- the command -----------------------------------------------------------------------


def test_the_command_lists_compares_and_restores(demo):
    edit_three_times()
    out = io.StringIO()
    call_command("workflow_versions", "release_review", stdout=out)
    lines = out.getvalue().splitlines()
    assert [line.split("\t")[0] for line in lines] == ["4", "3", "2", "1"]
    assert lines[-1].split("\t")[2:] == ["demo", "0 run(s)"]

    out = io.StringIO()
    call_command("workflow_versions", "release_review", "--diff", "1", "2", stdout=out)
    diff = json.loads(out.getvalue())
    assert [s["name"] for s in diff["settings"]] == ["name", "error_handling", "limits", "domain", "evaluation"]

    out = io.StringIO()
    call_command("workflow_versions", "release_review", "--restore", "1", "--actor", "grace", stdout=out)
    assert out.getvalue().strip() == "version 5: restored from version 1"
    with pytest.raises(CommandError, match="has no version 8") as caught:
        call_command("workflow_versions", "release_review", "--restore", "8")
    assert caught.value.returncode == 2
