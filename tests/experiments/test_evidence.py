"""Evidence where decisions are made: a derive request's parent-vs-child experiments, the
decision that records them (service, API, command, page), and workflow versions' releases
held to the workflow's release requirement (service, API, command, page)."""
from __future__ import annotations

import io
import threading
from unittest import mock

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, connections

from agents.models import Agent, DeriveRequest
from core.errors import DocumentError, IllegalTransition
from core.roles import Forbidden
from experiments.evidence import parent_vs_child_start, read_evidence
from experiments.experiment_services import experiment_create, experiment_start
from experiments.models import EvidencePair, Experiment
from experiments.releases import ReleaseRefused, release_requirement_set, workflow_version_release
from quality.derive_requests.services import derive_request_approve, derive_request_create
from tests.executions.conftest import in_process  # noqa: F401 - fixture
from tests.experiments.core_support import load, run_in_process
from workflows.models import Workflow, WorkflowVersion

pytestmark = pytest.mark.django_db(transaction=True)

SCORERS = [{"type": "contains", "path": "$.nodes.say.response"}, {"type": "regex", "pattern": "capital"}]


@pytest.fixture
def setup(in_process, api):  # noqa: F811 - the fixture imported above
    """The echo workflow, the capitals dataset, a pending request to derive a child of Echo;
    the child-creating task and the scoring task are recorded, not sent."""
    with mock.patch("experiments.tasks.run_ended.apply_async"), \
            mock.patch("quality.derive_requests.services.send_after_commit") as sent:
        load()
        request = derive_request_create(parent_agent_id="Echo", trigger="quality_issue", new_name="Echo Geo",
                                        domain_focus="geography", additional_constraints=["Name the city."],
                                        user=api.author.user, trigger_context={"execution_ids": ["nowhere"]})
        api.request, api.sent = request, sent
        yield api


def ran(pair: EvidencePair) -> EvidencePair:
    run_in_process(pair.parent_experiment)
    run_in_process(pair.child_experiment)
    pair.parent_experiment.refresh_from_db()
    pair.child_experiment.refresh_from_db()
    return pair


def test_the_pair_runs_the_child_in_the_parents_place_and_a_decision_records_it(setup):
    agents_before = Agent.objects.count()
    pair = parent_vs_child_start(request=setup.request, dataset="capitals", scorers=SCORERS, user=setup.admin.user)
    parent, child = pair.parent_experiment, pair.child_experiment
    assert (parent.status, child.status) == ("running", "running")
    assert parent.agent_overrides == {} and parent.workflow_version == child.workflow_version
    assert parent.dataset_version == child.dataset_version and parent.workflow.workflow_id == "echo"
    override = child.agent_overrides["say"]
    assert override["name"] == "Echo Geo" and "Name the city." in override["constraints"]
    assert "Domain focus: geography." in override["prompt_config"]["system_prompt"]
    assert Agent.objects.count() == agents_before  # the child is never saved as an agent

    with pytest.raises(DocumentError, match=f"experiment '{child.experiment_id}' \\(the child of the pair\\) has not "
                                            "ended: it is running"):
        derive_request_approve(request=setup.request, user=setup.approver.user, evidence=child.experiment_id)
    assert DeriveRequest.objects.get(pk=setup.request.pk).status == "pending"

    ran(pair)
    assert (pair.parent_experiment.status, pair.child_experiment.status) == ("success", "success")
    evidence = read_evidence(setup.request, child.experiment_id)
    assert evidence["dataset"] == "capitals@1" and evidence["workflow"].startswith("echo@")
    assert set(evidence["scorers"]) == {"contains", "regex"}
    contains = evidence["scorers"]["contains"]
    assert contains["count"] == 3 and contains["verdict"] == "no clear change"  # q4 has no expected value
    assert contains["parent_mean"] == pytest.approx(2 / 3) and contains["delta"] == pytest.approx(0)

    decided = derive_request_approve(request=setup.request, user=setup.approver.user, comment="better on capitals",
                                     evidence=child.experiment_id)
    decided.refresh_from_db()
    assert decided.status == "approved" and decided.evidence["child_experiment"] == child.experiment_id
    assert decided.evidence["parent_experiment"] == parent.experiment_id
    assert decided.evidence["scorers"]["regex"]["verdict"] == "no clear change"
    with pytest.raises(IllegalTransition, match="was approved already"):
        parent_vs_child_start(request=decided, dataset="capitals", scorers=SCORERS, user=setup.admin.user)


def test_refusals_name_what_is_wrong_and_store_nothing(setup):
    request = setup.request
    with pytest.raises(Forbidden, match="admin role may start parent-vs-child"):
        parent_vs_child_start(request=request, dataset="capitals", scorers=SCORERS, user=setup.author.user)
    with pytest.raises(DocumentError, match="workflow 'nope' does not exist"):
        parent_vs_child_start(request=request, dataset="capitals", workflow_id="nope", scorers=SCORERS,
                              user=setup.admin.user)
    with pytest.raises(DocumentError, match="has no node that runs agent 'Echo'"):
        parent_vs_child_start(request=request, dataset="capitals", workflow_id="release_review", scorers=SCORERS,
                              user=setup.admin.user)
    with pytest.raises(DocumentError, match="dataset 'missing'"):
        parent_vs_child_start(request=request, dataset="missing", scorers=SCORERS, user=setup.admin.user)
    with pytest.raises(DocumentError, match="scorers: is a list of at least one scorer"):
        parent_vs_child_start(request=request, dataset="capitals", scorers=[], user=setup.admin.user)
    with pytest.raises(DocumentError, match="scorers"):  # the second experiment's check would come too late
        parent_vs_child_start(request=request, dataset="capitals", scorers=[{"type": "nope"}], user=setup.admin.user)
    assert not Experiment.objects.exists() and not EvidencePair.objects.exists()

    orphan = derive_request_create(parent_agent_id="Scholar", trigger="quality_issue", new_name="Lonely",
                                   user=setup.author.user)
    Workflow.objects.filter(nodes__agent__agent_id="Scholar").delete()
    with pytest.raises(DocumentError, match="no workflow runs agent 'Scholar', the request's parent"):
        parent_vs_child_start(request=orphan, dataset="capitals", scorers=SCORERS, user=setup.admin.user)

    other = experiment_create(workflow_id="echo", dataset="capitals", scorers=SCORERS)
    with pytest.raises(DocumentError, match=f"experiment '{other.experiment_id}' is not a child experiment of "
                                            f"derive request '{request.derive_request_id}'"):
        derive_request_approve(request=request, user=setup.approver.user, evidence=other.experiment_id)
    with pytest.raises(DocumentError, match="experiment 'exp_nowhere' does not exist"):
        derive_request_approve(request=request, user=setup.approver.user, evidence="exp_nowhere")
    pair = parent_vs_child_start(request=request, dataset="capitals", scorers=SCORERS, user=setup.admin.user)
    with pytest.raises(DocumentError, match="is the parent's of its pair: name the child's, "
                                            f"'{pair.child_experiment.experiment_id}'"):
        derive_request_approve(request=request, user=setup.approver.user, evidence=pair.parent_experiment.experiment_id)
    request.refresh_from_db()
    assert request.status == "pending" and request.evidence is None and not setup.sent.called


def test_the_api_starts_reads_and_decides_on_the_pair(setup):
    rid = setup.request.derive_request_id
    body = {"dataset": "capitals", "scorers": SCORERS}
    assert setup.author.post(f"/api/derive-requests/{rid}/parent-vs-child", body).status_code == 403
    response = setup.admin.post(f"/api/derive-requests/{rid}/parent-vs-child", {**body, "workflow_id": "nope"})
    assert response.status_code == 422 and "workflow 'nope' does not exist" in response.json()["message"]
    response = setup.admin.post(f"/api/derive-requests/{rid}/parent-vs-child", body)
    assert response.status_code == 201, response.json()
    started = response.json()
    assert started["comparison"] is None and started["dataset"] == "capitals@1"
    child_id = started["child_experiment"]["experiment_id"]
    refused = setup.approver.post(f"/api/derive-requests/{rid}/approve", {"evidence": child_id})
    assert refused.status_code == 422 and f"experiment '{child_id}' (the child of the pair) has not ended" in \
        refused.json()["message"]

    ran(EvidencePair.objects.get())
    listed = setup.viewer.get(f"/api/derive-requests/{rid}/parent-vs-child").json()
    assert [row["scorer"] for row in listed[0]["comparison"]] == ["contains", "regex"]
    assert listed[0]["child_experiment"]["done"] and listed[0]["child_experiment"]["percent"] == 100
    response = setup.approver.post(f"/api/derive-requests/{rid}/reject", {"comment": "no gain", "evidence": child_id})
    assert response.status_code == 200, response.json()
    assert response.json()["evidence"]["child_experiment"] == child_id
    assert response.json()["status"] == "rejected"
    assert setup.viewer.get(f"/api/derive-requests/{rid}").json()["evidence"]["scorers"]["contains"]["count"] == 3


def test_the_command_approves_on_the_evidence_and_refuses_another_requests(setup):
    rid = setup.request.derive_request_id
    pair = ran(parent_vs_child_start(request=setup.request, dataset="capitals", scorers=SCORERS,
                                     user=setup.admin.user))
    other = experiment_create(workflow_id="echo", dataset="capitals", scorers=SCORERS)
    with pytest.raises(CommandError, match=f"experiment '{other.experiment_id}' is not a child experiment") as refused:
        call_command("approve_derive_request", rid, "--user", "approver-user", "--evidence", other.experiment_id,
                     stdout=io.StringIO())
    assert refused.value.returncode == 1 and DeriveRequest.objects.get(pk=setup.request.pk).status == "pending"
    out = io.StringIO()
    call_command("approve_derive_request", rid, "--user", "approver-user", "--evidence",
                 pair.child_experiment.experiment_id, "--wait", "0", stdout=out, stderr=io.StringIO())
    assert f'"child_experiment": "{pair.child_experiment.experiment_id}"' in out.getvalue()
    request = DeriveRequest.objects.get(pk=setup.request.pk)
    assert request.status == "approved" and request.result_agent is not None  # made here: no worker in a test


def test_the_pages_start_follow_and_decide(setup, client):
    rid = setup.request.derive_request_id
    page = f"/experiments/evidence/derive-requests/{rid}/"
    client.force_login(setup.viewer.user)
    response = client.get(page)
    assert response.status_code == 200 and b"evidence-start-form" not in response.content
    assert client.post(page + "start/", {"dataset": "capitals", "scorers": "[]"}).status_code == 403
    client.force_login(setup.admin.user)
    response = client.get(page)
    assert b"evidence-start-form" in response.content and b'<option value="echo" selected>' in response.content
    response = client.post(page + "start/", {"dataset": "capitals", "scorers": "[{"})
    assert response.status_code == 400 and b"scorers: is JSON" in response.content
    assert not Experiment.objects.exists()
    response = client.post(page + "start/", {"dataset": "capitals", "workflow_id": "echo",
                                             "scorers": '[{"type": "contains", "path": "$.nodes.say.response"}]'})
    assert response.status_code == 302 and response["Location"] == page
    response = client.get(page)
    assert b"data-refresh=" in response.content and b"Running" in response.content
    assert b"evidence-decide-form" not in response.content
    pair = ran(EvidencePair.objects.get())
    response = client.get(page)
    content = response.content.decode()
    assert 'data-scorer="contains"' in content and "no clear change" in content and "data-refresh=" not in content
    child_id = pair.child_experiment.experiment_id
    assert f"/experiments/compare/?ids={pair.parent_experiment.experiment_id},{child_id}" in content
    assert "evidence-decide-form" in content  # the admin is an approver too
    response = client.post(page + "decide/", {"decision": "approve", "comment": "<b>ok</b>", "evidence": child_id})
    assert response.status_code == 302 and response["Location"] == f"/derive-requests/{rid}/"
    detail = client.get(f"/derive-requests/{rid}/").content.decode()
    assert 'id="decision-evidence"' in detail and child_id in detail and "&lt;b&gt;ok&lt;/b&gt;" in detail
    assert f'href="{page}"' in detail


# -- releases ------------------------------------------------------------------------------------


def ended_experiment(version: int | None = None, scorers=SCORERS) -> Experiment:
    experiment = experiment_start(experiment=experiment_create(workflow_id="echo", dataset="capitals",
                                                               workflow_version=version, scorers=scorers))
    return run_in_process(experiment)


def test_a_release_is_held_to_the_workflows_requirement(setup):
    author = setup.author.user
    number = Workflow.objects.get(workflow_id="echo").versions.order_by("-number").first().number
    with pytest.raises(DocumentError, match="dataset 'nope' does not exist"):
        release_requirement_set(workflow_id="echo", requirement={"dataset": "nope", "thresholds": {"x": 1}}, user=author)
    with pytest.raises(Forbidden):
        release_requirement_set(workflow_id="echo", requirement=None, user=setup.viewer.user)
    release_requirement_set(workflow_id="echo", user=author,
                            requirement={"dataset": "capitals", "thresholds": {"contains": 0.9, "regex": 0.5}})
    with pytest.raises(ReleaseRefused, match=f"no completed experiment of version {number} on dataset capitals"):
        workflow_version_release(workflow_id="echo", number=number, user=author)
    experiment = ended_experiment()
    with pytest.raises(ReleaseRefused, match=f"experiment {experiment.experiment_id}: contains: mean 0.667 < 0.9"):
        workflow_version_release(workflow_id="echo", number=number, user=author)
    assert WorkflowVersion.objects.get(workflow__workflow_id="echo", number=number).released_at is None
    with pytest.raises(Forbidden):
        workflow_version_release(workflow_id="echo", number=number, user=setup.viewer.user)

    release_requirement_set(workflow_id="echo", user=author,
                            requirement={"dataset": "capitals", "thresholds": {"contains": 0.6, "regex": 0.7}})
    released = workflow_version_release(workflow_id="echo", number=number, user=author)
    assert released.released_by == "author-user" and released.released_at is not None
    with pytest.raises(IllegalTransition, match="was released by author-user"):
        workflow_version_release(workflow_id="echo", number=number, user=author)


def test_releases_through_the_api_the_command_and_the_versions_list(setup, client):
    number = Workflow.objects.get(workflow_id="echo").versions.order_by("-number").first().number
    requirement = {"release_requirement": {"dataset": "capitals", "thresholds": {"contains": 0.9}}}
    assert setup.viewer.put("/api/workflows/echo/release-requirement", requirement).status_code == 403
    response = setup.author.put("/api/workflows/echo/release-requirement", requirement)
    assert response.status_code == 200 and response.json()["release_requirement"]["thresholds"] == {"contains": 0.9}
    experiment = ended_experiment()
    response = setup.author.post(f"/api/workflows/echo/versions/{number}/release")
    assert response.status_code == 409 and "contains: mean 0.667 < 0.9" in response.json()["message"]
    with pytest.raises(CommandError, match="contains: mean 0.667 < 0.9") as refused:
        call_command("release_workflow", "echo", str(number), "--user", "author-user", stdout=io.StringIO())
    assert refused.value.returncode == 1

    client.force_login(setup.author.user)
    page = client.get("/workflows/echo/").content.decode()
    assert experiment.experiment_id in page and 'data-scorer="contains"' in page and "0.667" in page
    assert "version-release-button" in page
    response = client.post(f"/experiments/evidence/releases/echo/{number}/")
    assert response.status_code == 409 and "contains: mean 0.667 &lt; 0.9" in response.content.decode()

    setup.author.put("/api/workflows/echo/release-requirement", {"release_requirement": None})
    out = io.StringIO()
    call_command("release_workflow", "echo", str(number), "--user", "author-user", stdout=out)
    assert f"echo v{number} released by author-user" in out.getvalue()
    listed = setup.viewer.get("/api/workflows/echo/versions").json()
    listed = listed["items"] if isinstance(listed, dict) else listed
    assert listed[0]["released_by"] == "author-user" and listed[0]["released_at"]
    page = client.get("/workflows/echo/").content.decode()
    assert "released</span> by author-user" in page
    response = setup.author.post(f"/api/workflows/echo/versions/{number}/release")
    assert response.status_code == 409 and "released by author-user" in response.json()["message"]
    assert setup.author.post("/api/workflows/echo/versions/999/release").status_code == 404


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the row lock two releases race for is PostgreSQL's")
def test_two_releases_at_once_release_the_version_once(setup):
    """Two authors release the same version at the same moment: the version's row lock lets
    one through; the other is refused naming who released it."""
    number = Workflow.objects.get(workflow_id="echo").versions.order_by("-number").first().number
    barrier, results = threading.Barrier(2), []

    def release():
        try:
            barrier.wait()
            workflow_version_release(workflow_id="echo", number=number, user=setup.author.user)
            results.append("released")
        except IllegalTransition as refused:
            results.append(str(refused))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=release) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(results)[0] == "released"
    assert sorted(results)[1].startswith(f"version {number} of workflow 'echo' was released by author-user")
