"""Derive requests: the rules that raise them, approval, and the child agent it creates."""
import io
import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction
from django.utils import timezone
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from agents.models import Agent, DeriveRequest
from agents.services import agent_import_document
from core.errors import IllegalTransition
from core.roles import Forbidden
from executions.models import Evaluation, Execution, NodeRun
from quality.derive_requests.child_agent import derive_request_create_child, derive_requests_awaiting_child
from quality.derive_requests.services import derive_request_approve, derive_request_create, derive_request_reject
from quality.derive_requests.triggers import derive_requests_raise
from workflows.models import Workflow

pytestmark = pytest.mark.django_db


def make_agent(agent_id, *, parent=None, skills=("read",), tools=(), domains=()):
    document = {"agent_id": agent_id, "name": agent_id.title(),
                "prompt_config": {"system_prompt": f"You are {agent_id}.", "output_constraint": "Reply in JSON."},
                "capabilities": {"skills": list(skills), "tools": list(tools), "knowledge_domains": list(domains)},
                "constraints": ["be brief"]}
    if parent:
        document["lineage"] = {"parent_id": parent}
    return agent_import_document(document, actor="tests")[0]


@pytest.fixture
def scholar():
    return make_agent("scholar", domains=["deep_learning"])


@pytest.fixture
def approver():
    user = User.objects.create_user("ada")
    user.groups.add(Group.objects.get_or_create(name="approver")[0])
    return user


@pytest.fixture
def author():
    user = User.objects.create_user("bob")
    user.groups.add(Group.objects.get_or_create(name="author")[0])
    return user


def evaluate(agent, *scores):
    """Evaluations of the agent, each newer than the last."""
    for score in scores:
        count = Evaluation.objects.count()
        Evaluation.objects.create(
            evaluation_id=f"e_{agent.agent_id}_{count}", target_type="agent",
            target_id=agent.agent_id, accuracy=score, completeness=score, efficiency=1.0, overall_score=score,
            passed=score >= 0.7, action="approve", method="computed",
            created_at=timezone.now() - timedelta(hours=1) + timedelta(seconds=count))


def node_runs(agent, count, *, status="success", domain="", error_code="", details=None, days_ago=0):
    workflow, _ = Workflow.objects.get_or_create(workflow_id="w", defaults={"name": "w", "topology": "seq"})
    execution = Execution.objects.create(execution_id=f"x{Execution.objects.count()}", workflow=workflow,
                                         status="failed" if status == "failed" else "success", domain=domain)
    when = timezone.now() - timedelta(days=days_ago)
    NodeRun.objects.bulk_create(NodeRun(execution=execution, node_id=f"n{i}", agent=agent, status=status,
                                        error_code=error_code, error="needs more" if error_code else "",
                                        error_details=details, completed_at=when - timedelta(seconds=i))
                            for i in range(count))
    return execution


def raised(agent):
    return [(r.trigger, r.created_by) for r in derive_requests_raise(agent=agent)]


# -- the rules -------------------------------------------------------------------------------


def test_it_raises_a_quality_issue_when_recent_evaluations_fall_below_the_threshold(scholar, settings):
    settings.DERIVE_QUALITY_THRESHOLD, settings.DERIVE_QUALITY_WINDOW, settings.DERIVE_QUALITY_MIN_EVALUATIONS = 0.6, 3, 3
    evaluate(scholar, 0.9, 0.9)  # older, outside the window of 3
    evaluate(scholar, 0.5, 0.6)
    assert raised(scholar) == []  # the window of 3 holds 0.6, 0.5, 0.9: mean 0.667
    evaluate(scholar, 0.55)
    [request] = derive_requests_raise(agent=scholar)  # 0.5, 0.6, 0.55: mean 0.55
    assert (request.trigger, request.status, request.created_by) == ("quality_issue", "pending", "rule:quality_issue")
    context = request.trigger_context
    assert (context["mean_overall_score"], context["threshold"], context["weakest_score"]) == (0.55, 0.6, "accuracy")
    assert [row["overall_score"] for row in context["evaluations"]] == [0.55, 0.6, 0.5]
    assert request.additional_constraints == [
        "Check every output against the contract (schema) it feeds before answering."]
    assert request.domain_focus == "deep_learning"
    assert [(e.kind, e.actor) for e in request.events.all()] == [("raised", "rule:quality_issue")]


def test_it_does_not_raise_a_quality_issue_at_the_threshold_or_with_too_few_evaluations(scholar, settings):
    settings.DERIVE_QUALITY_THRESHOLD, settings.DERIVE_QUALITY_WINDOW, settings.DERIVE_QUALITY_MIN_EVALUATIONS = 0.6, 5, 3
    evaluate(scholar, 0.1, 0.2)
    assert raised(scholar) == []  # two of the three needed
    other = make_agent("other")
    evaluate(other, 0.6, 0.6, 0.6)
    assert raised(other) == []  # at the threshold is not below it


def test_it_raises_a_capability_gap_naming_what_is_missing(scholar, settings):
    settings.DERIVE_CAPABILITY_GAP_FAILURES = 2
    node_runs(scholar, 1, status="failed", error_code="CAPABILITY_GAP", details={"missing_tools": ["legal_database"]},
              domain="law")
    assert raised(scholar) == []  # one failure of the two needed
    node_runs(scholar, 1, status="failed", error_code="CAPABILITY_GAP",
              details={"missing_skills": ["read", "cite"], "missing_tools": ["legal_database"]})
    node_runs(scholar, 3, status="failed", error_code="TIMEOUT")  # other failures are no gap
    [request] = derive_requests_raise(agent=scholar)
    assert request.trigger == "capability_gap"
    context = request.trigger_context
    assert (context["missing_skills"], context["missing_tools"]) == (["cite"], ["legal_database"])  # it has "read"
    assert len(context["failures"]) == 2 and context["failures"][0]["error"] == "needs more"
    assert (request.new_name, request.additional_skills) == ("Scholar with cite, legal_database", ["cite"])
    assert request.domain_focus == "law"


def test_it_raises_a_frequency_threshold_for_the_domain_an_agent_works_in_most(scholar, settings):
    settings.DERIVE_FREQUENCY_THRESHOLD, settings.DERIVE_FREQUENCY_WINDOW_DAYS = 4, 30
    node_runs(scholar, 3, domain="oncology")
    node_runs(scholar, 5, domain="oncology", days_ago=40)  # outside the window
    node_runs(scholar, 9)  # no domain
    node_runs(scholar, 2, domain="radiology")
    node_runs(scholar, 2, domain="oncology", status="failed")  # not a use that succeeded
    assert raised(scholar) == []
    node_runs(scholar, 1, domain="oncology")
    [request] = derive_requests_raise(agent=scholar)
    assert request.trigger == "frequency_threshold"
    assert (request.trigger_context["domain"], request.trigger_context["uses"]) == ("oncology", 4)
    assert request.trigger_context["uses_by_domain"] == {"oncology": 4, "radiology": 2}
    assert request.trigger_context["execution_ids"] == ["x5", "x0"]  # each run once, the latest first
    assert (request.new_name, request.domain_focus) == ("Scholar (oncology)", "oncology")


def test_it_does_not_count_a_domain_the_agent_already_knows(scholar, settings):
    settings.DERIVE_FREQUENCY_THRESHOLD = 2
    node_runs(scholar, 5, domain="deep_learning")  # its own knowledge domain
    assert raised(scholar) == []


def test_it_never_raises_a_second_pending_request_for_the_same_agent_and_trigger(scholar, settings, approver):
    settings.DERIVE_CAPABILITY_GAP_FAILURES = 1
    node_runs(scholar, 1, status="failed", error_code="CAPABILITY_GAP", details={"missing_skills": ["cite"]})
    assert raised(scholar) == [("capability_gap", "rule:capability_gap")]
    assert raised(scholar) == []
    request = DeriveRequest.objects.get()
    derive_request_reject(request=request, user=approver, comment="not now")
    assert raised(scholar) == []  # the evidence a person weighed does not raise it again
    node_runs(scholar, 1, status="failed", error_code="CAPABILITY_GAP", details={"missing_skills": ["cite"]})
    NodeRun.objects.filter(completed_at__isnull=False).order_by("-id").update(
        completed_at=timezone.now() + timedelta(seconds=1))
    assert raised(scholar) == [("capability_gap", "rule:capability_gap")]  # new evidence since the decision
    assert DeriveRequest.objects.filter(status="pending").count() == 1


def test_it_raises_requests_for_the_agents_of_an_evaluated_run(scholar, settings):
    from quality.derive_requests.tasks import raise_derive_requests

    settings.DERIVE_CAPABILITY_GAP_FAILURES = 1
    execution = node_runs(scholar, 1, status="failed", error_code="CAPABILITY_GAP", details={"missing_tools": ["x"]})
    bystander = make_agent("bystander")
    node_runs(bystander, 1, status="failed", error_code="CAPABILITY_GAP")  # another run
    assert raise_derive_requests(execution.pk) == [DeriveRequest.objects.get(parent_agent=scholar).derive_request_id]
    assert not DeriveRequest.objects.filter(parent_agent=bystander).exists()


# -- approval --------------------------------------------------------------------------------


def by_hand(parent, author, **extra):
    return derive_request_create(parent_agent_id=parent.agent_id, trigger=extra.pop("trigger", "capability_gap"),
                                 new_name=extra.pop("new_name", "Scholar (3D)"), user=author,
                                 domain_focus="point clouds", additional_skills=["read_meshes"],
                                 additional_constraints=["cite datasets"],
                                 trigger_context=extra.pop("trigger_context", {"missing_tools": ["builtin.read_file"]}),
                                 **extra)


def test_it_lets_only_approvers_decide(scholar, author):
    request = by_hand(scholar, author)
    for decide in (derive_request_approve, derive_request_reject):
        with pytest.raises(Forbidden, match="only a user with the approver role may"):
            decide(request=request, user=author)
    request.refresh_from_db()
    assert (request.status, request.decided_by, request.events.count()) == ("pending", None, 1)


def test_it_creates_the_child_once_after_approval(scholar, author, approver, django_capture_on_commit_callbacks):
    request = by_hand(scholar, author)
    with django_capture_on_commit_callbacks() as callbacks:
        derive_request_approve(request=request, user=approver, comment="yes")
    assert len(callbacks) == 1  # the task that creates the child is sent once the approval commits
    child = derive_request_create_child(request_pk=request.pk)
    assert derive_request_create_child(request_pk=request.pk) == child  # delivered twice: still one child
    assert Agent.objects.filter(parent=scholar).count() == 1
    request.refresh_from_db()
    assert request.result_agent == child and request.status == "approved"

    assert (child.agent_id, child.name, child.parent, child.root, child.level) == (
        "Scholar_3D", "Scholar (3D)", scholar, scholar, 1)
    assert child.capabilities == {"skills": ["read", "read_meshes"], "tools": ["builtin.read_file"],
                                  "knowledge_domains": ["deep_learning", "point clouds"]}
    assert child.constraints == ["be brief", "cite datasets"]
    assert child.prompt_config["system_prompt"].startswith("You are scholar.\n\nSpecialised from scholar by derive "
                                                           f"request {request.derive_request_id}.")
    assert "Domain focus: point clouds." in child.prompt_config["system_prompt"]
    assert child.prompt_config["output_constraint"] == "Reply in JSON.\ncite datasets"
    assert child.created_by == "ada" and child.versions.count() == 1
    assert scholar.children_ids == ["Scholar_3D"]
    assert [(e.kind, e.status, e.actor) for e in request.events.all()] == [
        ("raised", "pending", "bob"), ("approved", "approved", "ada"), ("child_created", "approved", "ada")]


def test_the_child_gets_only_the_missing_tools_the_catalogue_holds(scholar, author):
    from quality.derive_requests.child_agent import child_document

    request = by_hand(scholar, author, trigger_context={"missing_tools": ["mesh_viewer", "builtin.read_file", 7]})
    document = child_document(request)
    assert document["capabilities"]["tools"] == ["builtin.read_file"]
    assert "Added capabilities: read_meshes, builtin.read_file." in document["prompt_config"]["system_prompt"]
    assert "mesh_viewer" not in document["prompt_config"]["system_prompt"]


def test_it_refuses_to_approve_a_request_for_tools_the_catalogue_does_not_hold(
        scholar, author, approver, django_capture_on_commit_callbacks):
    from core.errors import SwitchyardError

    request = by_hand(scholar, author, trigger_context={"missing_tools": ["builtin.read_file", "mesh_viewer", "x.y"]})
    with django_capture_on_commit_callbacks() as callbacks, pytest.raises(SwitchyardError) as refused:
        derive_request_approve(request=request, user=approver, comment="yes")
    assert refused.value.code == "TOOLS_NOT_IN_CATALOGUE"
    assert refused.value.details == {"derive_request_id": request.derive_request_id, "tools": ["mesh_viewer", "x.y"]}
    assert "cannot be approved as it is" in str(refused.value)
    assert "mesh_viewer, x.y, not available in the tool catalogue" in str(refused.value)
    assert callbacks == []  # no child is asked for
    request.refresh_from_db()
    assert (request.status, request.decided_by, request.comment, request.events.count()) == ("pending", None, "", 1)
    rejected = derive_request_reject(request=request, user=approver, comment="no such tool")  # still possible
    assert rejected.status == "rejected" and not Agent.objects.filter(parent=scholar).exists()


def test_the_api_and_the_command_refuse_that_approval_naming_the_tools(scholar, api):
    request = by_hand(scholar, api.author.user, trigger_context={"missing_tools": ["mesh_viewer"]})
    response = api.approver.post(f"/api/derive-requests/{request.derive_request_id}/approve", {"comment": "go"})
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "TOOLS_NOT_IN_CATALOGUE" and body["details"]["tools"] == ["mesh_viewer"]
    assert "mesh_viewer, not available in the tool catalogue" in body["message"]
    with pytest.raises(CommandError, match="mesh_viewer, not available in the tool catalogue") as refused:
        call_command("approve_derive_request", request.derive_request_id, "--user", "approver-user",
                     stdout=io.StringIO())
    assert refused.value.returncode == 1
    request.refresh_from_db()
    assert request.status == "pending"


def test_it_sends_again_an_approval_whose_message_was_lost(scholar, author, approver, settings,
                                                          django_capture_on_commit_callbacks):
    from quality.derive_requests.tasks import sweep

    request = by_hand(scholar, author)
    with django_capture_on_commit_callbacks():  # never run: the message was lost with a Redis restart
        derive_request_approve(request=request, user=approver)
    assert derive_requests_awaiting_child() == []  # not yet: its worker may be at it

    DeriveRequest.objects.filter(pk=request.pk).update(
        decided_at=timezone.now() - timedelta(seconds=settings.NODE_STALE_SECONDS + 1))
    with django_capture_on_commit_callbacks() as callbacks:
        assert sweep() == [request.pk]
    assert len(callbacks) == 1  # agents.derive_child, sent again
    assert derive_requests_awaiting_child() == []  # once per NODE_STALE_SECONDS, not at every sweep

    child = derive_request_create_child(request_pk=request.pk)
    assert derive_requests_awaiting_child(now=timezone.now() + timedelta(seconds=settings.NODE_STALE_SECONDS + 1)) == []
    assert child is not None and Agent.objects.filter(parent=scholar).count() == 1


def test_it_does_not_send_again_a_child_that_failed_or_a_rejected_request(scholar, author, approver, settings):
    failed, rejected = by_hand(scholar, author), by_hand(scholar, author, trigger="quality_issue")
    derive_request_approve(request=failed, user=approver)
    derive_request_reject(request=rejected, user=approver)
    DeriveRequest.objects.filter(pk=failed.pk).update(result_error="agent_id: taken")
    DeriveRequest.objects.update(decided_at=timezone.now() - timedelta(minutes=5))

    assert derive_requests_awaiting_child() == []


def test_it_refuses_to_decide_twice_and_creates_nothing_for_a_rejected_request(scholar, author, approver):
    approved = by_hand(scholar, author)
    derive_request_approve(request=approved, user=approver)
    with pytest.raises(IllegalTransition, match="was approved by ada already"):
        derive_request_approve(request=approved, user=approver)
    rejected = by_hand(scholar, author, trigger="quality_issue", new_name="Scholar (careful)")
    derive_request_reject(request=rejected, user=approver, comment="no")
    with pytest.raises(IllegalTransition, match="was rejected by ada already; only a pending request"):
        derive_request_approve(request=rejected, user=approver)
    assert derive_request_create_child(request_pk=rejected.pk) is None
    rejected.refresh_from_db()
    assert (rejected.status, rejected.result_agent) == ("rejected", None)
    assert not Agent.objects.filter(parent=scholar).exists()


def test_it_records_why_a_child_could_not_be_created(scholar, author, approver, settings):
    request = by_hand(scholar, author)
    derive_request_approve(request=request, user=approver)
    settings.LLM_BACKENDS = {"other": {"kind": "builtin"}}  # the parent's backend is gone
    with pytest.raises(Exception, match="backend 'builtin' is not configured"):
        derive_request_create_child(request_pk=request.pk)
    request.refresh_from_db()
    assert request.result_agent is None and "backend 'builtin' is not configured" in request.result_error
    assert request.events.last().kind == "child_failed"
    assert not Agent.objects.filter(parent=scholar).exists()


# -- lineage stays consistent ------------------------------------------------------------------


@hypothesis_settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parents=st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=10))
def test_it_keeps_lineage_consistent_on_any_derivation_tree(parents, author, approver):
    """Each draw derives a child from one of the agents so far; then every invariant of §2.1
    lineage holds: the root is the ancestor at level 0, a level is its parent's plus one,
    and children lists are exactly the agents naming the parent."""
    with transaction.atomic():
        agents = [make_agent("root0")]
        for index, pick in enumerate(parents):
            parent = agents[pick % len(agents)]
            request = by_hand(parent, author, new_name=f"child{index}", trigger="frequency_threshold")
            derive_request_approve(request=request, user=approver)
            agents.append(derive_request_create_child(request_pk=request.pk))
        stored = {agent.agent_id: agent for agent in Agent.objects.select_related("parent", "root")}
        for agent in stored.values():
            ancestor = agent
            while ancestor.parent is not None:
                ancestor = ancestor.parent
            assert agent.root == ancestor and ancestor.level == 0
            assert agent.level == (agent.parent.level + 1 if agent.parent else 0)
            assert agent.children_ids == sorted(a.agent_id for a in stored.values() if a.parent_id == agent.pk)
        assert len(stored) == len(parents) + 1
        transaction.set_rollback(True)


# -- the commands ------------------------------------------------------------------------------


def command(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_lists_requests_as_json_by_status(scholar, author, approver):
    pending = by_hand(scholar, author)
    decided = by_hand(scholar, author, trigger="quality_issue", new_name="Scholar (careful)")
    derive_request_reject(request=decided, user=approver)
    everything = json.loads(command("derive_requests")[0])
    assert [r["derive_request_id"] for r in everything] == [pending.derive_request_id, decided.derive_request_id]
    [only] = json.loads(command("derive_requests", "--status", "pending")[0])
    assert (only["derive_request_id"], only["status"], only["trigger"]) == (pending.derive_request_id, "pending",
                                                                          "capability_gap")
    assert only["specialization"]["additional_skills"] == ["read_meshes"]
    assert [e["event"] for e in json.loads(command("derive_requests", "--status", "rejected")[0])[0]["history"]] == [
        "raised", "rejected"]


def test_it_approves_from_the_command_line_as_an_approver(scholar, author, approver):
    request = by_hand(scholar, author)
    out, err = command("approve_derive_request", request.derive_request_id, "--user", "ada", "--comment", "ok",
                       "--wait", "0")
    document = json.loads(out)
    assert (document["status"], document["decided_by"], document["comment"]) == ("approved", "ada", "ok")
    assert document["result_agent_id"] == "Scholar_3D" and "creating it here" in err
    assert Agent.objects.get(agent_id="Scholar_3D").parent == scholar


def test_it_refuses_the_command_without_the_permission_or_for_a_decided_request(scholar, author, approver):
    request = by_hand(scholar, author)
    with pytest.raises(CommandError, match="only a user with the approver role") as refused:
        command("approve_derive_request", request.derive_request_id, "--user", "bob")
    assert refused.value.returncode == 1
    command("approve_derive_request", request.derive_request_id, "--user", "ada", "--reject", "--comment", "no")
    request.refresh_from_db()
    assert (request.status, request.comment, request.result_agent) == ("rejected", "no", None)
    with pytest.raises(CommandError, match="was rejected by ada already") as again:
        command("approve_derive_request", request.derive_request_id, "--user", "ada")
    assert again.value.returncode == 1
    for args, message in (((request.derive_request_id, "--user", "nobody"), "no active user 'nobody'"),
                          (("dr_missing", "--user", "ada"), "derive request 'dr_missing' does not exist")):
        with pytest.raises(CommandError, match=message) as bad:
            command("approve_derive_request", *args)
        assert bad.value.returncode == 2


@pytest.mark.django_db(transaction=True)
def test_it_creates_one_child_when_two_workers_get_the_task_at_once(author, approver):
    """Two deliveries of `agents.derive_child` at the same moment, each in its own thread
    and database connection: the request's row lock lets one create the child."""
    import threading

    from django.db import connection

    from quality.derive_requests.tasks import derive_child

    parent = make_agent("scholar")
    request = by_hand(parent, author)
    derive_request_approve(request=request, user=approver)
    start, results = threading.Barrier(2), []

    def deliver():
        try:
            start.wait()
            results.append(derive_child(request.pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=deliver) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == ["Scholar_3D", "Scholar_3D"]
    assert Agent.objects.filter(parent=parent).count() == 1
    assert [e.kind for e in DeriveRequest.objects.get().events.all()] == ["raised", "approved", "child_created"]
