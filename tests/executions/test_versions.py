"""A run runs the workflow version it started on: the latest by default, or one chosen by
number (service, API, command), whatever the workflow has become since."""
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core.errors import DocumentError
from executions.models import Execution
from executions.services import execution_start
from tests.executions.conftest import approve_gate, wait_for
from tests.workflow_edits import edit_workflow
from workflows.models import Workflow


def loop_forever(document):
    """Version 2 of release_review: review always sends the draft back, and five steps end it."""
    document["limits"]["max_steps"] = 5
    document["transitions"][1]["condition"] = "true"


def stop_looping(document):
    """Version 3: back to looping while the reviewer asks, and a draft node that reads less."""
    document["limits"]["max_steps"] = 12
    document["transitions"][1]["condition"] = "output.verdict == 'revise' and state.rounds < 3"
    document["nodes"][0]["input_mapping"] = {"topic": "$.input.topic"}


def at_version_4():
    edit_workflow("release_review", loop_forever)
    edit_workflow("release_review", stop_looping)
    workflow = edit_workflow("release_review", lambda document: document.update(name="Release review, v4"))
    assert workflow.versions.count() == 4
    return workflow


@pytest.mark.integration
def test_a_run_pinned_to_version_2_runs_version_2_while_the_workflow_is_at_version_4(demo):
    workflow = at_version_4()
    demo.start(1)
    pinned = wait_for(execution_start(workflow=workflow, input={"topic": "v2"}, version=2), workers=demo)
    assert pinned.workflow_version.number == 2
    assert pinned.status == "failed"
    assert pinned.ended_reason == "max_steps: the run reached its bound of 5 steps"  # version 2's limit and loop
    assert [run.node_id for run in pinned.node_runs.filter(kind="first").order_by("sequence")] == [
        "draft", "review", "draft", "review", "draft"]
    second_draft = pinned.node_runs.filter(node_id="draft").order_by("sequence")[1]
    assert {"topic", "feedback"} <= {entry["name"] for entry in second_draft.resolved_inputs}, \
        "version 2's draft reads the review's feedback"

    latest = wait_for(execution_start(workflow=workflow, input={"topic": "v4"}), workers=demo)
    latest = wait_for(approve_gate(latest), statuses=("escalated", "failed", "success"), workers=demo)
    assert latest.workflow_version.number == 4
    assert latest.ended_reason != pinned.ended_reason and latest.node_runs.filter(node_id="publish").exists()
    for draft in latest.node_runs.filter(node_id="draft"):
        assert "feedback" not in {entry["name"] for entry in draft.resolved_inputs}, "version 3 took it away"


@pytest.mark.django_db
def test_a_run_records_its_version_and_an_unknown_number_is_refused_naming_the_versions(in_process):
    workflow = at_version_4()
    assert execution_start(workflow=workflow, input={"topic": "t"}).workflow_version.number == 4
    with pytest.raises(DocumentError, match=r"has no version 7 \(its versions: 1 to 4\)") as refused:
        execution_start(workflow=workflow, input={"topic": "t"}, version=7)
    assert refused.value.where == "workflow_version"


@pytest.mark.django_db
def test_the_api_starts_a_chosen_version_and_the_record_names_it(api, in_process):
    at_version_4()
    started = api.author.post("/api/executions", {"workflow_id": "release_review", "input": {"topic": "t"},
                                                  "workflow_version": 2})
    assert started.status_code == 201 and started.json()["workflow_version"] == 2
    detail = api.viewer.get(f"/api/executions/{started.json()['execution_id']}").json()
    assert detail["workflow_version"] == 2
    refused = api.author.post("/api/executions", {"workflow_id": "release_review", "workflow_version": 9})
    assert refused.status_code == 422 and "its versions: 1 to 4" in refused.json()["message"]
    listed = api.viewer.get("/api/workflows/release_review/versions").json()["items"]
    assert [(v["number"], v["runs"]) for v in listed] == [(4, 0), (3, 0), (2, 1), (1, 0)]


@pytest.mark.django_db
def test_the_command_starts_a_chosen_version(in_process):
    at_version_4()
    out = io.StringIO()
    call_command("run_workflow", "release_review", "--version", "3", "--input", '{"topic": "t"}', stdout=out)
    assert Execution.objects.get(execution_id=out.getvalue().strip()).workflow_version.number == 3
    with pytest.raises(CommandError, match="--version: .*has no version 5") as caught:
        call_command("run_workflow", "release_review", "--version", "5")
    assert caught.value.returncode == 2


@pytest.mark.django_db
def test_a_workflow_with_runs_is_not_deleted_and_keeps_its_versions(api, in_process):
    workflow = at_version_4()
    execution_start(workflow=workflow, input={"topic": "t"}, version=1)
    refused = api.author.delete("/api/workflows/release_review")
    assert refused.status_code == 409 and refused.json()["details"]["executions"] == 1
    assert Workflow.objects.get(pk=workflow.pk).versions.count() == 4
