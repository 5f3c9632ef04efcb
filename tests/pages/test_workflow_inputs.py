"""A workflow's inputs on its page: the run dialog asks for each declared input (a field per
input, the required ones marked, errors at the field), and the editor lets an author
declare them, drafting them from the `$.input` paths the nodes read.

Browser tests (Debian's chromium) walk the steps a person takes; runs are started through
the API and not run (no worker: `no_tasks`).
"""
import re

import pytest

from demo.documents import PARALLEL_ANALYSIS
from executions.models import Execution
from tests.pages.test_workflow_editor import watched
from tests.replay import load_demo
from workflows.models import Workflow
from workflows.services import workflow_import_document

pytestmark = pytest.mark.django_db(transaction=True)

INPUTS = {"type": "object", "required": ["repository"], "properties": {
    "repository": {"type": "string", "maxLength": 200, "description": "the repository to analyse"},
    "depth": {"type": "integer", "minimum": 1, "default": 2, "description": "how deep to look"},
    "strict": {"type": "boolean", "description": "fail on any warning"},
    "focus": {"enum": ["code", "docs", "tests"]},
    "paths": {"type": "array", "items": {"type": "string"}, "description": "only these folders"},
}}


@pytest.fixture
def demo(settings, tmp_path, no_tasks):
    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)


def test_the_run_dialog_asks_for_each_declared_input_and_shows_what_is_wrong_at_its_field(api, page_for, demo):
    workflow_import_document({**PARALLEL_ANALYSIS, "workflow_id": "analysis", "input_schema": INPUTS})
    page, errors = watched(page_for, api.author.user)
    page.goto("/workflows/analysis/")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    page.click("#run-button")

    # A labelled field per input, of its type, its description as help, its default filled in.
    dialog = page.locator("#run-dialog")
    repository = dialog.get_by_label(re.compile(r"^repository"))
    repository.wait_for()
    assert repository.evaluate("e => [e.tagName, e.type]") == ["INPUT", "text"]
    assert dialog.locator("[data-field=repository] label").inner_text() == "repository *"
    assert "the repository to analyse" in dialog.locator("[data-field=repository] .help").inner_text()
    depth = dialog.get_by_label(re.compile(r"^depth"))
    assert depth.evaluate("e => e.type") == "number" and depth.input_value() == "2"
    assert "(optional)" in dialog.locator("[data-field=depth] label").inner_text()
    assert dialog.get_by_label(re.compile(r"^strict")).evaluate("e => e.type") == "checkbox"
    assert dialog.get_by_label(re.compile(r"^focus")).evaluate("e => e.tagName") == "SELECT"
    assert dialog.get_by_label(re.compile(r"^paths")).evaluate("e => e.tagName") == "TEXTAREA"

    # Left empty, the required input is marked at its field before anything is sent.
    page.click("#run-start")
    problem = dialog.locator("[data-field=repository] .field-problem")
    problem.wait_for()
    assert problem.inner_text() == "is required by the workflow"
    assert "invalid" in repository.get_attribute("class")
    assert "input.repository" in page.locator("#run-error").inner_text()
    assert not Execution.objects.exists()

    # What only the server checks (depth's minimum): its refusal, naming input.depth, at that field.
    repository.fill("acme/shop")
    depth.fill("0")
    dialog.get_by_label(re.compile(r"^paths")).fill('["src", "docs"]')
    page.click("#run-start")
    depth_problem = dialog.locator("[data-field=depth] .field-problem")
    depth_problem.wait_for()
    assert depth_problem.inner_text() == "0 is less than the minimum of 1"
    assert problem.inner_text() == "" and "invalid" not in repository.get_attribute("class")
    assert not Execution.objects.exists()

    depth.fill("3")
    dialog.get_by_label(re.compile(r"^strict")).check()
    dialog.get_by_label(re.compile(r"^focus")).select_option("docs")
    page.click("#run-start")
    page.wait_for_url(re.compile(r"/executions/[^/]+/$"))
    (execution,) = Execution.objects.all()
    assert execution.input == {"repository": "acme/shop", "depth": 3, "strict": True, "focus": "docs",
                               "paths": ["src", "docs"]}
    assert errors == []


def test_an_author_declares_the_inputs_drafted_from_the_mappings_and_a_run_asks_for_them(api, page_for, demo):
    undeclared = {key: value for key, value in PARALLEL_ANALYSIS.items() if key != "input_schema"}
    workflow_import_document({**undeclared, "workflow_id": "analysis"})
    page, errors = watched(page_for, api.author.user)
    page.goto("/workflows/analysis/")
    page.wait_for_selector("#problems-summary:has-text('No problems')")

    # Nothing declared: the run dialog takes JSON, and names what the nodes read.
    page.click("#run-button")
    hint = page.locator("#run-dialog [data-input-hint]")
    hint.wait_for()
    assert "$.input.repository" in hint.inner_text()
    page.click("#run-cancel")

    inputs = page.locator("#editor-panel [data-inputs]")
    assert "None declared" in inputs.inner_text()
    page.click("[data-draft-inputs]")
    page.wait_for_selector("[data-inputs-status]:has-text('Added repository')")
    row = inputs.locator(".input-row").first
    assert row.locator("[data-input-name]").input_value() == "repository"
    assert row.locator("[data-input-required]").is_checked()
    assert row.locator("[data-input-description]").input_value() == "read by task_a, task_b, task_c"
    row.locator("[data-input-type]").select_option("string")
    row.locator("[data-input-description]").fill("the repository to analyse")

    # One more, by hand: a default that is not of its type is marked at the field.
    page.click("[data-add=input-row]")
    depth = inputs.locator(".input-row").nth(1)
    depth.locator("[data-input-name]").fill("depth")
    depth.locator("[data-input-type]").select_option("integer")
    depth.locator("[data-input-required]").uncheck()
    depth.locator("[data-input-default]").fill("2.5")
    page.wait_for_selector(".input-row .field-problem:has-text(\"'2.5' is not a whole number\")")
    page.click("#save-button")
    page.wait_for_selector("#editor-banner:has-text('Not saved')")
    assert Workflow.objects.get(workflow_id="analysis").input_schema is None
    depth.locator("[data-input-default]").fill("2")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    page.click("#save-button")
    page.wait_for_selector("#editor-status:has-text('Saved')")
    assert Workflow.objects.get(workflow_id="analysis").input_schema == {
        "type": "object", "required": ["repository"], "properties": {
            "repository": {"type": "string", "description": "the repository to analyse"},
            "depth": {"type": "integer", "default": 2}}}

    # Drafting again adds nothing: every input the nodes read is declared.
    page.click("[data-draft-inputs]")
    page.wait_for_selector("[data-inputs-status]:has-text('declared already')")
    assert inputs.locator(".input-row").count() == 2

    # The run dialog now asks for them.
    page.click("#run-button")
    page.locator("#run-dialog").get_by_label(re.compile(r"^repository")).wait_for()
    assert page.locator("#run-dialog").get_by_label(re.compile(r"^depth")).input_value() == "2"
    page.locator("#run-dialog").get_by_label(re.compile(r"^repository")).fill("acme/shop")
    page.click("#run-start")
    page.wait_for_url(re.compile(r"/executions/[^/]+/$"))
    assert Execution.objects.get().input == {"repository": "acme/shop", "depth": 2}
    assert errors == []
