"""The versions section of a workflow's page, and a run's page drawing the version it ran.

Server-side tests check what each role is given and that text is escaped; the browser test
(Debian's chromium) compares two versions drawn on the graph and restores the first."""

import pytest
from django.test import Client

from executions.models import Execution
from executions.services import execution_start
from tests.pages.conftest import screenshot, signed_in
from tests.replay import load_demo
from tests.workflow_edits import edit_workflow
from workflows.models import Workflow

XSS = "<script>window.pwned=1</script><b>bold</b>"


def at_version_4():
    """release_review edited three times: limits, then a node removed and one moved, then a condition."""
    edit_workflow("release_review", lambda document: document["limits"].update(max_steps=5), actor="ada")

    def drop_compliance(document):
        document["nodes"] = [node for node in document["nodes"] if node["id"] != "compliance"]
        document["transitions"] = [t for t in document["transitions"] if t["to"] != "compliance"]
        document["nodes"][0]["layout"] = {"x": 40, "y": 300}

    edit_workflow("release_review", drop_compliance, actor="ada")
    return edit_workflow("release_review", lambda document: document["transitions"][1].update(condition="true"),
                         actor=XSS)


@pytest.mark.django_db
def test_it_lists_the_versions_and_gives_authors_restore_and_run(api, demo):
    at_version_4()
    author = signed_in(api.author.user).get("/workflows/release_review/").content.decode()
    assert author.count('<tr data-version="') == 4
    assert 'class="version-restore" data-version="1"' in author
    assert 'class="version-restore" data-version="4"' not in author, "the latest is what the workflow is"
    assert 'class="version-run" data-version="2"' in author and 'id="run-version"' in author
    assert "js/workflow_versions.js" in author
    assert XSS not in author and "&lt;script&gt;window.pwned=1&lt;/script&gt;" in author
    viewer = signed_in(api.viewer.user).get("/workflows/release_review/").content.decode()
    assert viewer.count('<tr data-version="') == 4 and 'id="diff-button"' in viewer
    assert "version-restore" not in viewer and "version-run" not in viewer
    assert signed_in(api.viewer.user).get("/workflows/release_review/").status_code == 200
    assert Client().get("/workflows/release_review/").status_code == 302


@pytest.mark.django_db
def test_a_runs_page_draws_the_version_it_ran_and_links_to_it(api, demo):
    workflow = at_version_4()
    old = execution_start(workflow=workflow, input={"topic": "t"}, version=1)
    new = execution_start(workflow=workflow, input={"topic": "t"})
    page = signed_in(api.viewer.user).get(f"/executions/{old.execution_id}/")
    graph = page.context["page_data"]["graph"]
    assert [node["id"] for node in graph["nodes"]] == ["draft", "review", "approve", "publish", "compliance"]
    assert [node["id"] for node in graph["nodes"] if node["gate"]] == ["approve"]
    assert ("publish", "compliance") in {(edge["source"], edge["target"]) for edge in graph["edges"]}
    assert graph["version"] == 1
    assert 'href="/workflows/release_review/?version=1#versions">version 1</a>' in page.content.decode()
    graph = signed_in(api.viewer.user).get(f"/executions/{new.execution_id}/").context["page_data"]["graph"]
    assert [node["id"] for node in graph["nodes"]] == ["draft", "review", "approve", "publish"] and graph["version"] == 4
    assert Workflow.objects.get(pk=workflow.pk).nodes.count() == 4


# -- in a browser ---------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_it_compares_two_versions_runs_one_and_restores_the_first(api, page_for, settings, tmp_path, no_tasks):
    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)
    at_version_4()
    page = page_for(api.author.user)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    page.goto("/workflows/release_review/?version=1#versions")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    assert page.locator("input[name=diff-a]:checked").input_value() == "1"  # the version the address names
    assert page.locator("input[name=diff-b]:checked").input_value() == "4"  # against the latest
    page.click("#diff-button")
    page.wait_for_selector("#diff-heading:has-text('Version 1 → version 4')")
    page.wait_for_function("() => window.workflowVersions.cy && window.workflowVersions.cy.nodes().length === 5")
    classes = page.evaluate("""() => Object.fromEntries(window.workflowVersions.cy.elements().map(
        element => [element.id(), element.classes().filter(c => ['added', 'removed', 'changed', 'same'].includes(c))[0]]))""")
    assert classes["n:compliance"] == "removed" and classes["n:draft"] == "changed"
    assert classes["n:review"] == "same" and classes["n:publish"] == "same" and classes["n:approve"] == "same"
    assert page.evaluate("window.workflowVersions.cy.getElementById('n:approve').style('shape')") == "hexagon"
    assert classes["e:a:publish→compliance#0"] == "removed" and classes["e:b:review→draft#0"] == "changed"
    assert classes["e:b:draft→review#0"] == "same"
    summary = page.locator("#diff-summary").inner_text()
    assert "Nodes removed: compliance" in summary and "Node draft changed: layout" in summary
    assert "Transition review → draft changed: condition" in summary and "limits:" in summary
    assert '"/limits/max_steps"' in page.locator("#diff-json").text_content()
    for label in ("added", "removed", "changed", "the same"):
        assert page.locator(".editor-legend li", has_text=label).count() >= 1
    page.locator("#version-diff").scroll_into_view_if_needed()
    screenshot(page, "workflow-versions")

    page.click(".version-run[data-version='2']")  # the run dialog, with version 2 chosen
    assert page.locator("#run-version").input_value() == "2"
    page.fill("#run-dialog [data-input=topic]", "v2")  # the field of the input version 2 declares
    page.click("#run-start")
    page.wait_for_url("**/executions/exec_*/")
    assert page.locator("#run-version").inner_text().startswith("version 2")
    (execution,) = Execution.objects.all()
    assert execution.workflow_version.number == 2 and execution.input == {"topic": "v2"}

    page.goto("/workflows/release_review/#versions")
    assert page.locator("tr[data-version='2'] td").nth(4).inner_text() == "1"  # runs of version 2
    page.on("dialog", lambda dialog: dialog.accept())  # "Restore version 1?"
    page.click(".version-restore[data-version='1']")
    page.wait_for_selector("tr[data-version='5']")
    assert "restored from version 1" in page.locator("tr[data-version='5']").inner_text()
    assert page.locator("input[name=diff-a]:checked").input_value() == "4"
    workflow = Workflow.objects.get(workflow_id="release_review")
    assert workflow.max_steps == 12 and workflow.nodes.count() == 5
    assert workflow.versions.get(number=5).document == workflow.versions.get(number=1).document

    # A save on the page lists its version at once, ready to compare and run.
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    page.locator("input[data-field=name]").fill("Release review, renamed")  # the workflow's, not a schedule's or a key's
    page.click("#save-button")
    page.wait_for_selector("tr[data-version='6']")
    assert page.locator("input[name=diff-b]:checked").input_value() == "6"
    assert page.locator("#run-version option[value='6']").count() == 1
    page.click(".version-run[data-version='6']")
    assert page.locator("#run-version").input_value() == "6"
    assert errors == []
