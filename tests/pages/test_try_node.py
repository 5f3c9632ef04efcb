"""Trying one node from its plan page, in a real browser: the trial is started with the
plan's values and the run chosen, followed while it waits and runs, then shown as a run's
node panel shows a node run. Node runs are run in this process (`drain`)."""
import time

import pytest
from playwright.sync_api import expect

from executions.models import Execution
from tests.executions.conftest import drain
from tests.pages.conftest import screenshot
from tests.pages.test_derive_requests import watch_errors
from tests.pages.test_evaluations import finished_in_process

pytestmark = pytest.mark.django_db(transaction=True)

PLAN = "/executions/plan/thesis_reading/task_vault_001/"


def started_trial(timeout: float = 15) -> Execution:
    deadline = time.monotonic() + timeout
    while (trial := Execution.objects.filter(trial=True).first()) is None:
        assert time.monotonic() < deadline, "no trial was started"
        time.sleep(0.1)
    return trial


def test_an_author_tries_a_node_and_sees_its_record_when_it_has_run(page_for, api, demo, no_tasks):
    older = finished_in_process("thesis_reading")
    source = finished_in_process("thesis_reading")
    page = page_for(api.author.user)
    errors = watch_errors(page)
    page.goto(PLAN)
    expect(page.locator("#plan-outcome")).to_have_text("ready")
    expect(page.locator("#plan-facts")).to_contain_text(source.execution_id)
    choices = page.locator("#try-source option")
    expect(choices).to_have_count(3)  # both runs, and none
    expect(page.locator("#try-source")).to_have_value(source.execution_id)  # the plan's run
    assert older.execution_id in choices.all_inner_texts()[1]
    expect(page.locator("#try-version option")).to_have_text(["current: the agent's latest", "1.0.0 (the latest)"])

    page.get_by_role("button", name="Try this node").click()
    progress = page.locator("#try-progress")
    expect(progress).to_contain_text("waiting for a worker")  # nothing runs it until it is drained
    expect(progress.locator(".spinner")).to_be_visible()
    expect(page.get_by_role("button", name="Try this node")).to_be_disabled()
    trial = started_trial()
    assert trial.rerun["source"] == source.execution_id and trial.rerun["from_node"] == "task_vault_001"
    expect(progress.locator("a").first).to_have_attribute("href", f"/executions/{trial.execution_id}/")

    drain(trial)
    expect(progress.locator(".badge")).to_have_text("success")
    expect(progress.locator(".spinner")).to_have_count(0)
    result = page.locator("#try-result")
    expect(result.locator(".budget .budget-limit")).to_have_text("limit 4,050")
    expect(result.locator("tr[data-action='batch']")).to_contain_text("knowledge_atoms_query")
    expect(result.locator("tr[data-code='REF_NOT_FOUND']")).to_contain_text("use_default")
    expect(result.locator("pre.output")).to_contain_text("integrated_atoms")
    expect(result.locator("details.prompt")).not_to_have_attribute("open", "")
    run = trial.node_runs.get(node_id="task_vault_001")
    expect(result.locator(".facts")).to_contain_text(f"{run.tokens_in:,} / {run.tokens_out:,}")
    expect(result.locator(".facts")).to_contain_text("builtin")
    expect(page.get_by_role("button", name="Try this node")).to_be_enabled()
    screenshot(page, "try-node")
    assert Execution.objects.filter(trial=False).count() == 2  # a trial is not a run of the workflow
    assert errors == []


def test_a_trial_the_server_refuses_is_shown_at_the_field_it_names(page_for, api, demo, no_tasks):
    finished_in_process("thesis_reading")
    page = page_for(api.author.user)
    page.goto(PLAN)
    expect(page.locator("#plan-outcome")).to_have_text("ready")
    page.locator("#plan-overrides summary").click()
    page.fill("#plan-outputs", '{"task_vault_001": {"integrated_atoms": []}}')  # the output the trial would make
    page.get_by_role("button", name="Try this node").click()
    expect(page.locator(".field-error[data-for='outputs']")).to_contain_text("is the node tried")
    expect(page.locator("#plan-outputs")).to_have_class("invalid")
    expect(page.locator("#try-error")).to_contain_text("Could not try the node")
    expect(page.locator("#try-progress")).to_be_hidden()
    assert not Execution.objects.filter(trial=True).exists()


def test_the_try_section_has_its_own_button_and_the_nav_agrees_with_the_breadcrumb(page_for, api, demo, no_tasks):
    finished_in_process("thesis_reading")
    page = page_for(api.author.user)
    page.goto(PLAN)
    expect(page.locator("#plan-outcome")).to_have_text("ready")
    expect(page.locator(".nav a[aria-current='page']")).to_have_text("Workflows")
    expect(page.locator(".crumbs a").first).to_have_text("Workflows")

    page.get_by_role("link", name="Try this node").click()  # the link at the top leads to the section
    section = page.locator("#try-card")
    section.get_by_role("button", name="Try this node").click()
    expect(page.locator("#try-progress")).to_contain_text("waiting for a worker")
    assert started_trial().rerun["from_node"] == "task_vault_001"
