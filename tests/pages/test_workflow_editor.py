"""The workflow pages: the list, and the workflow page that is its graph editor.

Server-side tests (Django's test client) check what each role is given and that the
page's cost does not grow with the workflow; browser tests (Debian's chromium) build,
validate, save and run a workflow the way a person does, and find no editing controls
as a viewer.
"""
import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from executions.models import Execution
from tests.pages.conftest import screenshot, signed_in
from tests.replay import load_demo
from workflows.documents import workflow_document
from workflows.models import Workflow
from workflows.services import workflow_import_document

EDITING_CONTROLS = ["add-node-button", "agent-search", "connect-button", "delete-button", "save-button", "run-button",
                    "run-dialog", "workflow-pick", "workflow-version-pick", "add-workflow-node-button"]


def script_json(html: str, element_id: str):
    match = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', html, re.S)
    assert match, f"no json_script block '{element_id}'"
    return json.loads(match.group(1))


def control_ids(html: str) -> set[str]:
    return {name for name in EDITING_CONTROLS if f'id="{name}"' in html}


# -- server side ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_it_links_each_workflow_to_its_page_and_offers_authors_a_new_one(api, demo):
    viewer_page = signed_in(api.viewer.user).get("/workflows/").content.decode()
    assert 'href="/workflows/release_review/"' in viewer_page
    assert 'href="/workflows/thesis_reading/"' in viewer_page
    assert "/workflows/new/" not in viewer_page
    author_page = signed_in(api.author.user).get("/workflows/").content.decode()
    assert 'href="/workflows/new/"' in author_page and "New workflow" in author_page


@pytest.mark.django_db
def test_it_gives_authors_the_editor_with_the_workflow_document(api, demo):
    response = signed_in(api.author.user).get("/workflows/release_review/")
    assert response.status_code == 200
    html = response.content.decode()
    assert control_ids(html) == set(EDITING_CONTROLS)
    document = script_json(html, "workflow-document")
    assert document["workflow_id"] == "release_review" and document["topology"] == "state_machine"
    assert [node["id"] for node in document["nodes"]] == ["draft", "review", "approve", "publish", "compliance"]
    assert document["nodes"][2]["gate"]["deciders"] == {"roles": ["approver"]}  # the gate, for the editor to keep
    assert document["error_handling"] == {"retry_count": 2, "fallback_agent": "Backup_Publisher",
                                          "escalate_to": "Orchestrator"}
    config = script_json(html, "editor-config")
    assert config["editable"] is True and config["is_new"] is False
    assert config["urls"]["execution"] == "/executions/__execution__/"
    assert config["urls"]["node_plan"] == "/executions/plan/__workflow__/__node__/"
    assert "vendor/cytoscape/cytoscape.min.js" in html and "js/workflow_editor.js" in html


@pytest.mark.django_db
def test_it_gives_viewers_the_graph_and_settings_but_no_editing_controls(api, demo):
    response = signed_in(api.viewer.user).get("/workflows/thesis_reading/")
    assert response.status_code == 200
    html = response.content.decode()
    assert control_ids(html) == set()
    assert 'id="cy"' in html and 'id="editor-panel"' in html and "read only" in html
    assert script_json(html, "editor-config")["editable"] is False
    assert len(script_json(html, "workflow-document")["nodes"]) == 3


@pytest.mark.django_db
def test_it_starts_an_empty_workflow_for_authors_only(api, demo):
    assert signed_in(api.viewer.user).get("/workflows/new/").status_code == 403
    response = signed_in(api.author.user).get("/workflows/new/")
    assert response.status_code == 200
    html = response.content.decode()
    document = script_json(html, "workflow-document")
    assert document["nodes"] == [] and document["workflow_id"] == ""
    assert document["limits"] == {"max_steps": 50, "max_wall_seconds": 3600}
    assert script_json(html, "editor-config")["is_new"] is True
    assert control_ids(html) == set(EDITING_CONTROLS)


@pytest.mark.django_db
@pytest.mark.parametrize("workflow_id", ["no_such_workflow", "bad%00id", "x" * 150])
def test_it_answers_not_found_for_a_workflow_that_does_not_exist(api, demo, workflow_id):
    assert signed_in(api.viewer.user).get(f"/workflows/{workflow_id}/").status_code == 404


@pytest.mark.django_db
def test_it_escapes_what_the_workflow_holds(api, demo):
    document = {"workflow_id": "escaping", "name": "</script><script>alert('name')</script>", "topology": "seq",
                "nodes": [{"id": "only", "agent_ref": "Scholar", "input_mapping": {"note": "<img src=x onerror=alert(1)>"}}]}
    workflow_import_document(document)
    html = signed_in(api.viewer.user).get("/workflows/escaping/").content.decode()
    assert "<script>alert('name')" not in html and "<img src=x" not in html
    assert "&lt;/script&gt;&lt;script&gt;alert(&#x27;name&#x27;)" in html  # the heading, as text
    assert script_json(html, "workflow-document")["name"] == document["name"]  # and the data, intact


@pytest.mark.django_db
def test_it_renders_a_workflow_in_the_same_queries_however_many_nodes_it_has(api, demo, django_assert_max_num_queries):
    def chain(workflow_id, size):
        nodes = [{"id": f"n{i}", "agent_ref": "Scholar" if i % 2 else "Validator",
                  "input_mapping": {"previous": f"$.nodes.n{i - 1}"} if i else {}} for i in range(size)]
        transitions = [{"from": f"n{i}", "to": f"n{i + 1}"} for i in range(size - 1)]
        workflow_import_document({"workflow_id": workflow_id, "name": workflow_id, "topology": "dag", "nodes": nodes,
                                  "transitions": transitions,
                                  "error_handling": {"retry_count": 1, "fallback_agent": "Validator",
                                                     "escalate_to": "Orchestrator"}})
    chain("small", 3)
    chain("large", 400)
    Execution.objects.bulk_create(Execution(execution_id=f"run_{i}", workflow=Workflow.objects.get(workflow_id="large"))
                                  for i in range(20))
    client = signed_in(api.author.user)
    client.get("/workflows/small/")  # the session is read once the same way for both
    with CaptureQueriesContext(connection) as small:
        assert client.get("/workflows/small/").status_code == 200
    with django_assert_max_num_queries(len(small.captured_queries)):
        response = client.get("/workflows/large/")
    html = response.content.decode()
    assert len(script_json(html, "workflow-document")["nodes"]) == 400
    assert html.count('href="/executions/run_') == 5  # the five most recent runs


# -- in a browser ---------------------------------------------------------------------------------


def watched(page_for, user):
    """A signed-in page, and the list its script errors and console errors collect in."""
    page = page_for(user)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    # (A refused request is logged by the browser too: that one is expected where a test makes it.)
    page.on("console", lambda message: errors.append(message.text)
            if message.type == "error" and not message.text.startswith("Failed to load resource") else None)
    return page, errors


def node_key(page, node_id):
    return page.evaluate("id => window.workflowEditor.state.nodes.find(n => n.id === id).key", node_id)


def click_node(page, node_id):
    """Click a node where cytoscape drew it on the canvas, panned into view first when the
    graph is larger than the canvas (the editor never zooms out so far that labels are unreadable),
    once the canvas has stopped moving (a panel drawn above it, a scroll)."""
    box = settled_box(page, "#cy")
    position = page.evaluate("""id => {
        const cy = window.workflowEditor.cy;
        const element = cy.getElementById(window.workflowEditor.state.nodes.find(n => n.id === id).key);
        const at = element.renderedPosition();
        if (at.x < 20 || at.y < 20 || at.x > cy.width() - 20 || at.y > cy.height() - 20) {
            cy.panBy({x: cy.width() / 2 - at.x, y: cy.height() / 2 - at.y});
        }
        return element.renderedPosition();
    }""", node_id)
    page.mouse.click(box["x"] + position["x"], box["y"] + position["y"])


def settled_box(page, selector):
    """Where the element is once two looks 100 ms apart agree."""
    seen = None
    for _ in range(50):
        box = page.locator(selector).bounding_box()
        if box is not None and box == seen:
            return box
        seen = box
        page.wait_for_timeout(100)
    raise AssertionError(f"{selector} kept moving for 5 s (last at {seen})")


def node_classes(page, node_id):
    return page.evaluate("""id => {
        const editor = window.workflowEditor;
        return editor.cy.getElementById(editor.state.nodes.find(n => n.id === id).key).classes();
    }""", node_id)


def assert_editor_holds_the_stored_document(page, workflow_id):
    """What the editor would save, untouched, is the stored document (plus where the nodes are drawn)."""
    built = page.evaluate("window.workflowEditor.buildDocument()")
    assert built["problems"] == []
    for node in built["document"]["nodes"]:
        assert set(node.pop("layout")) == {"x", "y"}
    assert built["document"] == workflow_document(Workflow.objects.get(workflow_id=workflow_id))


def edges(page):
    return page.evaluate("""() => window.workflowEditor.cy.edges().map(edge => ({
        source: edge.source().data('label').split('\\n')[0].replace('▶ ', ''),
        target: edge.target().data('label').split('\\n')[0].replace('▶ ', ''),
        kind: edge.classes().filter(c => ['transition', 'order', 'reference', 'route'].includes(c))[0],
        label: edge.data('label')}))""")


@pytest.fixture
def live_demo(workers, settings, tmp_path):
    settings.WORKSPACE_ROOT = tmp_path
    workers.env["WORKSPACE_ROOT"] = str(tmp_path)
    load_demo(tmp_path)
    return workers


@pytest.mark.django_db(transaction=True)
def test_it_lets_an_author_build_a_workflow_see_a_problem_on_its_node_fix_it_save_and_run_it(api, page_for, live_demo):
    live_demo.start(1)
    page, errors = watched(page_for, api.author.user)
    page.goto("/workflows/")
    page.click("text=New workflow")
    page.wait_for_url("**/workflows/new/")
    page.fill("[data-field=workflow_id]", "paper_check")
    page.fill("[data-field=name]", "Paper check")
    page.select_option("#editor-panel select", "dag")

    # Two nodes from the agent list, connected in Connect mode by clicking source then target.
    search = page.locator("#agent-search")
    expect_placeholder = re.compile(r"Search \d+ agents")
    page.wait_for_function("() => document.getElementById('agent-search').placeholder.startsWith('Search')")
    assert expect_placeholder.search(search.get_attribute("placeholder"))
    search.fill("Scholar")
    page.click("#add-node-button")
    search.fill("Validator")
    page.click("#add-node-button")
    page.wait_for_selector("h2:has-text('Node validator')")
    page.click("#connect-button")
    click_node(page, "scholar")
    page.wait_for_selector("text=now click the node it leads to")
    click_node(page, "validator")
    page.wait_for_selector("#editor-panel h2:text-is('Transition')")
    assert page.locator("#editor-panel p.mono").inner_text() == "scholar → validator"
    assert [(e["source"], e["target"], e["kind"]) for e in edges(page)] == [("scholar", "validator", "transition")]
    page.keyboard.press("Escape")  # connecting stays on until Esc

    # An output mapping whose JSONPath does not parse: the problem shows on THAT node, next to the field.
    click_node(page, "validator")
    page.wait_for_selector("h2:has-text('Node validator')")
    page.click("[data-add=outputs]")
    page.fill("[data-mapping=outputs] .mapping-name", "checked")
    page.fill("[data-mapping=outputs] .mapping-value", "$.nodes[")
    badge = page.locator(".node-badge[data-node=validator]")
    badge.wait_for()
    assert page.locator(".node-badge").count() == 1  # only the node concerned
    assert "REF_PATH_INVALID" in badge.get_attribute("title")
    assert "invalid" in node_classes(page, "validator") and "invalid" not in node_classes(page, "scholar")
    field_problem = page.locator("[data-mapping=outputs] .field-problem")
    assert "'$.nodes[' is not valid: " in field_problem.inner_text() and "column" in field_problem.inner_text()
    assert "invalid" in page.locator("[data-mapping=outputs] .mapping-value").get_attribute("class")
    assert page.locator("#problems-list [data-problem-node=validator]").count() == 1
    assert "nodes[validator].output_mapping.checked" in page.locator("#problems-list").inner_text()
    screenshot(page, "workflow_validation_error")

    # Saving anyway: the API refuses, says why next to the node, and nothing typed is lost.
    page.click("#save-button")
    page.wait_for_selector("#editor-banner:has-text('Not saved')")
    assert page.locator("[data-mapping=outputs] .mapping-value").input_value() == "$.nodes["
    assert not Workflow.objects.filter(workflow_id="paper_check").exists()

    # Fixed: the badge goes, the save goes through, and the page becomes the workflow's own.
    page.fill("[data-mapping=outputs] .mapping-value", "$.validation_results")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    assert page.locator(".node-badge").count() == 0
    page.click("#save-button")
    page.wait_for_selector("#editor-status:has-text('Saved')")
    page.wait_for_url("**/workflows/paper_check/")
    stored = Workflow.objects.get(workflow_id="paper_check")
    assert stored.name == "Paper check" and stored.topology == "dag"
    assert [(n.node_id, n.agent.agent_id, n.output_mapping) for n in stored.nodes.select_related("agent")] == [
        ("scholar", "Scholar", {}), ("validator", "Validator", {"checked": "$.validation_results"})]
    assert [(t.from_node, t.to_node) for t in stored.transitions.all()] == [("scholar", "validator")]
    assert all(node.layout and {"x", "y"} <= set(node.layout) for node in stored.nodes.all())  # positions kept

    page.goto("/workflows/")
    assert page.locator("a:text-is('paper_check')").count() == 1
    page.click("a:text-is('paper_check')")
    page.wait_for_selector("#problems-summary:has-text('No problems')")

    # Run: asks for the input, starts the run through the API, lands on the execution page.
    page.click("#run-button")
    assert page.locator("#run-input").input_value() == "{}"
    page.fill("#run-input", '{"topic": ')
    page.click("#run-start")
    page.wait_for_selector("#run-error:has-text('not JSON')")
    page.fill("#run-input", '{"topic": "attention"}')
    page.click("#run-start")
    page.wait_for_url(re.compile(r"/executions/[^/]+/$"))
    execution_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    run = api.author.get(f"/api/executions/{execution_id}").json()
    assert run["workflow_ref"] == "paper_check" and run["input"] == {"topic": "attention"}
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_it_shows_the_api_refusal_next_to_the_field_and_keeps_the_edits(api, page_for, settings, tmp_path):
    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)
    page, errors = watched(page_for, api.author.user)
    page.goto("/workflows/new/")
    page.wait_for_function("() => document.getElementById('agent-search').placeholder.startsWith('Search')")
    page.fill("[data-field=workflow_id]", "release_review")  # taken
    page.fill("[data-field=name]", "Another review")
    page.fill("#agent-search", "Drafter")
    page.press("#agent-search", "Enter")
    page.wait_for_selector("h2:has-text('Node drafter')")
    page.click("#save-button")
    page.wait_for_selector("#editor-banner:has-text('exists already')")
    page.click("text=← Workflow settings")
    assert "exists already" in page.locator("#editor-panel .field-problem").first.inner_text()
    assert page.locator("[data-field=name]").input_value() == "Another review"
    assert page.evaluate("window.workflowEditor.state.nodes.map(n => n.id)") == ["drafter"]
    assert Workflow.objects.get(workflow_id="release_review").name == "Release review (state machine)"

    # An unknown agent is refused before anything is added.
    page.fill("#agent-search", "Nobody_Such")
    page.click("#add-node-button")
    page.wait_for_selector("#agent-search-help:has-text('No agent')")
    assert page.evaluate("window.workflowEditor.state.nodes.length") == 1
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_it_draws_the_demo_workflows_laid_out_left_to_right(api, page_for, settings, tmp_path):
    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)
    page, errors = watched(page_for, api.author.user)

    page.goto("/workflows/parallel_analysis/")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    assert_editor_holds_the_stored_document(page, "parallel_analysis")

    page.goto("/workflows/release_review/")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    assert_editor_holds_the_stored_document(page, "release_review")
    drawn = edges(page)
    assert sorted((e["source"], e["target"], e["kind"]) for e in drawn) == [
        ("approve", "draft", "route"), ("approve", "publish", "transition"), ("draft", "review", "transition"),
        ("publish", "compliance", "transition"), ("review", "approve", "transition"), ("review", "draft", "transition")]
    labels = {(e["source"], e["target"]): e["label"] for e in drawn}
    assert labels[("review", "approve")] == "output.verdict == 'accept' or state.rounds >= 3"
    assert labels[("publish", "compliance")] == "on failure: escalate"
    x = {node: page.evaluate(f"window.workflowEditor.cy.getElementById('{node_key(page, node)}').position().x")
         for node in ("draft", "review", "approve", "publish", "compliance")}
    assert x["draft"] < x["review"] < x["approve"] < x["publish"] < x["compliance"]  # dagre, left to right
    # The gate (a person's step) is drawn as one; its settings are in its own field.
    assert "gate" in node_classes(page, "approve") and "gate" not in node_classes(page, "review")
    assert page.evaluate(f"window.workflowEditor.cy.getElementById('{node_key(page, 'approve')}').style('shape')") == "hexagon"
    click_node(page, "review")
    page.wait_for_selector("h2:has-text('Node review')")
    assert page.locator("[data-mapping=outputs] .mapping-value").nth(1).input_value() == "$.verdict"
    screenshot(page, "workflow_editor")

    # A transition's settings; a condition that does not parse is shown on that transition.
    page.click("#editor-panel button:text-is('review → approve')")
    condition = page.locator("[data-field=condition]")
    assert condition.input_value() == "output.verdict == 'accept' or state.rounds >= 3"
    assert page.locator("[data-field=on_failure]").input_value() == ""  # the default: escalate
    condition.fill("output.verdict ==")
    page.wait_for_selector("[data-transition-problems] :text('CONDITION_INVALID')")
    assert "invalid" in condition.get_attribute("class")
    assert page.locator("#editor-panel .field-problem").filter(has_text="review → approve").count() == 1
    invalid_edges = page.evaluate("window.workflowEditor.cy.edges('.invalid').map(e => e.data('label'))")
    assert invalid_edges == ["output.verdict =="]

    page.on("dialog", lambda dialog: dialog.accept())  # leave, unsaved
    page.goto("/workflows/thesis_reading/")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    assert_editor_holds_the_stored_document(page, "thesis_reading")
    assert sorted((e["source"], e["target"], e["kind"]) for e in edges(page)) == [
        ("task_scholar_001", "task_validator_001", "reference"), ("task_scholar_001", "task_vault_001", "reference"),
        ("task_validator_001", "task_vault_001", "reference")]
    click_node(page, "task_vault_001")
    page.wait_for_selector("h2:has-text('Node task_vault_001')")
    assert '"db_query"' in page.locator("[data-field=data_references]").input_value()
    preview = page.locator("[data-field=preview-context]")
    assert preview.get_attribute("href") == "/executions/plan/thesis_reading/task_vault_001/"
    screenshot(page, "workflow_editor_thesis_reading")
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_it_shows_a_viewer_the_graph_and_its_settings_but_no_editing_controls(api, page_for, settings, tmp_path):
    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)
    page, errors = watched(page_for, api.viewer.user)
    page.goto("/workflows/")
    assert page.locator("text=New workflow").count() == 0
    page.click("a:text-is('release_review')")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    for name in ("Add node", "Connect", "Delete", "Save", "Run…"):
        assert page.locator(f"button:text-is('{name}')").count() == 0, name
    assert page.locator("#agent-search").count() == 0
    click_node(page, "publish")
    page.wait_for_selector("h2:has-text('Node publish')")
    assert page.locator("[data-field=agent_ref]").input_value() == "Publisher"
    assert page.locator("[data-field=agent_ref]").get_attribute("readonly") is not None
    assert page.locator("#editor-panel button.danger").count() == 0
    assert page.locator("[data-add]").count() == 0
    assert page.locator("#editor-panel input:not([readonly]):not([disabled]), "
                        "#editor-panel textarea:not([readonly]), #editor-panel select:not([disabled])").count() == 0
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_it_renames_and_deletes_nodes_and_transitions_and_keeps_the_graph_consistent(api, page_for, settings, tmp_path):
    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)
    page, errors = watched(page_for, api.author.user)
    page.goto("/workflows/release_review/")
    page.wait_for_selector("#problems-summary:has-text('No problems')")

    # A renamed node takes its transitions along; a name already taken is refused.
    click_node(page, "review")
    page.fill("[data-field=node-id]", "critique")
    page.press("[data-field=node-id]", "Enter")
    page.wait_for_selector("h2:has-text('Node critique')")
    assert ("critique", "approve", "transition") in [(e["source"], e["target"], e["kind"]) for e in edges(page)]
    page.fill("[data-field=node-id]", "draft")
    page.press("[data-field=node-id]", "Enter")
    page.wait_for_selector("text=Not renamed: another node is called 'draft'")
    assert page.locator("[data-field=node-id]").input_value() == "critique"

    # Delete a transition with the toolbar's button, and a node with the Delete key.
    page.click("#editor-panel button:text-is('critique → approve')")
    page.click("#delete-button")
    click_node(page, "compliance")
    page.wait_for_selector("h2:has-text('Node compliance')")
    page.keyboard.press("Delete")
    page.wait_for_selector("#editor-panel h2:text-is('Workflow')")
    assert page.evaluate("window.workflowEditor.state.nodes.map(n => n.id)") == ["draft", "critique", "approve", "publish"]
    assert sorted((e["source"], e["target"]) for e in edges(page)) == [
        ("approve", "draft"), ("approve", "publish"), ("critique", "draft"), ("draft", "critique")]

    # Nothing leads to `approve` any more, nor so to `publish` after it: the problem is drawn on
    # those nodes, and saving is refused.
    for node in ("approve", "publish"):
        page.locator(f".node-badge[data-node={node}]").wait_for()
        assert "UNREACHABLE" in page.locator(f".node-badge[data-node={node}]").get_attribute("title")
        assert page.locator(f"#editor-panel [data-node-count={node}]").inner_text() == "1 problem"  # the list of nodes
    assert page.locator("#editor-panel [data-node-count]:visible").count() == 2
    page.click("#save-button")
    page.wait_for_selector("#editor-banner:has-text('Not saved: 2 problems')")
    assert Workflow.objects.get(workflow_id="release_review").nodes.count() == 5

    # Connected again from the node's settings (no mouse needed), it saves, its gate kept.
    gate = Workflow.objects.get(workflow_id="release_review").nodes.get(node_id="approve").gate
    click_node(page, "critique")
    page.select_option(".connect-row select", "approve")
    page.click(".connect-row button")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    page.click("#save-button")
    page.wait_for_selector("#editor-status:has-text('Saved')")
    stored = Workflow.objects.get(workflow_id="release_review")
    assert [node.node_id for node in stored.nodes.all()] == ["draft", "critique", "approve", "publish"]
    assert [(t.from_node, t.to_node, t.condition) for t in stored.transitions.all()] == [
        ("draft", "critique", None),
        ("critique", "draft", "output.verdict == 'revise' and state.rounds < 3"),
        ("approve", "publish", None),
        ("critique", "approve", None)]
    assert stored.nodes.get(node_id="approve").gate == gate
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_it_keeps_the_domain_judge_and_quality_gate_through_save_and_reload(api, page_for, settings, tmp_path):
    from playwright.sync_api import expect

    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)
    page, errors = watched(page_for, api.author.user)
    page.goto("/workflows/thesis_reading/")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    before = Workflow.objects.get(workflow_id="thesis_reading")
    assert page.locator("[data-field=domain]").input_value() == before.domain
    assert page.locator("[data-field=judge_agent]").input_value() == ""
    page.fill("[data-field=domain]", "oncology")
    page.fill("[data-field=judge_agent]", "Judge")
    page.fill("[data-field=gate-completeness]", "1")

    # A minimum above 1: the problem shows next to its field and in the list, and nothing is saved.
    page.fill("[data-field=gate-accuracy]", "2")
    problem = page.locator(".field:has([data-field=gate-accuracy]) .field-problem")
    expect(problem).to_have_text("'2' is not a number from 0 to 1")
    expect(page.locator("#problems-list")).to_contain_text("evaluation.quality_gate.accuracy")
    page.click("#save-button")
    expect(page.locator("#editor-banner")).to_contain_text("Not saved")
    assert Workflow.objects.get(workflow_id="thesis_reading").domain == before.domain

    page.fill("[data-field=gate-accuracy]", "0.8")
    expect(problem).to_have_text("")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    page.click("#save-button")
    page.wait_for_selector("#editor-status:has-text('Saved')")
    stored = Workflow.objects.select_related("judge_agent").get(workflow_id="thesis_reading")
    assert (stored.domain, stored.judge_agent.agent_id) == ("oncology", "Judge")
    assert stored.quality_gate == {"accuracy": 0.8, "completeness": 1}

    page.reload()
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    assert page.locator("[data-field=domain]").input_value() == "oncology"
    assert page.locator("[data-field=judge_agent]").input_value() == "Judge"
    assert page.locator("[data-field=gate-accuracy]").input_value() == "0.8"
    assert page.locator("[data-field=gate-completeness]").input_value() == "1"
    assert page.locator("[data-field=gate-efficiency]").input_value() == ""
    built = page.evaluate("window.workflowEditor.buildDocument()")
    stored_document = workflow_document(stored)
    assert built["problems"] == []
    assert (built["document"]["domain"], built["document"]["evaluation"]) == (
        stored_document["domain"], stored_document["evaluation"])

    # Emptied, the judge and the gate go.
    page.fill("[data-field=judge_agent]", "")
    for score in ("accuracy", "completeness"):
        page.fill(f"[data-field=gate-{score}]", "")
    page.click("#save-button")
    page.wait_for_selector("#editor-status:has-text('Saved')")
    stored.refresh_from_db()
    assert (stored.judge_agent, stored.quality_gate) == (None, None)
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_a_nodes_gate_is_edited_as_json_checked_on_its_field_and_kept_through_save(api, page_for, settings, tmp_path):
    from playwright.sync_api import expect

    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)
    page, errors = watched(page_for, api.author.user)
    page.goto("/workflows/release_review/")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    stored = Workflow.objects.get(workflow_id="release_review")
    click_node(page, "approve")
    page.wait_for_selector("h2:has-text('Node approve')")
    field = page.locator("[data-field=gate]")
    assert json.loads(field.input_value()) == stored.nodes.get(node_id="approve").gate
    assert page.locator("[data-field=gate]").count() == 1
    problem = page.locator(".field:has([data-field=gate]) .field-problem")

    # Not JSON, or not an object: shown on the field, and nothing is saved.
    field.fill('{"prompt": "Publish?",')
    expect(problem).to_contain_text("not JSON")
    expect(field).to_have_class(re.compile(r"\binvalid\b"))
    page.click("#save-button")
    expect(page.locator("#editor-banner")).to_contain_text("Not saved")
    field.fill('["approve"]')
    expect(problem).to_contain_text("expected a JSON object")
    # JSON, but a gate no run could follow: the server's problem, on the same field.
    field.fill(json.dumps({"prompt": "Publish?", "on_timeout": "approve"}))
    expect(problem).to_contain_text("on_timeout applies only after timeout_seconds")
    assert Workflow.objects.get(workflow_id="release_review").nodes.get(node_id="approve").gate == \
        stored.nodes.get(node_id="approve").gate

    # A gate that holds is saved as typed, and read back.
    gate = {"prompt": "Ship it?", "decisions": ["approve", "reject"], "deciders": {"users": ["ana"]}}
    field.fill(json.dumps(gate))
    expect(problem).to_have_text("")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    page.click("#save-button")
    page.wait_for_selector("#editor-status:has-text('Saved')")
    assert Workflow.objects.get(workflow_id="release_review").nodes.get(node_id="approve").gate == gate
    page.reload()
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    assert "gate" in node_classes(page, "approve")
    click_node(page, "approve")
    page.wait_for_selector("h2:has-text('Node approve')")
    assert json.loads(page.locator("[data-field=gate]").input_value()) == gate

    # Emptied, the node is no gate: drawn as any node, saved without one.
    page.locator("[data-field=gate]").fill("")
    assert "gate" not in node_classes(page, "approve")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    page.click("#save-button")
    page.wait_for_selector("#editor-status:has-text('Saved')")
    assert Workflow.objects.get(workflow_id="release_review").nodes.get(node_id="approve").gate is None
    assert errors == []
