"""Sub-workflow nodes on the pages: the graphs draw a node that runs another workflow as a
folder with that workflow's id under the node's; a run's page links the node's run to its
child run and the child's page links back to the node of its parent; the editor adds a
stored workflow as a node, keeps it through save and reload, and shows a cycle at the node.

The demo's repository_review runs parallel_analysis as its `analysis` node. Its node runs
run in this process (`settle_all`: every due node run, and every child's end, as workers
and the child_ended task would), so that the test says when the run goes on."""
import json
import re
from unittest import mock

import pytest
from django.db.models import F
from playwright.sync_api import expect

from executions.models import Execution, NodeRun
from executions.page_selectors import cost_text, workflow_graph
from executions.services import execution_start
from tests.executions.test_subworkflows import settle_all
from tests.pages.conftest import screenshot, signed_in
from tests.pages.test_workflow_editor import click_node, node_classes, node_key
from workflows.models import Workflow

VIEWPORT = {"width": 1280, "height": 900}
CHILD_COST = 48_150_000  # units of 10⁻¹² USD: $0.00004815


def watch_errors(page) -> list[str]:
    """The page's script errors and console errors, but the browser's note of a request the
    server refused (a refused save is one the test makes)."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error"
            and not message.text.startswith("Failed to load resource") else None)
    return errors


@pytest.fixture
def child_ends_here(no_tasks):
    """Nothing sent to a worker, the child's end neither: `settle_all` settles it."""
    with mock.patch("executions.tasks.child_ended.apply_async"):
        yield


def reviewed(user) -> tuple[Execution, Execution]:
    """A repository review run to its end in this process, and the child run of its analysis."""
    parent = execution_start(workflow=Workflow.objects.get(workflow_id="repository_review"),
                             input={"repository": "switchyard"}, actor=user)
    settle_all()
    parent.refresh_from_db()
    assert parent.status == "success", parent.ended_reason
    child = Execution.objects.get(parent_node_run__execution=parent)
    # The demo's models are free: priced as a child on a priced model would have rolled up.
    Execution.objects.filter(pk=child.pk).update(cost=CHILD_COST)
    NodeRun.objects.filter(pk=child.parent_node_run_id).update(cost=CHILD_COST)
    Execution.objects.filter(pk=parent.pk).update(cost=F("cost") + CHILD_COST)
    child.refresh_from_db()
    return parent, child


# -- server side ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_graph_gives_each_node_its_kinds_shape_and_a_sub_workflow_node_its_workflow(demo):
    review = Workflow.objects.get(workflow_id="repository_review")
    for graph in (workflow_graph(review), workflow_graph(review, review.versions.get(number=1).pk)):
        nodes = {node["id"]: node for node in graph["nodes"]}
        assert (nodes["analysis"]["shape"], nodes["analysis"]["subworkflow"]) == (
            "workflow", {"workflow_ref": "parallel_analysis", "version": None})
        assert (nodes["summary"]["shape"], nodes["summary"]["subworkflow"]) == ("agent", None)
    release = {node["id"]: node for node in workflow_graph(Workflow.objects.get(workflow_id="release_review"))["nodes"]}
    assert release["approve"]["shape"] == "gate" and release["approve"]["gate"] is True
    assert release["draft"]["shape"] == "agent"
    # A pinned version is named.
    document = dict(review.versions.get(number=1).document)
    document["nodes"] = [{**document["nodes"][0], "subworkflow": {"workflow_ref": "parallel_analysis", "version": 1}},
                         document["nodes"][1]]
    from workflows.services import workflow_import_document

    pinned = workflow_import_document(document)[0]
    assert workflow_graph(pinned)["nodes"][0]["subworkflow"] == {"workflow_ref": "parallel_analysis", "version": 1}


@pytest.mark.django_db(transaction=True)
def test_a_child_runs_page_names_its_parent_and_the_parents_table_shows_the_rolled_up_cost(api, demo, child_ends_here):
    parent, child = reviewed(api.author.user)
    client = signed_in(api.viewer.user)
    child_page = client.get(f"/executions/{child.execution_id}/")
    html = child_page.content.decode()
    node_run = parent.node_runs.get(node_id="analysis")
    link = f'/executions/{parent.execution_id}/?node=analysis&amp;run={node_run.pk}#node-panel'
    assert f'href="{link}"' in html and 'id="part-of-run"' in html
    assert child_page.context["has_subworkflows"] is False
    parent_page = client.get(f"/executions/{parent.execution_id}/")
    assert parent_page.context["has_subworkflows"] is True
    assert 'id="part-of-run"' not in parent_page.content.decode()
    assert "runs a workflow (a child run)" in parent_page.content.decode()
    # The analysis node called no model, but its child's cost is rolled up into it: shown.
    assert node_run.cost == child.cost > 0
    assert cost_text(node_run.cost) in parent_page.content.decode()


# -- in a browser ---------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_run_page_links_a_sub_workflow_nodes_run_to_its_child_and_back(api, page_for, demo, child_ends_here):
    parent, child = reviewed(api.author.user)
    node_run = parent.node_runs.get(node_id="analysis")
    page = page_for(api.author.user)
    page.set_viewport_size(VIEWPORT)
    errors = watch_errors(page)
    page.goto(f"/executions/{parent.execution_id}/")
    expect(page.locator("#run-status")).to_have_text("success")

    # The graph: the analysis node is a folder, the workflow it runs under its id; the legend says so.
    page.wait_for_function("() => window.switchyard.executionGraph !== undefined")
    drawn = page.evaluate("""() => { const node = window.switchyard.executionGraph.getElementById('analysis');
        return {shape: node.style('shape'), label: node.data('label')}; }""")
    assert drawn["shape"] == "polygon"
    assert drawn["label"].split("\n")[:3] == ["analysis", "runs parallel_analysis", "Orchestrator"]
    assert page.evaluate("window.switchyard.executionGraph.getElementById('summary').style('shape')") == "round-rectangle"
    expect(page.locator(".status-legend")).to_contain_text("runs a workflow (a child run)")

    # The node's panel: its tag, and the child run with its workflow, status and cost.
    page.locator(f"table.node-runs a[data-run='{node_run.pk}']").click()
    panel = page.locator("#node-panel")
    expect(panel.locator("h2")).to_contain_text("analysis")
    expect(panel.locator(".workflow-tag")).to_have_text("runs parallel_analysis (its latest version)")
    box = panel.locator(f".child-run[data-child-run='{child.execution_id}']")
    expect(box.locator(".child-run-link")).to_have_text(child.execution_id)
    expect(box.locator(".child-run-workflow")).to_have_text("parallel_analysis")
    expect(box.locator(".child-run-status")).to_have_text("success")
    expect(box.locator(".child-run-cost")).to_have_text(cost_text(child.cost))
    output = json.loads(panel.locator(f"details[data-run='{node_run.pk}'] pre.output").inner_text())
    assert set(output) == {"state", "nodes"} and "task_d" in output["nodes"]
    screenshot(page, "execution_subworkflow_node")

    # Re-run from it: its agent is never called, so only the summary's version is offered.
    panel.get_by_role("button", name="Re-run from here").click()
    form = page.locator("#rerun-form")
    expect(form.locator("h2")).to_have_text("Re-run from analysis")
    expect(form.locator("select[data-version='summary']")).to_have_count(1)
    expect(form.locator("select[data-version]")).to_have_count(1)

    # Followed: the child's page says what it is part of, and links back to that node's panel.
    box.locator(".child-run-link").click()
    page.wait_for_url(f"**/executions/{child.execution_id}/")
    note = page.locator("#part-of-run")
    expect(note).to_contain_text(f"Part of run {parent.execution_id}, node analysis")
    note.locator("a").click()
    page.wait_for_url(re.compile(rf"/executions/{parent.execution_id}/\?node=analysis"))
    expect(page.locator("#node-panel h2")).to_contain_text("analysis")
    expect(page.locator("#node-panel .child-run-link")).to_have_text(child.execution_id)
    assert errors == []


def editor_ready(page, workflow_id):
    page.goto(f"/workflows/{workflow_id}/")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    page.wait_for_function("() => !document.getElementById('workflow-pick').disabled")
    page.wait_for_function("() => window.workflowEditor.ui.agents.length > 0")


def node_drawn(page, node_id):
    return page.evaluate("""id => { const editor = window.workflowEditor;
        const element = editor.cy.getElementById(editor.state.nodes.find(n => n.id === id).key);
        return {shape: element.style('shape'), label: element.data('label'), classes: element.classes()}; }""", node_id)


@pytest.mark.django_db(transaction=True)
def test_an_author_adds_a_workflow_as_a_node_saves_it_and_sees_it_drawn_as_one(api, page_for, demo):
    page = page_for(api.author.user)
    page.set_viewport_size(VIEWPORT)
    errors = watch_errors(page)
    editor_ready(page, "thesis_reading")
    offered = page.eval_on_selector_all("#workflow-pick option", "options => options.map(o => o.value)")
    assert "thesis_reading" not in offered and {"parallel_analysis", "repository_review"} <= set(offered)

    page.select_option("#workflow-pick", "parallel_analysis")
    expect(page.locator("#workflow-version-pick option[value='1']")).to_have_count(1)
    page.select_option("#workflow-version-pick", "1")
    page.click("#add-workflow-node-button")
    page.wait_for_selector("h2:has-text('Node parallel_analysis')")
    agent = page.evaluate("window.workflowEditor.ui.agents.find(a => a.status === 'active').agent_id")
    assert page.locator("[data-field=agent_ref]").input_value() == agent  # on record; editable like any node's
    assert page.locator("[data-field=subworkflow-ref]").input_value() == "parallel_analysis"
    assert page.locator("[data-field=subworkflow-version]").input_value() == "1"
    drawn = node_drawn(page, "parallel_analysis")
    assert "workflow" in drawn["classes"] and drawn["shape"] == "polygon"
    assert drawn["label"].split("\n")[:2] == ["parallel_analysis", "runs parallel_analysis v1"]
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    page.click("#save-button")
    page.wait_for_selector("#editor-status:has-text('Saved')")
    stored = Workflow.objects.get(workflow_id="thesis_reading").nodes.get(node_id="parallel_analysis")
    assert stored.subworkflow == {"workflow_ref": "parallel_analysis", "version": 1}
    assert stored.agent.agent_id == agent

    # Read back after a reload: drawn as a folder, its settings as saved; changed to the latest.
    page.reload()
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    drawn = node_drawn(page, "parallel_analysis")
    assert "workflow" in drawn["classes"] and drawn["shape"] == "polygon"
    assert "workflow" not in node_classes(page, "task_scholar_001")
    screenshot(page, "workflow_editor_subworkflow_node")
    # The versions compared: the node added in version 2 is drawn as a folder there too.
    page.click("#diff-button")
    expect(page.locator("#diff-heading")).to_have_text("Version 1 → version 2")
    compared = page.evaluate("""() => { const node = window.workflowVersions.cy.getElementById('n:parallel_analysis');
        return {shape: node.style('shape'), classes: node.classes(), label: node.data('label')}; }""")
    assert compared["shape"] == "polygon" and {"added", "workflow"} <= set(compared["classes"])
    assert compared["label"].split("\n")[:2] == ["parallel_analysis", "runs parallel_analysis v1"]
    page.locator("#cy").scroll_into_view_if_needed()
    click_node(page, "parallel_analysis")
    page.wait_for_selector("h2:has-text('Node parallel_analysis')")
    expect(page.locator("[data-field=subworkflow-version]")).to_have_value("1")
    page.select_option("[data-field=subworkflow-version]", "")
    assert node_drawn(page, "parallel_analysis")["label"].split("\n")[1] == "runs parallel_analysis"
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    page.click("#save-button")
    page.wait_for_selector("#editor-status:has-text('Saved')")
    assert Workflow.objects.get(workflow_id="thesis_reading").nodes.get(
        node_id="parallel_analysis").subworkflow == {"workflow_ref": "parallel_analysis"}

    # Made a plain node: drawn as one, saved without a workflow to run.
    page.click("[data-field=subworkflow-remove]")
    assert "workflow" not in node_drawn(page, "parallel_analysis")["classes"]
    assert page.locator("[data-field=subworkflow-ref]").count() == 0
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    page.click("#save-button")
    page.wait_for_selector("#editor-status:has-text('Saved')")
    assert Workflow.objects.get(workflow_id="thesis_reading").nodes.get(node_id="parallel_analysis").subworkflow is None
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_a_workflow_that_would_run_itself_is_refused_at_the_node_and_the_work_is_kept(api, page_for, demo):
    page = page_for(api.author.user)
    page.set_viewport_size(VIEWPORT)
    errors = watch_errors(page)
    editor_ready(page, "parallel_analysis")
    before = Workflow.objects.get(workflow_id="parallel_analysis").nodes.count()
    # repository_review runs parallel_analysis: run from parallel_analysis, it would run itself.
    page.select_option("#workflow-pick", "repository_review")
    page.click("#add-workflow-node-button")
    page.wait_for_selector("h2:has-text('Node repository_review')")
    badge = page.locator(".node-badge[data-node=repository_review]")
    badge.wait_for()
    assert "SUBWORKFLOW_CYCLE" in badge.get_attribute("title")

    page.click("#save-button")
    expect(page.locator("#editor-banner")).to_contain_text("Not saved")
    expect(page.locator("#editor-banner")).to_contain_text("Your changes are kept")
    problem = page.locator(".field:has([data-field=subworkflow-ref]) .field-problem")
    expect(problem).to_contain_text("the workflow would run itself: parallel_analysis → repository_review → parallel_analysis")
    expect(page.locator("[data-field=subworkflow-ref]")).to_have_class(re.compile(r"\binvalid\b"))
    expect(page.locator("[data-node-problems=repository_review]")).to_contain_text("SUBWORKFLOW_CYCLE")
    assert "invalid" in node_classes(page, "repository_review")
    assert page.locator("#problems-list [data-problem-node=repository_review]").count() == 1
    assert page.evaluate("window.workflowEditor.state.nodes.map(n => n.id)")[-1] == "repository_review"
    assert Workflow.objects.get(workflow_id="parallel_analysis").nodes.count() == before

    # Another workflow instead: the problem goes, and it saves.
    page.select_option("[data-field=subworkflow-ref]", "thesis_reading")
    expect(page.locator(".node-badge[data-node=repository_review]")).to_have_count(0)
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    page.click("#save-button")
    page.wait_for_selector("#editor-status:has-text('Saved')")
    stored = Workflow.objects.get(workflow_id="parallel_analysis").nodes.get(node_id="repository_review")
    assert stored.subworkflow == {"workflow_ref": "thesis_reading"}
    assert node_key(page, "repository_review")
    assert errors == []
