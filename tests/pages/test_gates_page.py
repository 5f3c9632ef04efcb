"""Gates on the pages, in a real browser: a run stops at a gate, its page shows what the gate
asks, the data shown and who may decide, and a decider approves, rejects or edits it there;
the overview lists the gates waiting for the signed-in user. The release review's gate is
reached on a real worker in the first test; the others run their node runs in this process
(`drain`) so that the test says when the run goes on."""
import json
import re

import pytest
from django.contrib.auth.models import Group, User
from django.utils import timezone
from playwright.sync_api import expect

from executions.models import Execution
from executions.services import execution_start, gate_decide
from tests.executions.conftest import drain, wait_for
from tests.executions.test_gates import PARALLEL
from tests.pages.conftest import screenshot, signed_in
from tests.pages.test_derive_requests import watch_errors
from workflows.models import Blueprint, Contract, Workflow
from workflows.services import workflow_import_document

pytestmark = pytest.mark.django_db(transaction=True)

XSS = '<img src=x onerror="window.pwned=1"><b>bold</b>'


def release(**input) -> Execution:
    """A release review run in this process up to its gate."""
    execution = drain(execution_start(workflow=Workflow.objects.get(workflow_id="release_review"),
                                      input={"topic": "Switchyard 2.1", **input}))
    assert execution.status == "waiting"
    return execution


def gate_of(execution, node_id="approve"):
    return execution.node_runs.filter(node_id=node_id).order_by("-sequence", "-id").first()


def gate_url(execution, gate) -> str:
    return f"/executions/{execution.execution_id}/?node={gate.node_id}&run={gate.pk}#node-panel"


def gate_box(page, gate):
    return page.locator(f"#node-panel .gate-box[data-gate='{gate.pk}']")


def refused_requests_only(errors: list[str]) -> list[str]:
    """The errors of a page, but for the browser's note of a request the server refused."""
    return [error for error in errors if not error.startswith("Failed to load resource")]


@pytest.mark.integration
def test_an_approver_approves_the_draft_on_the_page_and_the_run_goes_on_to_publish(page_for, api, demo_with_workers):
    execution = execution_start(workflow=Workflow.objects.get(workflow_id="release_review"),
                                input={"topic": "Switchyard 2.1"}, actor=api.author.user)
    demo_with_workers.start(1)
    execution = wait_for(execution, statuses=("waiting",), timeout=60, workers=demo_with_workers)
    gate = gate_of(execution)
    assert gate.status == "waiting"

    page = page_for(api.approver.user)
    errors = watch_errors(page)
    page.goto(f"/executions/{execution.execution_id}/")
    expect(page.locator("#run-status")).to_have_text("waiting")
    expect(page.locator("#run-ended")).to_contain_text("waiting for a person")
    expect(page.locator("#run-live")).to_be_visible()  # the page keeps following the run
    banner = page.locator("#gates-waiting")
    expect(banner).to_contain_text("Waiting for a person's decision")
    expect(banner.locator(f"li[data-gate-waiting='{gate.pk}']")).to_contain_text("Publish these release notes?")
    expect(banner).to_contain_text("yours to decide")
    # The graph: the gate is a person's step (a hexagon), coloured as waiting; the legend says both.
    graph = page.evaluate("""() => { const node = window.switchyard.executionGraph.getElementById('approve');
        return {status: node.data('status'), shape: node.style('shape'), label: node.data('label')}; }""")
    assert graph == {"status": "waiting", "shape": "hexagon", "label": "approve\nRelease_Manager\na person decides"}
    assert page.evaluate("window.switchyard.executionGraph.getElementById('draft').style('shape')") == "round-rectangle"
    legend = page.locator(".status-legend")
    expect(legend).to_contain_text("waiting for a person")
    expect(legend).to_contain_text("gate: a person decides")
    expect(page.locator(".tl-row[data-node='approve'] .tl-bar.waiting")).to_contain_text("waiting")
    expect(page.locator(".tl-row[data-node='approve'] .dot.waiting")).to_have_count(1)
    expect(page.locator("table.node-runs .badge.waiting")).to_have_count(1)

    banner.locator(f"li[data-gate-waiting='{gate.pk}'] a").click()
    expect(page.locator("#node-panel h2")).to_contain_text("approve")
    expect(page.locator("#node-panel .gate-tag")).to_have_text("gate: a person decides")
    box = gate_box(page, gate)
    expect(box.locator(".gate-prompt")).to_have_text("Publish these release notes?")
    draft = execution.state["draft"]
    expect(box.locator("pre[data-shown='draft']")).to_have_text(draft)
    feedback = execution.state["feedback"]
    expect(box.locator("pre[data-shown='review']")).to_have_text(
        feedback if isinstance(feedback, str) else json.dumps(feedback, indent=2, ensure_ascii=False))
    expect(box.locator(".gate-deciders")).to_have_text("a user with the approver role")
    expect(box.locator(".gate-timeout")).to_contain_text("after 24 h 00 min undecided, sent to a person (escalated), at ")
    form = box.locator("form.gate-form")
    expect(form.locator("button[data-decision]")).to_have_text(["Approve", "Reject", "Review the edit…"])
    # Each field of the data shown is a field of the form: the draft's lines as lines, not JSON.
    expect(form.locator("textarea[data-gate-field='output.draft']")).to_have_value(draft)
    expect(form.locator("[data-gate-field='output.review']")).to_have_value(gate.gate["shown"]["review"])

    form.locator("textarea[data-gate-field='comment']").fill("Good to go: the breaking change is named.")
    form.get_by_role("button", name="Approve the data of gate approve", exact=True).click()

    # Decided: the page shows what, by whom, when and why; the run goes on to publish (on
    # the worker), whose publishing fails into compliance, which escalates (the demo's path).
    decision = box.locator(".gate-decision")
    expect(decision).to_have_attribute("data-decision", "approve")
    expect(decision.locator(".gate-decided-by")).to_have_text("approver-user")
    expect(decision.locator(".gate-decided-at")).to_have_text(re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$"))
    expect(decision.locator(".gate-comment")).to_have_text("Good to go: the breaking change is named.")
    expect(decision.locator(".gate-timed-out")).to_have_text("no")
    expect(box.locator("form.gate-form")).to_have_count(0)
    expect(page.locator("#run-status")).to_have_text("escalated", timeout=30_000)
    expect(page.locator("#gates-waiting")).to_be_hidden()
    expect(page.locator(".tl-row[data-node='publish'] .tl-bar")).not_to_have_count(0)
    gate.refresh_from_db()
    assert gate.gate["decision"] == "approve" and gate.gate["decided_by"] == "approver-user"
    assert gate.gate["comment"] == "Good to go: the breaking change is named."
    assert execution.node_runs.filter(node_id="publish").exists()
    assert errors == []


def test_a_rejection_loops_back_to_the_drafter_and_the_gate_asks_again(page_for, api, demo, no_tasks):
    execution = release()
    first = gate_of(execution)
    page = page_for(api.approver.user)
    errors = watch_errors(page)
    page.goto(gate_url(execution, first))
    box = gate_box(page, first)
    expect(box.locator("form.gate-form")).to_be_visible()
    box.locator("textarea[data-gate-field='comment']").fill("Name the breaking change.")
    screenshot(page.locator("#node-panel"), "gate-form")  # the gate's panel with its form, for docs/pages.md
    box.get_by_role("button", name="Reject the data of gate approve", exact=True).click()
    expect(box.locator(".gate-decision")).to_have_attribute("data-decision", "reject")
    expect(box.locator(".gate-comment")).to_have_text("Name the breaking change.")
    expect(page.locator("#run-status")).to_have_text("running")  # back to the drafter
    first.refresh_from_db()
    assert first.status == "failed" and first.error == "rejected by approver-user: Name the breaking change."

    execution = drain(execution)  # draft and review again, then the gate asks again
    assert execution.status == "waiting"
    second = gate_of(execution)
    assert second.pk != first.pk and second.status == "waiting"
    expect(page.locator("#run-status")).to_have_text("waiting")
    waiting = page.locator(f"#gates-waiting li[data-gate-waiting='{second.pk}']")
    expect(waiting).to_be_visible()
    expect(page.locator("#node-panel .trail-chip")).to_have_count(2)
    expect(page.locator("#node-panel .trail-chip.failed")).to_have_count(1)
    expect(page.locator("#node-panel .trail-chip.waiting")).to_have_count(1)
    waiting.locator("a").click()
    second_box = gate_box(page, second)
    expect(second_box.locator("form.gate-form")).to_be_visible()
    expect(second_box.locator("pre[data-shown='draft']")).to_have_text(execution.state["draft"])
    expect(page.locator(".tl-row[data-node='approve'] .tl-bar")).to_have_count(2)
    assert errors == []


def test_an_edit_is_made_field_by_field_checked_at_its_field_and_confirmed_against_what_was_shown(
        page_for, api, demo, no_tasks):
    workflow = Workflow.objects.get(workflow_id="release_review")
    Contract.objects.create(blueprint=Blueprint.objects.create(blueprint_id="release", name="Release"),
                            from_agent=workflow.nodes.get(node_id="approve").agent,
                            to_agent=workflow.nodes.get(node_id="publish").agent, key="approved_draft",
                            schema={"type": "object", "required": ["draft"],
                                    "properties": {"draft": {"type": "string", "minLength": 10}}})
    Workflow.objects.filter(pk=workflow.pk).update(updated_at=timezone.now())
    execution = release(topic=XSS)
    gate = gate_of(execution)
    shown = gate.gate["shown"]["draft"]
    assert "\n" in shown  # the draft has several lines

    page = page_for(api.approver.user)
    errors = watch_errors(page)
    page.goto(gate_url(execution, gate))
    box = gate_box(page, gate)
    draft = box.locator("textarea[data-gate-field='output.draft']")
    expect(draft).to_have_value(shown)  # its lines as lines: no JSON, no \n escapes
    expect(box.locator(".gate-field[data-field='draft'] label")).to_contain_text("draft (required)")
    expect(box.locator(".gate-edit")).to_contain_text("held to the gate's schema")
    review = box.get_by_role("button", name="Review the edit of gate approve")

    # Emptied, the draft breaks the gate's schema: refused by the server at the field, nothing stored.
    draft.fill("")
    review.click()
    confirm = box.locator(".gate-confirm")
    expect(confirm.locator(".gate-diff dt[data-diff='draft']")).to_contain_text("changed")
    box.get_by_role("button", name="Pass on the edited data").click()
    error = box.locator(".field-error[data-for='output.draft']")
    expect(error).to_have_text("output.draft: '' should be non-empty (the gate's schema)")
    expect(draft).to_have_class(re.compile(r"\binvalid\b"))
    expect(draft).to_be_focused()
    expect(confirm).to_be_hidden()  # back to the fields, the problem at its own
    assert gate_of(execution).status == "waiting" and gate_of(execution).output is None

    # Text the gate's schema takes but the contract with publish does not: refused at the field too.
    draft.fill("short")
    review.click()
    box.get_by_role("button", name="Pass on the edited data").click()
    expect(error).to_have_text("output.draft: 'short' is too short (the contract 'approved_draft')")
    expect(box.locator(".gate-form-error")).to_be_hidden()
    assert gate_of(execution).status == "waiting"

    # A real edit: the diff against what was shown, line by line, before anything is sent.
    lines = shown.split("\n")
    edited = "\n".join([lines[0], "", "- Breaking: the API's v1 endpoints are gone.", *lines[1:]])
    draft.fill(edited)
    review.click()
    expect(confirm).to_be_visible()
    expect(confirm.locator("ins.diff-line")).to_have_count(2)  # the line added, and the empty line after it
    expect(confirm.locator("ins.diff-line", has_text="Breaking")).to_have_text(
        re.compile(r"^\+ - Breaking: the API's v1 endpoints are gone\.\s*$"))
    expect(confirm.locator("del.diff-line")).to_have_count(0)
    expect(confirm.locator(".gate-diff dt")).to_have_count(1)  # the review, unchanged, is not listed
    expect(draft).to_be_disabled()  # what is sent is what the diff shows
    confirm.get_by_role("button", name="Back to editing").click()
    expect(confirm).to_be_hidden()
    expect(draft).to_be_enabled()
    expect(draft).to_have_value(edited)
    assert gate_of(execution).status == "waiting"
    assert page.evaluate("window.pwned") is None  # the topic, in the draft shown and the diff, is text
    assert refused_requests_only(errors) == []

    # An author is not this gate's decider: who may decide is said, and there is no form.
    author = page_for(api.author.user)
    author_errors = watch_errors(author)
    author.goto(gate_url(execution, gate))
    author_box = gate_box(author, gate)
    expect(author_box.locator(".gate-not-yours")).to_contain_text("Waiting for a user with the approver role to decide")
    expect(author_box.locator("pre[data-shown='draft']")).to_be_visible()
    expect(author_box.locator("form.gate-form")).to_have_count(0)
    expect(author.locator("#gates-waiting")).not_to_contain_text("yours to decide")
    assert author_errors == []

    # Confirmed, the edit is what goes on, as the fields held it.
    box.locator("textarea[data-gate-field='comment']").fill("named the breaking change")
    review.click()
    box.get_by_role("button", name="Pass on the edited data").click()
    expect(box.locator(".gate-decision")).to_have_attribute("data-decision", "edit")
    assert gate_of(execution).output == {"draft": edited, "review": gate.gate["shown"]["review"]}
    # The author's page follows: the decision, and still no form.
    expect(author_box.locator(".gate-decision .gate-decided-by")).to_have_text("approver-user")
    expect(author_box.locator(".gate-not-yours")).to_have_count(0)


NUMBERS = {
    "workflow_id": "stock_check", "name": "Stock check", "topology": "seq",
    "nodes": [{"id": "count", "agent_ref": "Release_Manager",
               "input_mapping": {"count": 3, "urgent": True, "tags": ["a"], "note": "$.input.note"},
               "gate": {"prompt": "Confirm the count", "deciders": {"roles": ["approver"]},
                        "schema": {"type": "object", "required": ["count"],
                                   "properties": {"count": {"type": "integer", "minimum": 1},
                                                  "urgent": {"type": "boolean"},
                                                  "tags": {"type": "array", "items": {"type": "string"}},
                                                  "note": {"type": "string"}}}}}],
}


def test_numbers_yes_no_and_lists_are_edited_as_such_and_refused_at_their_field(page_for, api, demo, no_tasks):
    workflow_import_document(NUMBERS, actor="test")
    execution = drain(execution_start(workflow=Workflow.objects.get(workflow_id="stock_check"), input={"note": "shelf 4"}))
    gate = gate_of(execution, "count")
    page = page_for(api.approver.user)
    errors = watch_errors(page)
    page.goto(gate_url(execution, gate))
    box = gate_box(page, gate)
    count = box.locator("input[type='number'][data-gate-field='output.count']")
    urgent = box.locator("input[type='checkbox'][data-gate-field='output.urgent']")
    tags = box.locator("textarea[data-gate-field='output.tags']")
    expect(count).to_have_value("3")
    expect(urgent).to_be_checked()
    assert json.loads(tags.input_value()) == ["a"]  # a list, as JSON (the number field above was drawn first)
    expect(box.locator("input[type='text'][data-gate-field='output.note']")).to_have_value("shelf 4")
    review = box.get_by_role("button", name="Review the edit of gate count")

    tags.fill("[not json")  # read on the page: refused at its field before anything is sent
    review.click()
    expect(box.locator(".field-error[data-for='output.tags']")).to_contain_text("tags is not JSON")
    expect(box.locator(".gate-confirm")).to_be_hidden()

    tags.fill('["a", "b"]')
    count.fill("0")  # a number, but below the schema's minimum: the server refuses it there
    urgent.uncheck()
    review.click()
    box.get_by_role("button", name="Pass on the edited data").click()
    expect(box.locator(".field-error[data-for='output.count']")).to_have_text(
        "output.count: 0 is less than the minimum of 1 (the gate's schema)")
    expect(count).to_have_class(re.compile(r"\binvalid\b"))
    assert gate_of(execution, "count").status == "waiting"

    count.fill("5")
    review.click()
    diff = box.locator(".gate-confirm .gate-diff")
    expect(diff.locator("dt")).to_have_text([re.compile("^count"), re.compile("^urgent"), re.compile("^tags")])
    expect(diff.locator("dd[data-diff='count'] del")).to_have_text("- 3")
    expect(diff.locator("dd[data-diff='count'] ins")).to_have_text("+ 5")
    box.get_by_role("button", name="Pass on the edited data").click()
    expect(box.locator(".gate-decision")).to_have_attribute("data-decision", "edit")
    assert gate_of(execution, "count").output == {"count": 5, "urgent": False, "tags": ["a", "b"], "note": "shelf 4"}
    assert refused_requests_only(errors) == []


def test_two_gates_in_parallel_branches_are_decided_on_the_page_by_their_own_deciders(page_for, api, demo, no_tasks):
    workflow_import_document(PARALLEL, actor="test")
    lea = User.objects.create_user(username="lea", password="a long password")
    max_ = User.objects.create_user(username="max", password="a long password")
    execution = drain(execution_start(workflow=Workflow.objects.get(workflow_id="launch_signoff"),
                                      input={"topic": "launch"}))
    assert execution.status == "waiting"
    legal, marketing = gate_of(execution, "legal"), gate_of(execution, "marketing")

    lea_page = page_for(lea)
    lea_errors = watch_errors(lea_page)
    lea_page.goto(gate_url(execution, marketing))
    expect(gate_box(lea_page, marketing).locator(".gate-not-yours")).to_contain_text("Waiting for max to decide")
    expect(gate_box(lea_page, marketing).locator("form.gate-form")).to_have_count(0)
    expect(lea_page.locator("#gates-waiting li")).to_have_count(2)
    assert lea_page.evaluate("""() => ['legal', 'marketing', 'draft'].map(
        (id) => window.switchyard.executionGraph.getElementById(id).style('shape'))""") == [
        "hexagon", "hexagon", "round-rectangle"]
    lea_page.locator(f"#gates-waiting li[data-gate-waiting='{legal.pk}'] a").click()
    legal_box = gate_box(lea_page, legal)
    legal_box.locator("textarea[data-gate-field='comment']").fill("Legal: fine.")
    legal_box.get_by_role("button", name="Approve the data of gate legal", exact=True).click()
    expect(legal_box.locator(".gate-decided-by")).to_have_text("lea")
    expect(lea_page.locator("#gates-waiting li")).to_have_count(1)
    expect(lea_page.locator("#run-status")).to_have_text("waiting")  # marketing still waits
    assert not execution.node_runs.filter(node_id="publish").exists()

    max_page = page_for(max_)
    max_errors = watch_errors(max_page)
    max_page.goto(gate_url(execution, marketing))
    marketing_box = gate_box(max_page, marketing)
    expect(marketing_box.locator("button[data-decision]")).to_have_text(["Approve", "Reject"])  # no edit offered
    expect(marketing_box.locator(".gate-edit")).to_have_count(0)
    marketing_box.get_by_role("button", name="Approve the data of gate marketing", exact=True).click()
    expect(marketing_box.locator(".gate-decided-by")).to_have_text("max")
    execution = drain(execution)
    assert execution.status == "success"
    expect(max_page.locator("#run-status")).to_have_text("success")
    expect(lea_page.locator("#run-status")).to_have_text("success")
    expect(lea_page.locator("#gates-waiting")).to_be_hidden()
    assert lea_errors == [] and max_errors == []


def test_the_overview_lists_the_gates_waiting_for_the_user_and_links_to_the_form(page_for, api, demo, no_tasks):
    execution = release()
    gate = gate_of(execution)

    viewer = signed_in(api.viewer.user).get("/").content.decode()
    assert "Waiting for you" not in viewer and 'id="gates-pending"' not in viewer
    assert '<div class="stat">1</div><div class="stat-label">runs waiting for a person:' in viewer
    assert "?status=waiting" in viewer

    page = page_for(api.approver.user)
    errors = watch_errors(page)
    page.goto("/")
    pending = page.locator("#gates-pending")
    expect(pending.locator("h2")).to_contain_text("Waiting for you")
    row = pending.locator(f"tr[data-gate='{gate.pk}']")
    expect(row).to_contain_text("Publish these release notes?")
    expect(row).to_contain_text("Release review (state machine)")
    expect(row).to_contain_text(execution.execution_id)
    expect(row).to_contain_text("then escalate")
    row.locator("a.gate-link").click()
    page.wait_for_url(f"**/executions/{execution.execution_id}/?node=approve&run={gate.pk}#decide-{gate.pk}")
    # The link lands on the form itself, scrolled into view and focused: its fields and buttons
    # are what the decider sees first, and where the keyboard starts.
    form = gate_box(page, gate).locator(f"form#decide-{gate.pk}")
    expect(form).to_be_focused()
    expect(form.get_by_role("button", name="Approve the data of gate approve")).to_be_in_viewport()
    expect(form.locator("[data-gate-field='comment']")).to_be_in_viewport()
    expect(page.locator(f"#node-panel #run-{gate.pk}[open]")).to_be_visible()
    page.keyboard.press("Tab")  # from the form, into its first field
    expect(form.locator("[data-gate-field='comment']")).to_be_focused()
    assert errors == []

    # The executions list filters on waiting runs, drawn in their colour.
    page.goto("/executions/?status=waiting")
    expect(page.locator("table.executions tbody tr")).to_have_count(1)
    expect(page.locator("table.executions .badge.waiting")).to_have_text("waiting")
    colour = page.evaluate("getComputedStyle(document.querySelector('table.executions .badge.waiting')).backgroundColor")
    assert colour == "rgb(123, 79, 201)"


def test_a_refused_decision_is_said_and_one_made_meanwhile_is_shown_with_who_made_it(page_for, api, demo, no_tasks):
    execution = release()
    gate = gate_of(execution)
    page = page_for(api.approver.user)
    errors = watch_errors(page)
    page.goto(gate_url(execution, gate))
    box = gate_box(page, gate)
    approve = box.get_by_role("button", name="Approve the data of gate approve", exact=True)
    expect(approve).to_be_visible()

    # No longer an approver since the page was drawn: the API refuses, and the page says why.
    api.approver.user.groups.clear()
    approve.click()
    expect(box.locator(".gate-form-error")).to_have_text(
        "Not allowed: gate 'approve' is decided by a user with the approver role; approver-user may not decide it")
    expect(approve).to_be_enabled()
    assert gate_of(execution).status == "waiting"

    # Decided by someone else while the page did not know (its refreshes held back): the
    # second decision is refused naming the first, and the page then shows the first.
    api.approver.user.groups.add(Group.objects.get(name="approver"))
    record = f"**/api/executions/{execution.execution_id}"
    page.route(record, lambda route: route.abort())
    gate_decide(execution=execution, node_run_id=gate.pk, decision="reject", comment="not yet", actor=api.admin.user)
    approve.click()
    refusal = "Your decision was not recorded: gate 'approve' was already decided: reject by admin-user at "
    expect(box.locator(".gate-form-error")).to_contain_text(refusal)
    page.unroute(record)
    decided = gate_box(page, gate)
    expect(decided.locator(".gate-decision")).to_have_attribute("data-decision", "reject", timeout=15_000)
    expect(decided.locator(".gate-decided-by")).to_have_text("admin-user")
    expect(decided.locator(".gate-comment")).to_have_text("not yet")
    expect(decided.locator(".gate-error")).to_contain_text(refusal)
    expect(decided.locator("form.gate-form")).to_have_count(0)
    assert refused_requests_only(errors) == []


def test_the_run_page_names_who_gave_an_output_on_resume_past_a_gate_and_past_any_node(page_for, api, demo, no_tasks):
    from datetime import timedelta

    from executions.services import execution_resume, node_runs_sweep

    execution = release()
    node_runs_sweep(now=gate_of(execution).decide_by + timedelta(seconds=1))  # undecided: escalated
    execution_resume(execution=execution, output={"draft": "Release notes the admin gave on resume."},
                     actor=api.admin.user)
    execution = drain(execution)  # published, then compliance escalates to a person
    assert execution.status == "escalated" and execution.escalation["node_id"] == "compliance"
    execution_resume(execution=execution, output={"compliant": True}, actor=api.author.user)
    resumed_gate, resumed = gate_of(execution), gate_of(execution, "compliance")
    assert (resumed_gate.kind, resumed.kind) == ("manual", "manual")

    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    page.goto(gate_url(execution, resumed_gate))
    box = gate_box(page, resumed_gate)
    expect(box.locator(".gate-decision")).to_have_attribute("data-decision", "edit")
    expect(box.locator(".gate-decided-by")).to_have_text("admin-user")
    expect(box.locator(".gate-given")).to_have_text("given to resume the run past the gate")
    expect(page.locator(f"#run-{resumed_gate.pk} > summary")).to_contain_text("edit by admin-user on resume")

    page.goto(gate_url(execution, resumed))
    expect(page.locator(f"#run-{resumed.pk} > summary")).to_contain_text("given by author-user on resume")
    expect(page.locator(f"#run-{resumed.pk} .given-by")).to_have_text("author-user")
    assert errors == []


def test_rounds_are_labelled_in_the_table_the_timeline_and_the_gate_panel(page_for, api, demo, no_tasks):
    execution = release()
    first = gate_of(execution)
    gate_decide(execution=execution, node_run_id=first.pk, decision="reject", comment="again", actor=api.approver.user)
    execution = drain(execution)  # draft, review and the gate again: each node's second round
    second = gate_of(execution)
    assert second.pk != first.pk and second.status == "waiting"

    page = page_for(api.approver.user)
    errors = watch_errors(page)
    page.goto(gate_url(execution, second))
    rows = page.locator("table.node-runs tbody tr")
    approve_rows = rows.filter(has=page.locator("a[data-node='approve']"))
    expect(approve_rows.locator("td.run-round")).to_have_text(["round 1 · attempt 1", "round 2 · attempt 1"])
    draft_rows = rows.filter(has=page.locator("a[data-node='draft']"))
    expect(draft_rows.locator("td.run-round")).to_have_text(
        ["round 1 · attempt 1", "round 2 · attempt 1", "round 3 · attempt 1"])
    expect(page.locator(".tl-row[data-node='approve'] .tl-bar")).to_have_text(
        ["round 1 · attempt 1", "round 2 · attempt 1 · waiting"])
    box = gate_box(page, second)
    expect(box.locator(".gate-round")).to_have_text(" · round 2")
    expect(page.locator(f"#run-{second.pk} > summary .run-round")).to_have_text("round 2 · attempt 1")
    expect(page.locator("#node-panel .trail-chip")).to_have_text([re.compile(r"^round 1 · attempt 1 "),
                                                                  re.compile(r"^round 2 · attempt 1 ")])
    # The timeline's lane button and the gate's buttons each have a name of their own.
    expect(page.get_by_role("button", name="Show node approve in the panel", exact=True)).to_have_count(1)
    expect(page.get_by_role("button", name="Approve the data of gate approve", exact=True)).to_have_count(1)
    expect(page.get_by_role("button", name="approve", exact=True)).to_have_count(0)
    expect(page.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
    assert errors == []

    # The API's records carry the round too.
    records = api.viewer.get(f"/api/executions/{execution.execution_id}/node-runs?node=approve").json()["items"]
    assert [(r["round"], r["attempt"]) for r in records] == [(1, 1), (2, 1)]
    whole = api.viewer.get(f"/api/executions/{execution.execution_id}/node-runs/{second.pk}").json()
    assert whole["round"] == 2
