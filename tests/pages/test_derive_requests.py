"""The derive-request queue and a request's page: its trigger and evidence, the
specialisation, the decision and its history; approve / reject only for approvers (in the
browser too), and the child agent a real worker creates, shown without a reload."""
import re
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents.models import DeriveRequest, DeriveRequestEvent
from executions.models import NodeRun
from quality.derive_requests import services
from tests.pages.test_agents import derive, evaluation, finished_run, signed_in
from tests.replay import load_demo

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(tmp_path, settings):
    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)

EVIDENCE = {
    "threshold": 0.7,
    "window": 5,
    "agent_id": "Scholar",
    "evaluations": [
        {"evaluation_id": "eval_low_1", "target_id": "exec_medical_1", "overall_score": 0.42},
        {"evaluation_id": "eval_low_2", "target_id": "exec_medical_2", "overall_score": 0.55},
    ],
    "failures": {"count": 3, "executions": ["exec_medical_1", "exec_gone"]},
}


def raise_request(user, *, request_id="dr_medicine", trigger_context=EVIDENCE, **extra) -> DeriveRequest:
    values = {"parent_agent_id": "Scholar", "trigger": "quality_issue", "new_name": "Scholar for medicine",
              "domain_focus": "clinical trials", "additional_skills": ["read_trials", "grade_evidence"],
              "additional_constraints": ["cite the trial registry id"]} | extra
    return services.derive_request_create(derive_request_id=request_id, trigger_context=trigger_context, user=user,
                                          **values)


@pytest.fixture
def evidence(demo):
    """The runs and evaluations the example evidence names (all but exec_gone exist)."""
    for name in ("exec_medical_1", "exec_medical_2"):
        finished_run(name, "thesis_reading", ["Scholar"], status="failed")
    evaluation("eval_low_1", "execution", "exec_medical_1", 0.42)
    evaluation("eval_low_2", "execution", "exec_medical_2", 0.55)


def test_it_puts_pending_requests_first_and_links_each_to_its_page(api, evidence):
    # (One pending request per agent and trigger: the two pending ones differ in their trigger.)
    raise_request(api.author.user, request_id="dr_old_pending")
    decided = raise_request(api.author.user, request_id="dr_decided", trigger="capability_gap")
    services.derive_request_reject(request=decided, user=api.approver.user, comment="not now")
    raise_request(api.author.user, request_id="dr_new_pending", trigger="frequency_threshold")
    DeriveRequest.objects.filter(pk=decided.pk).update(created_at=timezone.now())  # the newest of all, but decided
    response = signed_in(api.viewer.user).get("/derive-requests/")
    order = [item.derive_request_id for item in response.context["page"]]
    assert order == ["dr_new_pending", "dr_old_pending", "dr_decided"]
    page = response.content.decode()
    assert 'href="/derive-requests/dr_old_pending/"' in page and 'href="/agents/Scholar/"' in page
    only_decided = signed_in(api.viewer.user).get("/derive-requests/", {"status": "rejected"}).context["page"]
    assert [item.derive_request_id for item in only_decided] == ["dr_decided"]


def test_it_shows_the_trigger_its_evidence_with_links_and_the_specialisation(api, evidence):
    raise_request(api.author.user)
    response = signed_in(api.viewer.user).get("/derive-requests/dr_medicine/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Derive Scholar for medicine from Scholar" in page
    assert "Trigger: quality issue" in page
    for link in ('href="/executions/exec_medical_1/"', 'href="/executions/exec_medical_2/"',
                 'href="/agents/Scholar/"', 'href="/evaluations/eval_low_1/"'):
        assert link in page, link
    assert "exec_gone" in page and 'href="/executions/exec_gone/"' not in page  # named, but no such run
    assert "<th>overall score</th>" in page and "0.42" in page  # a list of records reads as a table
    assert "clinical trials" in page and "+ read_trials" in page and "cite the trial registry id" in page
    assert "Waiting for an approver to decide." in page


def test_it_reads_a_requests_page_in_a_fixed_number_of_queries(api, evidence):
    viewer = signed_in(api.viewer.user)
    raise_request(api.author.user)
    raise_request(api.author.user, request_id="dr_big", trigger="capability_gap", trigger_context={
        "evaluations": [{"evaluation_id": f"eval_{n}", "target_id": f"exec_{n}"} for n in range(300)]})
    counts = []
    for request_id in ("dr_medicine", "dr_big"):
        with CaptureQueriesContext(connection) as captured:
            assert viewer.get(f"/derive-requests/{request_id}/").status_code == 200
        counts.append(len(captured))
    assert counts[0] == counts[1] <= 10


@pytest.mark.parametrize("role, sees_buttons", [("viewer", False), ("author", False), ("approver", True), ("admin", True)])
def test_it_offers_approve_and_reject_to_approvers_only(api, evidence, role, sees_buttons):
    raise_request(api.author.user)
    page = signed_in(getattr(api, role).user).get("/derive-requests/dr_medicine/").content.decode()
    assert ('data-decision="approve"' in page) is sees_buttons
    assert ('data-decision="reject"' in page) is sees_buttons


def test_it_shows_who_decided_when_and_why_and_offers_no_buttons_any_more(api, evidence):
    request = raise_request(api.author.user)
    services.derive_request_reject(request=request, user=api.approver.user, comment="Use the <b>base</b> agent.")
    page = signed_in(api.approver.user).get("/derive-requests/dr_medicine/").content.decode()
    assert 'data-decision="approve"' not in page
    assert 'data-field="decided_by">approver-user<' in page
    assert "Use the &lt;b&gt;base&lt;/b&gt; agent." in page  # a comment is text, never markup


def test_it_links_the_agent_an_approved_request_produced(api, evidence):
    request = raise_request(api.author.user)
    services.derive_request_approve(request=request, user=api.approver.user)
    DeriveRequest.objects.filter(pk=request.pk).update(
        result_agent=derive("Scholar", "Scholar_Medicine", "Scholar for medicine"))
    page = signed_in(api.viewer.user).get("/derive-requests/dr_medicine/").content.decode()
    assert '<a id="result-agent" href="/agents/Scholar_Medicine/">Scholar for medicine</a>' in page
    agent_page = signed_in(api.viewer.user).get("/agents/Scholar_Medicine/").content.decode()
    assert 'Made by derive request <a href="/derive-requests/dr_medicine/">' in agent_page


def test_it_links_the_failing_runs_a_capability_gap_names(api, evidence):
    failed = NodeRun.objects.get(execution__execution_id="exec_medical_1", node_id="node_0")
    raise_request(api.author.user, trigger="capability_gap", trigger_context={
        "failures": [{"execution_id": "exec_medical_1", "node_id": "node_0", "node_run_id": failed.pk,
                      "error": "research needs the builtin.knowledge_search tool"},
                     {"execution_id": "exec_medical_2", "node_id": "node_0"},  # raised before runs were named
                     {"execution_id": "exec_gone", "node_id": "node_0"}],
        "missing_tools": ["builtin.knowledge_search"]})
    page = signed_in(api.viewer.user).get("/derive-requests/dr_medicine/").content.decode()
    runs = page[page.index('id="failing-runs"'):]
    assert f'href="/executions/exec_medical_1/?node=node_0&amp;run={failed.pk}#node-panel">exec_medical_1 · node_0</a>' in runs
    assert 'href="/executions/exec_medical_2/?node=node_0#node-panel">exec_medical_2 · node_0</a>' in runs
    assert '<span class="mono">exec_gone · node_0</span> <span class="small muted">(no longer stored)</span>' in runs
    assert "research needs the builtin.knowledge_search tool" in runs
    assert '<li class="chip added" data-tool="builtin.knowledge_search">+ builtin.knowledge_search</li>' in page
    assert "not available in the tool catalogue" not in page


def test_it_says_which_tools_the_catalogue_lacks_and_blocks_approving_them(api, evidence):
    raise_request(api.author.user, trigger="capability_gap",
                  trigger_context={"missing_tools": ["legal_database", "builtin.read_file"]})
    page = signed_in(api.approver.user).get("/derive-requests/dr_medicine/").content.decode()
    assert 'data-tool="legal_database">legal_database — not available in the tool catalogue</li>' in page
    assert 'data-tool="builtin.read_file">+ builtin.read_file</li>' in page
    assert "This request cannot be approved as it is: legal_database is not available in the tool catalogue" in page
    approve = re.search(r'<button[^>]*data-decision="approve"[^>]*>', page).group(0)
    assert " disabled data-blocked " in approve
    reject = re.search(r'<button[^>]*data-decision="reject"[^>]*>', page).group(0)
    assert "disabled" not in reject


def test_it_links_the_childs_first_run_once_it_has_one(api, evidence):
    request = raise_request(api.author.user)
    services.derive_request_approve(request=request, user=api.approver.user)
    DeriveRequest.objects.filter(pk=request.pk).update(
        result_agent=derive("Scholar", "Scholar_Medicine", "Scholar for medicine"))
    viewer = signed_in(api.viewer.user)
    assert '<p id="child-first-run"><span class="muted">Not run yet.</span></p>' in viewer.get(
        "/derive-requests/dr_medicine/").content.decode()
    finished_run("exec_child_1", "thesis_reading", ["Scholar_Medicine"])
    finished_run("exec_child_2", "thesis_reading", ["Scholar_Medicine"])
    first = NodeRun.objects.get(execution__execution_id="exec_child_1")
    page = viewer.get("/derive-requests/dr_medicine/").content.decode()
    assert (f'<a class="mono" href="/executions/exec_child_1/?node=node_0&amp;run={first.pk}#node-panel">'
            "exec_child_1 · node_0</a>") in page
    assert "exec_child_2" not in page


def test_it_shows_the_history_oldest_first_with_who_when_and_why(api, evidence):
    request = raise_request(api.author.user)
    services.derive_request_approve(request=request, user=api.approver.user, comment="Needs <b>its own</b> reader.")
    response = signed_in(api.viewer.user).get("/derive-requests/dr_medicine/")
    assert [event["kind"] for event in response.context["history"]] == ["raised", "approved"]
    page = response.content.decode()
    history = page[page.index('id="history-list"'):]
    assert history.index('data-event="raised"') < history.index('data-event="approved"')
    assert re.search(r'<strong>Raised</strong>\s*by <span class="history-actor">author-user</span>', history)
    assert re.search(r'<strong>Approved</strong>\s*by <span class="history-actor">approver-user</span>', history)
    assert "Needs &lt;b&gt;its own&lt;/b&gt; reader." in history and "<b>its own</b>" not in page
    assert 'id="result-waiting"' in page and "Creating the child agent…" in page  # approved, not made yet


def rule_raised(request: DeriveRequest) -> DeriveRequest:
    """As the rules raise a request: its author and its first event are the rule."""
    actor = f"rule:{request.trigger}"
    DeriveRequest.objects.filter(pk=request.pk).update(created_by=actor)
    request.events.filter(kind="raised").update(actor=actor)
    return request


def test_it_says_a_rule_raised_a_request_on_its_page_and_in_the_queue(api, evidence):
    rule_raised(raise_request(api.author.user))
    raise_request(api.author.user, request_id="dr_by_hand", trigger="capability_gap")
    viewer = signed_in(api.viewer.user)
    page = viewer.get("/derive-requests/dr_medicine/").content.decode()
    assert 'by the rule <span class="chip rule">quality issue</span>' in page
    queue = viewer.get("/derive-requests/").content.decode()
    rows = {row_id: queue[queue.index(f'href="/derive-requests/{row_id}/"'):] for row_id in ("dr_medicine", "dr_by_hand")}
    assert rows["dr_medicine"][:rows["dr_medicine"].index("</tr>")].count(">by rule</span>") == 1
    assert "by author-user" in rows["dr_by_hand"][:rows["dr_by_hand"].index("</tr>")]


def test_it_shows_why_the_child_agent_could_not_be_created(api, evidence):
    request = raise_request(api.author.user)
    services.derive_request_approve(request=request, user=api.approver.user)
    DeriveRequest.objects.filter(pk=request.pk).update(result_error="agent 'Scholar_for_medicine' exists already")
    page = signed_in(api.viewer.user).get("/derive-requests/dr_medicine/").content.decode()
    assert ('<p class="error" id="result-error" role="alert">Creating the child agent failed: '
            "agent &#x27;Scholar_for_medicine&#x27; exists already</p>") in page
    assert 'id="result-waiting"' not in page and 'data-result-error="true"' in page
    assert "could not be created" in signed_in(api.viewer.user).get("/derive-requests/").content.decode()


def test_it_answers_404_for_a_request_that_does_not_exist(api, demo):
    assert signed_in(api.viewer.user).get("/derive-requests/dr_nothing/").status_code == 404


# --- in the browser ------------------------------------------------------------------

def watch_errors(page) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error"
            and not message.location.get("url", "").endswith("/favicon.ico") else None)
    return errors


@pytest.fixture
def evidence_and_workers(workers, evidence, settings):
    workers.env["WORKSPACE_ROOT"] = str(settings.WORKSPACE_ROOT)
    return workers


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_it_lets_an_approver_approve_and_shows_the_child_agent_a_worker_creates(page_for, api, evidence_and_workers):
    from playwright.sync_api import expect

    from tests.pages.conftest import screenshot

    raise_request(api.author.user)
    page = page_for(api.approver.user)
    errors = watch_errors(page)
    page.goto("/derive-requests/")
    page.click("text=dr_medicine")
    page.wait_for_url("**/derive-requests/dr_medicine/")
    expect(page.locator("#history-list .history-event")).to_have_count(1)
    page.fill("#decision-comment", "Medical papers need their own reader.")
    page.get_by_role("button", name="Approve").click()
    expect(page.locator("#dr-status")).to_have_text("approved")
    expect(page.locator('[data-field="decided_by"]')).to_have_text("approver-user")
    expect(page.locator('[data-field="comment"]')).to_have_text("Medical papers need their own reader.")
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    # No worker yet: the task waits on its queue, and the page says the child is being made.
    expect(page.locator("#result-waiting")).to_contain_text("Creating the child agent…")
    expect(page.locator("#history-list .history-event")).to_have_count(2)
    expect(page.locator("#history-list .history-event.approved")).to_contain_text("Medical papers need their own reader.")
    request = DeriveRequest.objects.get(derive_request_id="dr_medicine")
    assert (request.status, request.decided_by.username, request.result_agent) == ("approved", "approver-user", None)
    page.evaluate("window.__samePage = true")

    evidence_and_workers.start(1)
    link = page.locator("#result-agent")
    expect(link).to_be_visible(timeout=30_000)
    request.refresh_from_db()
    child = request.result_agent
    assert child is not None and child.parent.agent_id == "Scholar"
    expect(link).to_have_attribute("href", f"/agents/{child.agent_id}/")
    expect(page.locator("#result-waiting")).to_have_count(0)
    events = page.locator("#history-list .history-event")
    expect(events).to_have_count(3)
    assert [events.nth(n).get_attribute("data-event") for n in range(3)] == ["raised", "approved", "child_created"]
    expect(events.nth(2)).to_contain_text(f"created agent {child.agent_id}")
    assert page.evaluate("window.__samePage") is True and errors == []
    screenshot(page, "derive_request")
    link.click()
    page.wait_for_url(f"**/agents/{child.agent_id}/")
    expect(page.locator("h1")).to_have_text(child.name)


@pytest.mark.django_db(transaction=True)
def test_it_shows_why_the_child_agent_could_not_be_made_without_a_reload(page_for, api, evidence):
    from playwright.sync_api import expect

    request = raise_request(api.author.user)
    with mock.patch("quality.derive_requests.tasks.derive_child.apply_async"):  # no worker: the test plays its part
        services.derive_request_approve(request=request, user=api.approver.user, comment="go")
    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    page.goto("/derive-requests/dr_medicine/")
    expect(page.locator("#result-waiting")).to_contain_text("Creating the child agent…")
    page.evaluate("window.__samePage = true")
    reason = "agent 'Scholar_for_medicine' exists already <b>twice</b>"
    DeriveRequest.objects.filter(pk=request.pk).update(result_error=reason)
    DeriveRequestEvent.objects.create(request=request, kind="child_failed", status="approved", actor="switchyard",
                                      comment=reason)
    expect(page.locator("#result-error")).to_have_text(f"Creating the child agent failed: {reason}")
    expect(page.locator("#result-waiting")).to_have_count(0)
    expect(page.locator("#history-list .history-event.child_failed")).to_contain_text(reason)
    assert page.locator("#history b").count() == 0  # shown as text, never as markup
    assert page.evaluate("window.__samePage") is True and errors == []


@pytest.mark.django_db(transaction=True)
def test_it_shows_the_apis_refusal_when_someone_else_decided_first(page_for, api, evidence):
    from playwright.sync_api import expect

    request = raise_request(api.author.user)
    page = page_for(api.approver.user)
    page.goto("/derive-requests/dr_medicine/")
    expect(page.get_by_role("button", name="Approve")).to_be_visible()
    services.derive_request_reject(request=request, user=User.objects.get(username="admin-user"), comment="dup")
    page.get_by_role("button", name="Approve").click()
    expect(page.locator("#decide-error")).to_contain_text("Already decided: derive request 'dr_medicine' was rejected by admin-user already")
    expect(page.locator("#dr-status")).to_have_text("rejected")
    assert DeriveRequest.objects.get(pk=request.pk).status == "rejected"


@pytest.mark.django_db(transaction=True)
def test_it_shows_a_viewer_no_approve_or_reject_buttons(page_for, api, evidence):
    from playwright.sync_api import expect

    raise_request(api.author.user)
    page = page_for(api.viewer.user)
    page.goto("/derive-requests/dr_medicine/")
    expect(page.locator("#waiting-note")).to_have_text("Waiting for an approver to decide.")
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    expect(page.get_by_role("button", name="Reject")).to_have_count(0)
    page.goto("/agents/Scholar/")
    expect(page.locator("h1")).to_have_text("Scholar")
    expect(page.get_by_role("link", name="Edit")).to_have_count(0)
