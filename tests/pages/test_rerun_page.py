"""Re-running a run from one of its nodes, on the run's page in a real browser: the form says
what is reused and what runs again, sends only what was changed, shows the server's errors at
the field they name, and leads to the new run's page, which marks what it copied and links
each copy to the node run it came from. Node runs are run in this process (`drain`)."""
import json

import pytest
from playwright.sync_api import expect

from agents.documents import agent_document
from agents.models import Agent
from agents.services import agent_import_document
from executions.models import Execution
from executions.services import execution_start, gate_decide, node_run_execute
from tests.executions.conftest import drain
from tests.pages.conftest import screenshot
from tests.pages.test_derive_requests import watch_errors
from tests.pages.test_evaluations import finished_in_process
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)

EDITED = {"validation_results": [{"atom_id": "atom_001", "verdict": "rejected by a person"}]}


def open_node(page, node_id: str) -> None:
    page.click(f".tl-row[data-node='{node_id}'] .tl-label")
    expect(page.locator("#node-panel h2")).to_contain_text(node_id)


def new_version_of(agent_id: str) -> str:
    """Give the agent a new version (its instructions changed) and return its name."""
    document = agent_document(Agent.objects.get(agent_id=agent_id))
    agent, _ = agent_import_document({**document, "prompt_config": {**document["prompt_config"],
                                                                    "task_context": "Cite the atom ids."}}, actor="test")
    return agent.version


def test_an_author_reruns_from_a_node_with_an_edited_output_and_a_picked_version(page_for, api, demo, no_tasks):
    source = finished_in_process("thesis_reading")
    ran = source.node_runs.get(node_id="task_vault_001").agent_version.version
    picked = new_version_of("Knowledge_Vault")
    originals = {run.node_id: run.pk for run in source.node_runs.all()}
    page = page_for(api.author.user)
    errors = watch_errors(page)
    page.goto(f"/executions/{source.execution_id}/")
    expect(page.locator("#run-status")).to_have_text("success")
    open_node(page, "task_vault_001")
    page.get_by_role("button", name="Re-run from here").click()

    form = page.locator("#rerun-form")
    expect(form.locator("h2")).to_have_text("Re-run from task_vault_001")
    expect(form.locator("h3").first).to_have_text("Outputs reused (2)")
    assert form.locator("textarea[data-output]").evaluate_all("(boxes) => boxes.map((box) => box.dataset.output)") == [
        "task_scholar_001", "task_validator_001"]
    validator = form.locator("textarea[data-output='task_validator_001']")
    stored = source.node_runs.get(node_id="task_validator_001").output
    assert json.loads(validator.input_value()) == stored
    version = form.locator("select[data-version='task_vault_001']")
    expect(version.locator("option").first).to_have_text(f"as in this run ({ran})")
    expect(form.locator("select[data-version]")).to_have_count(1)  # only the vault runs again
    assert form.evaluate("(form) => [...form.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE).length") == 0
    validator.fill(json.dumps(EDITED, indent=2))
    version.select_option(picked)
    screenshot(page, "rerun-form")

    form.get_by_role("button", name="Re-run from task_vault_001").click()
    page.wait_for_url(lambda url: "/executions/exec_" in url and source.execution_id not in url)
    rerun = Execution.objects.get(rerun_of=source)
    assert page.url.endswith(f"/executions/{rerun.execution_id}/")
    assert rerun.rerun["edited"] == ["task_validator_001"] and rerun.rerun["pinned"] == {"task_vault_001": picked}
    assert rerun.node_runs.get(node_id="task_scholar_001").kind == "reused"  # unchanged: not sent as an edit

    # The copies are marked as such, in the timeline, the table and the panel, which links
    # each to the node run it copies.
    expect(page.locator(".tl-row[data-node='task_scholar_001'] .tl-bar.kind-reused")).to_have_text("round 1 · attempt 1 · reused")
    expect(page.locator(".tl-row[data-node='task_validator_001'] .tl-bar.kind-edited")).to_have_count(1)
    expect(page.locator("table.node-runs .kind.reused")).to_have_count(1)
    expect(page.locator("table.node-runs .kind.edited")).to_have_count(1)
    # In the graph too: a copy is drawn apart from a node that ran, and the legend says how.
    page.wait_for_function("() => window.switchyard.executionGraph.getElementById('task_scholar_001').data('copied') === 'reused'")
    copied = page.evaluate("""() => Object.fromEntries(['task_scholar_001', 'task_validator_001', 'task_vault_001'].map(
        (id) => [id, window.switchyard.executionGraph.getElementById(id).style('border-style')]))""")
    assert (copied["task_scholar_001"], copied["task_validator_001"]) == ("dotted", "dotted")
    assert copied["task_vault_001"] != "dotted"  # it runs again
    expect(page.locator(".status-legend")).to_contain_text("copied from the run re-run (not run here)")
    open_node(page, "task_scholar_001")
    origin = page.locator("#node-panel .attempt[open] .copy-origin")
    expect(origin).to_contain_text("Not run in this execution: reused from")
    expect(origin.locator("a")).to_have_attribute(
        "href", f"/executions/{source.execution_id}/?node=task_scholar_001&run={originals['task_scholar_001']}#node-panel")
    open_node(page, "task_validator_001")
    origin = page.locator("#node-panel .attempt[open] .copy-origin.edited")
    expect(origin).to_contain_text("edited by a person; the original:")
    expect(origin.locator("a")).to_have_attribute(
        "href", f"/executions/{source.execution_id}/?node=task_validator_001&run={originals['task_validator_001']}#node-panel")
    expect(page.locator("#node-panel .attempt[open] pre.output")).to_contain_text("rejected by a person")

    # The node it was re-run from runs (here, in this process), with the version picked; the page follows.
    drain(rerun)
    expect(page.locator("#run-status")).to_have_text("success")
    vault = rerun.node_runs.get(node_id="task_vault_001")
    assert vault.kind == "first" and vault.agent_version.version == picked and "Cite the atom ids." in vault.prompt
    expect(page.locator(".tl-row[data-node='task_vault_001'] .tl-bar.success.kind-first")).to_have_count(1)

    # The link of a copy opens the run it came from, on that node run.
    page.locator("#node-panel .copy-origin a").click()
    page.wait_for_url(f"**/executions/{source.execution_id}/?node=task_validator_001*")
    expect(page.locator(f"#node-panel #run-{originals['task_validator_001']}[open]")).to_be_visible()
    assert errors == []


def test_a_bad_edit_is_shown_at_its_output_and_starts_nothing(page_for, api, demo, no_tasks):
    source = finished_in_process("thesis_reading")
    page = page_for(api.author.user)
    page.goto(f"/executions/{source.execution_id}/?node=task_vault_001")
    page.get_by_role("button", name="Re-run from here").click()
    form = page.locator("#rerun-form")
    validator = form.locator("textarea[data-output='task_validator_001']")
    submit = form.get_by_role("button", name="Re-run from task_vault_001")
    expect(submit).to_be_enabled()  # once the agents' versions are read

    validator.fill("{not json")
    submit.click()
    error = form.locator(".field-error[data-for='outputs.task_validator_001']")
    expect(error).to_contain_text("The output of task_validator_001 is not JSON")
    expect(validator).to_have_class("invalid")

    validator.fill('{"wrong": 1}')  # JSON, but not what the vault's contract with the validator asks
    submit.click()
    expect(error).to_contain_text("outputs.task_validator_001.validation_results: is required (the contract")
    expect(validator).to_have_class("invalid")
    expect(form.locator(".rerun-error")).to_be_hidden()
    assert Execution.objects.count() == 1 and page.url.endswith("?node=task_vault_001")


def test_a_viewer_sees_no_rerun_and_an_author_none_while_the_run_goes_on(page_for, api, demo, no_tasks, monkeypatch):
    source = finished_in_process("thesis_reading")
    viewer = page_for(api.viewer.user)
    viewer.goto(f"/executions/{source.execution_id}/?node=task_vault_001")
    expect(viewer.locator("#node-panel .attempt[open]")).to_be_visible()
    expect(viewer.get_by_role("link", name="Plan this node")).to_be_visible()
    expect(viewer.locator("button[data-rerun-from]")).to_have_count(0)
    expect(viewer.locator("#rerun-form")).to_have_count(0)

    running = execution_start(workflow=Workflow.objects.get(workflow_id="thesis_reading"))
    author = page_for(api.author.user)
    author.goto(f"/executions/{running.execution_id}/?node=task_scholar_001")
    expect(author.locator("#node-panel h2")).to_contain_text("task_scholar_001")
    expect(author.locator("#run-status")).to_have_text("running")
    expect(author.locator("button[data-rerun-from]")).to_have_count(0)
    # The node's own run ends first (alone: the chain is not continued inline), and the page
    # shows it while the run goes on; the button comes when the run ends, though nothing of
    # this node changes then.
    monkeypatch.setattr("executions.services.node_run.INLINE_SECONDS", 0)
    node_run_execute(node_run_id=running.node_runs.get(node_id="task_scholar_001").pk, worker="test")
    expect(author.locator("#node-panel .trail-chip.success")).to_have_count(1)
    expect(author.locator("#run-status")).to_have_text("running")
    drain(running)
    expect(author.locator("#run-status")).to_have_text("success")
    expect(author.locator("button[data-rerun-from]")).to_have_count(1)


def test_a_state_machine_is_rerun_from_a_step_of_its_recorded_path(page_for, api, demo, no_tasks):
    # draft → review → draft → review → approve (an approver's gate) → publish → compliance, which escalates.
    source = drain(execution_start(workflow=Workflow.objects.get(workflow_id="release_review"), input={"topic": "2.0"}))
    assert source.status == "waiting"
    gate_decide(execution=source, node_run_id=source.node_runs.get(node_id="approve").pk, decision="approve",
                actor=api.approver.user)
    source = drain(source)
    assert source.status == "escalated"
    page = page_for(api.author.user)
    page.goto(f"/executions/{source.execution_id}/?node=review")
    page.get_by_role("button", name="Re-run from here").click()
    form = page.locator("#rerun-form")
    step = form.locator("#rerun-step")
    expect(step.locator("option")).to_have_text([
        "step 2 of 7: draft → review", "step 4 of 7: draft → review → draft → review"])
    expect(step).to_have_value("4")  # as the server: the node's last step
    expect(form.locator("h3").first).to_have_text("Outputs reused (2)")
    expect(form.locator(".rerun-output[data-node='draft']")).to_contain_text("steps 1, 3: an edit replaces the output of each")
    # Any node may run after the step; the gate's agent is never called, so it has no version to pick.
    expect(form.locator("select[data-version]")).to_have_count(4)
    expect(form.locator("select[data-version='approve']")).to_have_count(0)
    typed = '{"draft": "typed before choosing the step"}'
    form.locator("textarea[data-output='draft']").fill(typed)

    step.select_option("2")
    expect(form.locator("h3").first).to_have_text("Outputs reused (1)")
    expect(form.locator("textarea[data-output]")).to_have_count(1)
    expect(form.locator("textarea[data-output='draft']")).to_have_value(typed)  # kept across the change
    form.locator("textarea[data-output='draft']").fill(json.dumps(source.node_runs.filter(node_id="draft")
                                                                  .order_by("sequence").first().output))
    form.get_by_role("button", name="Re-run from review").click()
    page.wait_for_url(lambda url: "/executions/exec_" in url and source.execution_id not in url)
    rerun = Execution.objects.get(rerun_of=source)
    assert (rerun.rerun["step"], rerun.rerun["reused"], rerun.rerun["edited"]) == (2, ["draft"], [])
    expect(page.locator(".tl-row[data-node='draft'] .tl-bar.kind-reused")).to_have_count(1)


def test_a_large_reruns_page_says_how_far_its_copy_has_got_until_the_run_starts(page_for, api, demo, no_tasks,
                                                                               settings):
    from unittest import mock

    from executions.services import execution_rerun, rerun_copy
    from executions.services import rerun as rerun_module

    settings.RERUN_COPY_INLINE_MAX, settings.RERUN_COPY_CHUNK = 0, 1  # every copy on a worker, one at a time
    source = finished_in_process("thesis_reading")
    with mock.patch("executions.tasks.rerun_copy.apply_async"):
        rerun = execution_rerun(source=source, from_node="task_vault_001")
    real, calls = rerun_module.copy_rows, []

    def killed_in_the_second_chunk(*args, **kwargs):
        calls.append(1)
        copied = real(*args, **kwargs)
        if len(calls) == 2:
            raise SystemExit("the worker was killed")
        return copied

    with mock.patch.object(rerun_module, "copy_rows", killed_in_the_second_chunk), pytest.raises(SystemExit):
        rerun_copy(execution_pk=rerun.pk)

    page = page_for(api.viewer.user)
    page.goto(f"/executions/{rerun.execution_id}/")
    expect(page.locator("#run-status")).to_have_text("pending")
    expect(page.locator("#run-copying")).to_have_text(
        "copying reused node runs: 1 of 2; the run starts once they all are")

    rerun_copy(execution_pk=rerun.pk)  # sent again: the last copy, then the run starts
    expect(page.locator("#run-status")).to_have_text("running", timeout=15_000)  # the page follows the run
    expect(page.locator("#run-copying")).to_be_hidden()
