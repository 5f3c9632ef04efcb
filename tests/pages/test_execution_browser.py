"""A run's inspection page in a real browser: live to success on a real Celery worker (and
its evaluation when the worker has scored it), a node's budget bar, actions and resolution
failures, the plan page, the evaluation and quality gate appearing without a reload, HTML
in outputs shown as text, and who may steer an escalated run."""
import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

from executions.services import execution_start
from quality.evaluations import execution_evaluate
from tests.pages.conftest import screenshot
from tests.pages.test_derive_requests import watch_errors
from tests.pages.test_evaluations import finished_in_process
from tests.pages.test_executions import escalated, make_execution
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)

XSS = '<script>window.pwned=1</script><b>bold</b><img src=x onerror="window.pwned=2">'


def click_graph_node(page, node_id: str) -> None:
    """Click a node of the cytoscape graph where it is drawn on the canvas, until the page
    says it is selected (its address names it): a resize just before (the graph fits itself
    again) can move the node between where it was read and the click."""
    for _ in range(5):
        box = page.locator("#graph").bounding_box()
        point = page.evaluate("(id) => window.switchyard.executionGraph.getElementById(id).renderedPosition()", node_id)
        page.mouse.click(box["x"] + point["x"], box["y"] + point["y"])
        try:
            page.wait_for_function("(id) => new URL(location.href).searchParams.get('node') === id", arg=node_id, timeout=2_000)
            return
        except PlaywrightTimeoutError:
            continue
    raise AssertionError(f"clicking node {node_id} on the graph did not select it")


@pytest.mark.integration
def test_it_follows_a_run_live_to_success_and_shows_a_nodes_context(page_for, api, demo_with_workers):
    # The run is started before any worker exists, so the page is open while it runs.
    execution = execution_start(workflow=Workflow.objects.get(workflow_id="thesis_reading"), actor=api.author.user)
    page = page_for(api.author.user)
    page.goto(f"/executions/{execution.execution_id}/")
    status = page.locator("#run-status")
    expect(status).to_have_text("running")
    expect(page.locator("#run-progress")).to_contain_text("0 of 3 nodes done")
    expect(page.locator("#run-live")).to_be_visible()
    page.evaluate("window.__samePage = true")  # gone if the page reloads or navigates
    screenshot(page, "execution_running")

    demo_with_workers.start(1)
    expect(status).to_have_text("success", timeout=30_000)
    # The worker scores the run a moment after it ends: the page shows it when it comes.
    evaluation = page.locator("#run-evaluation")
    expect(evaluation.locator("#evaluation-link")).to_have_text("How it was scored →", timeout=30_000)
    expect(evaluation.locator("[data-field=evaluation-result]")).to_have_text("pass")
    expect(evaluation.locator(".scorebar.overall")).to_be_visible()
    assert page.evaluate("window.__samePage") is True
    expect(page.locator("#run-progress")).to_be_hidden()
    expect(page.locator("#run-live")).to_be_hidden()
    expect(page.locator("#run-ended")).not_to_contain_text("still going")
    expect(page.locator(".tl-bar.success")).to_have_count(3)  # the timeline, one bar per node run
    expect(page.locator(".tl-row[data-node='task_vault_001'] .dot.success")).to_have_count(1)

    expect(page.locator("table.node-runs tbody tr")).to_have_count(3)  # the table follows too

    click_graph_node(page, "task_vault_001")
    panel = page.locator("#node-panel")
    expect(panel.locator("h2")).to_contain_text("task_vault_001")
    attempt = panel.locator(".attempt[open]")
    budget = attempt.locator(".budget").first
    expect(budget.locator(".budget-limit")).to_have_text("limit 4,050")
    assert budget.locator(".budget-track:not(.zoomed) > .budget-seg:not(.cut)").count() == 6  # one per input
    assert budget.locator(".budget-seg.cut.batched[data-input='knowledge_atoms_query']").count() == 1
    expect(budget.locator(".budget-legend")).to_contain_text("system_prompt")
    action = attempt.locator("tr[data-action='batch']")
    expect(action).to_contain_text("knowledge_atoms_query")
    expect(action.locator("td.tokens")).to_have_text(re.compile(r"^[\d,]+ → [\d,]+ \(−\d+%\)$"))
    failure = attempt.locator("tr[data-code='REF_NOT_FOUND']")
    expect(failure).to_contain_text("/workspace/papers/supplementary.md")
    expect(failure).to_contain_text("use_default")
    expect(attempt.locator("pre.output")).to_contain_text("integrated_atoms")
    assert "node=task_vault_001" in page.url and page.evaluate("window.__samePage") is True
    screenshot(page, "execution_detail")

    # The node's plan, before any further run: the same bar, and no model called.
    panel.get_by_role("link", name="Plan this node").click()
    page.wait_for_url("**/executions/plan/thesis_reading/task_vault_001/")
    expect(page.locator("#plan-outcome")).to_have_text("ready")
    expect(page.locator(".plan-note")).to_contain_text("No model was called")
    expect(page.locator("#plan-budget .budget-limit")).to_have_text("limit 4,050")
    expect(page.locator("#plan-actions tr[data-action='batch']")).to_contain_text("knowledge_atoms_query")
    expect(page.locator("#plan-failures tr[data-code='REF_NOT_FOUND']")).to_contain_text("use_default")
    expect(page.locator("#plan-facts")).to_contain_text(execution.execution_id)
    screenshot(page, "node_plan")

    # Other values: JSON that is not JSON, and an output for a node the workflow lacks.
    page.get_by_text("Plan with other values").click()
    page.fill("#plan-input", "{nope")
    page.get_by_role("button", name="Plan with these values").click()
    expect(page.locator(".field-error[data-for='input']")).to_contain_text("This is not JSON")
    page.fill("#plan-input", "")
    page.fill("#plan-outputs", '{"no_such_node": {}}')
    page.get_by_role("button", name="Plan with these values").click()
    expect(page.locator(".field-error[data-for='outputs']")).to_contain_text("no_such_node")
    expect(page.locator("#plan-error")).to_contain_text("Could not plan the node")


def test_it_shows_the_evaluation_and_a_failed_gate_as_soon_as_the_run_is_scored(page_for, api, demo, no_tasks):
    execution = finished_in_process("thesis_reading", gate={"accuracy": 0.8, "efficiency": 0.99})
    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    page.goto(f"/executions/{execution.execution_id}/")
    expect(page.locator("#evaluation-waiting")).to_contain_text("Scoring the run…")
    expect(page.locator("#quality-gate")).to_be_hidden()
    page.evaluate("window.__samePage = true")

    evaluation = execution_evaluate(execution_pk=execution.pk)  # what the worker's task does
    gate = page.locator("#quality-gate")
    expect(gate).to_have_text(re.compile(r"^Quality gate failed: efficiency 0\.9\d+ < 0\.99$"))
    expect(gate).to_have_class("gate failed")
    expect(page.locator("#run-evaluation [data-field=evaluation-result]")).to_have_text("fail")
    expect(page.locator("#run-evaluation [data-field=evaluation-action]")).to_have_text("revise")
    expect(page.locator("#evaluation-link")).to_have_attribute("href", f"/evaluations/{evaluation.evaluation_id}/")
    assert page.evaluate("window.__samePage") is True
    # The text the script wrote is the server's, on a reload.
    shown = gate.inner_text()
    page.reload()
    expect(page.locator("#quality-gate")).to_have_text(shown)
    assert errors == []


def test_it_says_a_gate_on_an_accuracy_nobody_measured_failed_as_soon_as_the_run_is_scored(page_for, api, demo,
                                                                                            no_tasks):
    execution = finished_in_process("parallel_analysis", gate={"accuracy": 0.5}, repository="acme")  # no judge
    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    page.goto(f"/executions/{execution.execution_id}/")
    expect(page.locator("#evaluation-waiting")).to_contain_text("Scoring the run…")

    execution_evaluate(execution_pk=execution.pk)
    gate = page.locator("#quality-gate")
    expect(gate).to_have_text("Quality gate failed: accuracy not measured (minimum 0.50)")
    expect(gate).to_have_class("gate failed")
    expect(page.locator("#run-evaluation [data-field=evaluation-result]")).to_have_text("fail")
    page.reload()
    expect(page.locator("#quality-gate")).to_have_text("Quality gate failed: accuracy not measured (minimum 0.50)")
    assert errors == []


def test_it_shows_which_node_ended_a_state_machine_and_the_fields_its_conditions_missed(page_for, api, demo,
                                                                                        no_tasks):
    from tests.executions.conftest import drain
    from tests.workflow_edits import edit_workflow

    def bounded_by_the_input(document):
        document["transitions"][1]["condition"] = "output.verdict == 'revise' and state.rounds < input.max_rounds"
        document["transitions"][2]["condition"] = "output.verdict == 'accept'"

    edit_workflow("release_review", bounded_by_the_input)
    execution = drain(execution_start(workflow=Workflow.objects.get(workflow_id="release_review"),
                                      input={"topic": "v2"}))
    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    page.goto(f"/executions/{execution.execution_id}/?node=review")
    expect(page.locator("#run-ended-reason span")).to_have_text(execution.ended_reason)
    decision = page.locator("#node-panel .attempt[open] .decision")
    expect(decision.locator("p").first).to_have_text("→ end of the run")
    expect(decision.locator(".decision-reason")).to_have_text(
        "node 'review' ended the run: no transition matched (#1, #2 were false); the conditions read fields that "
        "are not there: input.max_rounds")
    expect(decision.locator(".condition-missing")).to_have_text("read as null, not there: input.max_rounds")
    assert errors == []


def test_it_shows_html_in_a_node_output_as_text_and_never_runs_it(page_for, api, demo):
    execution = make_execution("thesis_reading", [
        {"node_id": "task_scholar_001", "status": "success", "output": XSS, "prompt": XSS,
         "resolved_inputs": [{"name": "notes", "source": {"inline": True}, "content": XSS, "resolved_tokens": 9,
                              "passed_tokens": 9, "priority": 1, "data_type": "text", "transfer_mode": "full"}]},
        {"node_id": "task_validator_001", "status": "failed", "output": {"html": XSS}, "error": XSS, "error_code": "X"},
    ], ended_reason=XSS)
    page = page_for(api.viewer.user)
    page.goto(f"/executions/{execution.execution_id}/?node=task_scholar_001")
    output = page.locator("#node-panel .attempt[open] pre.output")
    expect(output).to_have_text(XSS)
    page.locator("#node-panel details.prompt summary").click()
    expect(page.locator("#node-panel details.prompt pre")).to_have_text(XSS)
    expect(page.locator("#run-ended-reason span")).to_have_text(XSS)
    page.click(".tl-row[data-node='task_validator_001'] .tl-label")
    expect(page.locator("#node-panel .attempt[open] .attempt-error")).to_contain_text(XSS)
    expect(page.locator("#node-panel .attempt[open] pre.output")).to_contain_text('"html": "<script>')
    expect(page.locator("table.node-runs .output-preview").first).to_contain_text("<script>window.pwned=1</script>")
    assert page.locator("main b:text-is('bold'), main img[src='x']").count() == 0
    assert page.evaluate("window.pwned") is None


def test_it_gives_authors_and_not_viewers_the_buttons_that_steer_an_escalated_run(page_for, api, demo):
    execution = escalated()
    viewer = page_for(api.viewer.user)
    viewer.goto(f"/executions/{execution.execution_id}/")
    expect(viewer.locator("#escalation")).to_contain_text("Only authors can resume")
    expect(viewer.locator("#escalation")).to_contain_text("Orchestrator")
    expect(viewer.locator("button[data-steer]")).to_have_count(0)

    author = page_for(api.author.user)
    author.goto(f"/executions/{execution.execution_id}/")
    for name in ("Resume with this output", "Retry the node", "Abort the run"):
        expect(author.get_by_role("button", name=name)).to_be_visible()
    author.fill("#resume-output", "{not json")
    author.get_by_role("button", name="Resume with this output").click()
    expect(author.locator(".field-error[data-for='resume-output']")).to_contain_text("This is not JSON")
    # Abort asks to be clicked again within 5 s: the second click follows the first once its
    # label says so (a first click a busy machine lost is made again).
    abort = author.locator("button[data-steer='abort']")
    for _ in range(3):
        abort.click()
        try:
            expect(abort).to_have_text("Click again to abort", timeout=3000)
            break
        except AssertionError:
            continue
    abort.click()
    expect(author.locator("#run-status")).to_have_text("failed")
    expect(author.locator("#run-ended-reason")).to_contain_text("aborted by author-user")
    expect(author.locator("#escalation")).to_be_hidden()
    execution.refresh_from_db()
    assert execution.status == "failed"
