"""A person's first workflow, built from scratch in the editor the way a person does it —
agents found by part of their name, connections with the inputs the editor offers, an input
the run must be given — then run from the run dialog's form on a real worker, until the
node that reads both analyses has both.
"""
import re

import pytest
from playwright.sync_api import expect

from executions.models import Execution
from tests.pages.test_workflow_editor import click_node, watched
from tests.pages.test_workflow_editor_building import new_workflow
from workflows.models import Workflow

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]


def pick_agent(page, text, choice=None):
    """Type part of an agent's name; when several match, pick `choice` from the list."""
    page.fill("#agent-search", text)
    page.press("#agent-search", "Enter")
    if choice:
        page.locator("#agent-search-help [data-agent-choice]", has_text=choice).click()


def read_the_repository(page, node_id):
    """In the node's settings, a named input `repository` reading the run's input."""
    click_node(page, node_id)
    page.wait_for_selector(f"#editor-panel h2:has-text('Node {node_id}')")
    page.click("[data-add=inputs]")
    row = page.locator("[data-mapping=inputs] .mapping-row").last
    row.locator(".mapping-name").fill("repository")
    row.locator(".mapping-value").fill("$.input.repository")


def connect_with_the_offered_input(page, source, target, name):
    page.click("#connect-button")
    click_node(page, source)
    click_node(page, target)
    page.wait_for_selector(f"#editor-panel p.mono:text-is('{source} → {target}')")
    page.keyboard.press("Escape")
    panel = page.locator("#editor-panel")
    panel.locator("[data-field=offer-input-name]").fill(name)
    panel.locator("[data-field=offer-input-add]").click()
    expect(page.locator("#agent-search-help")).to_contain_text(
        f"“{target}” reads the output of “{source}” as its input “{name}”")


def test_a_person_builds_a_dag_from_scratch_and_runs_it_from_the_form_on_a_worker(page_for, api, demo_with_workers):
    page, errors = watched(page_for, api.author.user)
    new_workflow(page, "first_review", "dag")

    # Agents by part of their name; "synthes" matches two, picked from the list.
    pick_agent(page, "code analy")
    page.wait_for_selector("#editor-panel h2:has-text('Node code_analyzer')")
    pick_agent(page, "docs")
    page.wait_for_selector("#editor-panel h2:has-text('Node docs_analyzer')")
    pick_agent(page, "synthes", choice="Report Synthesizer (Report_Synthesizer)")
    page.wait_for_selector("#editor-panel h2:has-text('Node report_synthesizer')")

    # The analyzers read the repository the run is given; the synthesizer reads both analyses.
    read_the_repository(page, "code_analyzer")
    read_the_repository(page, "docs_analyzer")
    connect_with_the_offered_input(page, "code_analyzer", "report_synthesizer", "code")
    connect_with_the_offered_input(page, "docs_analyzer", "report_synthesizer", "docs")
    expect(page.locator("#problems-summary")).to_have_text(re.compile(r"^No problems: the workflow is valid\.$"))

    # The input the run must be given, drafted from the mappings and described.
    page.click("text=← Workflow settings")
    page.click("[data-draft-inputs]")
    page.wait_for_selector("[data-inputs-status]:has-text('Added repository')")
    row = page.locator("#editor-panel [data-inputs] .input-row").first
    row.locator("[data-input-type]").select_option("string")
    row.locator("[data-input-description]").fill("the repository to review, e.g. acme/shop")
    page.click("#save-button")
    page.wait_for_selector("#editor-status:has-text('Saved')")
    page.wait_for_url("**/workflows/first_review/")
    stored = Workflow.objects.get(workflow_id="first_review")
    assert stored.input_schema["required"] == ["repository"]
    assert stored.nodes.get(node_id="report_synthesizer").input_mapping == {
        "code": "$.nodes.code_analyzer", "docs": "$.nodes.docs_analyzer"}

    # The run dialog is a form: left empty, the required input is refused at its field.
    page.click("#run-button")
    repository = page.locator("#run-dialog").get_by_label(re.compile(r"^repository"))
    repository.wait_for()
    page.click("#run-start")
    expect(page.locator("#run-dialog [data-field=repository] .field-problem")).to_have_text(
        "is required by the workflow")
    assert not Execution.objects.exists()
    repository.fill("acme/shop")
    page.click("#run-start")
    page.wait_for_url(re.compile(r"/executions/[^/]+/$"))

    # A real worker runs it; the page follows the run to its end.
    demo_with_workers.start(1)
    expect(page.locator("#run-status")).to_have_text("success", timeout=60_000)
    execution = Execution.objects.get()
    assert execution.input == {"repository": "acme/shop"}
    outputs = {run.node_id: run.output for run in execution.node_runs.filter(status="success")}
    synthesizer = execution.node_runs.get(node_id="report_synthesizer")
    given = {item["name"]: item for item in synthesizer.resolved_inputs}
    assert set(given) >= {"code", "docs"}, synthesizer.resolved_inputs
    for name, node_id in (("code", "code_analyzer"), ("docs", "docs_analyzer")):
        assert given[name]["passed"] and given[name]["content"] == outputs[node_id]
        assert outputs[node_id]["repository"] == "acme/shop"
    assert outputs["report_synthesizer"]["sections"] == ["code", "docs"]  # its report is of both
    assert errors == []
