"""The workflow editor tells the truth while a person builds: warnings where data flows
nowhere (amber, and the save goes through), an offer to add the input a connection needs,
the edges the named inputs draw, a layout that follows the connections, a zoom that keeps
labels readable, fields only where the topology honours them, a cycle on the transition that
closed it, a connect mode that stays on, hints that do not go stale, and an agent found by
part of its name. Each test walks the steps in chromium, as a person does.
"""

import pytest
from playwright.sync_api import expect

from tests.pages.test_workflow_editor import click_node, edges, node_classes, node_key, watched
from tests.replay import load_demo
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def author_page(api, page_for, settings, tmp_path):
    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)
    page, errors = watched(page_for, api.author.user)
    page.on("console", lambda message: errors.append(f"warning: {message.text}") if message.type == "warning" else None)
    yield page
    assert errors == []  # script errors, console errors and warnings


def new_workflow(page, workflow_id, topology):
    page.goto("/workflows/new/")
    page.wait_for_function("() => document.getElementById('agent-search').placeholder.startsWith('Search')")
    page.fill("[data-field=workflow_id]", workflow_id)
    page.fill("[data-field=name]", workflow_id.replace("_", " ").capitalize())
    page.select_option("#editor-panel select", topology)


def add_agent(page, text, node_id):
    page.fill("#agent-search", text)
    page.click("#add-node-button")
    page.wait_for_selector(f"#editor-panel h2:has-text('Node {node_id}')")


def position(page, node_id):
    return page.evaluate(f"window.workflowEditor.cy.getElementById('{node_key(page, node_id)}').position()")


def edge_classes(page, source, target):
    return page.evaluate("""([source, target]) => {
        const editor = window.workflowEditor;
        const key = id => editor.state.nodes.find(n => n.id === id).key;
        return editor.cy.edges().filter(e => e.source().id() === key(source) && e.target().id() === key(target))
            .map(e => e.classes());
    }""", [source, target])


def test_it_warns_of_edges_that_pass_nothing_saves_anyway_and_offers_the_input_that_reads(author_page, api):
    page = author_page
    new_workflow(page, "repo_report", "dag")
    add_agent(page, "Code_Analyzer", "code_analyzer")
    add_agent(page, "Docs_Analyzer", "docs_analyzer")
    add_agent(page, "Report_Synthesizer", "report_synthesizer")

    # Two links in one go: connect mode stays on after the first.
    page.click("#connect-button")
    click_node(page, "docs_analyzer")
    click_node(page, "report_synthesizer")
    page.wait_for_selector("#editor-panel p.mono:text-is('docs_analyzer → report_synthesizer')")
    hint = page.locator("#agent-search-help")
    expect(hint).to_contain_text("“report_synthesizer” now waits for “docs_analyzer”")
    expect(hint).to_contain_text("reads nothing of “docs_analyzer” yet")
    expect(hint).not_to_contain_text("condition")
    assert page.locator("#connect-button").get_attribute("aria-pressed") == "true"
    click_node(page, "code_analyzer")
    click_node(page, "report_synthesizer")
    page.wait_for_selector("#editor-panel p.mono:text-is('code_analyzer → report_synthesizer')")
    page.keyboard.press("Escape")
    assert page.locator("#connect-button").get_attribute("aria-pressed") == "false"

    # Nothing reads what the analyzers say: warnings, amber, on the edges and the nodes; no problem.
    summary = page.locator("#problems-summary")
    expect(summary).to_contain_text("No problems: the workflow is valid. 4 warnings")
    assert "warn-text" in summary.get_attribute("class")
    listed = page.locator("#problems-list li.warning")
    expect(listed).to_have_count(4)
    assert sorted(listed.locator(".badge.warning").all_inner_texts()) == [
        "EDGE_UNUSED", "EDGE_UNUSED", "OUTPUT_UNREAD", "OUTPUT_UNREAD"]
    expect(page.locator("#problems-list")).to_contain_text(
        "(docs_analyzer → report_synthesizer) passes nothing: 'report_synthesizer' waits for 'docs_analyzer'")
    assert page.locator("#problems-list li.problem").count() == 0
    for source in ("docs_analyzer", "code_analyzer"):
        assert [set(classes) >= {"transition", "warned"} and "invalid" not in classes
                for classes in edge_classes(page, source, "report_synthesizer")] == [True]
        assert "warned" in node_classes(page, source) and "invalid" not in node_classes(page, source)
        assert "OUTPUT_UNREAD" in page.locator(f".warning-badge[data-warning-node={source}]").get_attribute("title")
    assert "warned" not in node_classes(page, "report_synthesizer")  # the last node: its output is the result
    assert page.locator(".node-badge").count() == 0
    assert page.evaluate("""window.workflowEditor.cy.edges('.warned').first().style('line-color')""") == "rgb(201,138,18)"

    # The transition's settings say it too, and offer the input that would read the source.
    panel = page.locator("#editor-panel")
    assert "null" not in panel.inner_text()
    expect(panel.locator("[data-transition-warnings] .warning")).to_contain_text("EDGE_UNUSED")
    assert panel.locator("[data-field=offer-input-name]").input_value() == "code_analyzer"

    # Saved with its warnings: they never refuse a save.
    page.click("#save-button")
    page.wait_for_selector("#editor-status:has-text('Saved')")
    page.wait_for_url("**/workflows/repo_report/")
    stored = Workflow.objects.get(workflow_id="repo_report")
    assert [(t.from_node, t.to_node) for t in stored.transitions.all()] == [
        ("docs_analyzer", "report_synthesizer"), ("code_analyzer", "report_synthesizer")]

    # The offered input, renamed: the synthesizer reads the code analysis; that warning goes.
    panel.locator("[data-field=offer-input-name]").fill("code")
    panel.locator("[data-field=offer-input-add]").click()
    expect(hint).to_contain_text("“report_synthesizer” reads the output of “code_analyzer” as its input “code”")
    expect(panel.locator("[data-field=reading-offer]")).to_have_count(0)
    expect(summary).to_contain_text("No problems: the workflow is valid. 2 warnings")
    assert "warned" not in node_classes(page, "code_analyzer")
    assert ["warned" in classes for classes in edge_classes(page, "code_analyzer", "report_synthesizer")] == [False]
    page.click("#save-button")
    page.wait_for_selector("#editor-status:has-text('Saved')")
    report = Workflow.objects.get(workflow_id="repo_report").nodes.get(node_id="report_synthesizer")
    assert report.input_mapping == {"code": "$.nodes.code_analyzer"}
    checked = api.viewer.post("/api/workflows/repo_report/validate").json()
    assert [(w["where"], w["code"]) for w in checked["warnings"]] == [
        ("nodes[docs_analyzer]", "OUTPUT_UNREAD"), ("transitions[0]", "EDGE_UNUSED")]


def test_it_offers_only_what_the_topology_honours_and_hints_by_topology(author_page):
    page = author_page
    new_workflow(page, "topologies", "dag")
    add_agent(page, "Drafter", "drafter")
    add_agent(page, "Reviewer", "reviewer")
    page.click("#connect-button")
    click_node(page, "drafter")
    click_node(page, "reviewer")
    page.wait_for_selector("#editor-panel h2:text-is('Transition')")
    hint = page.locator("#agent-search-help")
    expect(hint).to_contain_text("“reviewer” now waits for “drafter”")
    expect(hint).not_to_contain_text("Set a condition")

    # A dag neither chooses by condition nor goes on to a node: neither is offered.
    panel = page.locator("#editor-panel")
    assert panel.locator("[data-field=condition]").count() == 0
    assert panel.locator("[data-field=on_success]").count() == 0
    assert panel.locator("[data-field=on_failure] option").all_inner_texts() == [
        "escalate (default)", "escalate", "abort", "skip"]
    expect(panel.locator("[data-field=transition-meaning]")).to_have_text("“reviewer” waits for “drafter” to be done.")
    page.keyboard.press("Escape")

    # In a state machine they are, and the hint after a connection asks for a condition.
    page.click("text=← Workflow settings")
    page.select_option("#editor-panel select", "state_machine")
    page.click("#connect-button")
    click_node(page, "reviewer")
    click_node(page, "drafter")
    page.wait_for_selector("#editor-panel p.mono:text-is('reviewer → drafter')")
    expect(hint).to_contain_text("Set a condition")
    assert panel.locator("[data-field=condition]").count() == 1
    assert panel.locator("[data-field=on_success]").count() == 1
    assert "node drafter" in panel.locator("[data-field=on_failure] option").all_inner_texts()
    panel.locator("[data-field=condition]").fill("output.verdict == 'revise'")
    page.keyboard.press("Escape")
    expect(page.locator("#problems-summary")).to_contain_text("No problems")

    # Back to a dag, the condition typed is still shown, where it can be removed, with its problem.
    page.click("text=← Workflow settings")
    page.select_option("#editor-panel select", "dag")
    page.click("#editor-panel button.link-button:text-is('reviewer')")
    page.click("#editor-panel button:text-is('reviewer → drafter')")
    condition = panel.locator("[data-field=condition]")
    expect(condition).to_have_value("output.verdict == 'revise'")
    expect(panel.locator(".field:has([data-field=condition]) .field-problem")).to_contain_text(
        "a condition chooses the next node only in a state_machine")
    condition.fill("")
    expect(panel.locator(".field:has([data-field=condition]) .field-problem")).to_have_text("")


def test_it_marks_the_transition_that_closes_a_cycle_not_a_node(author_page):
    page = author_page
    new_workflow(page, "loop", "dag")
    add_agent(page, "Scholar", "scholar")
    add_agent(page, "Validator", "validator")
    page.click("#connect-button")
    click_node(page, "scholar")
    click_node(page, "validator")
    page.wait_for_selector("#editor-panel p.mono:text-is('scholar → validator')")
    page.keyboard.press("Escape")
    click_node(page, "validator")  # closed from the node's settings
    page.select_option(".connect-row select", "scholar")
    page.click(".connect-row button")
    page.wait_for_selector("#editor-panel p.mono:text-is('validator → scholar')")

    expect(page.locator("#problems-summary")).to_contain_text("1 problem")
    [closing] = edge_classes(page, "validator", "scholar")
    assert {"transition", "invalid"} <= set(closing)
    assert "invalid" not in edge_classes(page, "scholar", "validator")[0]
    for node in ("scholar", "validator"):
        assert "invalid" not in node_classes(page, node)
    assert page.locator(".node-badge").count() == 0
    problem = page.locator("#problems-list li.problem")
    expect(problem).to_contain_text("CYCLE transition validator → scholar transitions[1]")
    expect(problem).to_contain_text("(validator → scholar) closes a cycle in the dag: scholar → validator → scholar")
    expect(page.locator("#editor-panel [data-transition-problems]")).to_contain_text("CYCLE")


def test_it_draws_the_inputs_that_read_another_node_as_reads_the_output_of_edges(author_page):
    page = author_page
    new_workflow(page, "chain", "seq")
    add_agent(page, "Scholar", "scholar")
    add_agent(page, "Validator", "validator")
    add_agent(page, "Knowledge_Vault", "knowledge_vault")
    page.click("[data-add=inputs]")
    page.fill("[data-mapping=inputs] .mapping-name", "atoms")
    page.fill("[data-mapping=inputs] .mapping-value", "$.nodes.scholar.atoms")
    drawn = sorted((e["source"], e["target"], e["kind"]) for e in edges(page))
    assert drawn == [("scholar", "knowledge_vault", "reference"), ("scholar", "validator", "order"),
                     ("validator", "knowledge_vault", "order")]
    legend = page.locator(".editor-legend li:has(.swatch.reference)")
    expect(legend).to_contain_text("reads the output of (an input over $.nodes.…, or task_output)")
    reference = "window.workflowEditor.cy.edges('.reference').first()"
    assert page.evaluate(f"{reference}.style('line-style')") == "dotted"
    assert page.evaluate(f"{reference}.style('line-color')") == "rgb(31,138,138)"  # the legend's swatch

    # In a par the node would not wait for the one it reads: a warning, amber, on it.
    page.click("text=← Workflow settings")
    page.select_option("#editor-panel select", "par")
    badge = page.locator(".warning-badge[data-warning-node=knowledge_vault]")
    badge.wait_for()
    assert "READ_NOT_AWAITED: input 'atoms' reads $.nodes.scholar, but par nodes all run at once" in \
        badge.get_attribute("title")
    page.select_option("#editor-panel select", "seq")
    expect(badge).to_have_count(0)

    # Renamed, the node it reads takes the input along; emptied, the edge goes.
    click_node(page, "scholar")
    page.fill("[data-field=node-id]", "reader")
    page.press("[data-field=node-id]", "Enter")
    page.wait_for_selector("h2:has-text('Node reader')")
    assert ("reader", "knowledge_vault", "reference") in [(e["source"], e["target"], e["kind"]) for e in edges(page)]
    click_node(page, "knowledge_vault")
    value = page.locator("[data-mapping=inputs] .mapping-value")
    expect(value).to_have_value("$.nodes.reader.atoms")
    value.fill("$.input.atoms")
    assert [e["kind"] for e in edges(page)] == ["order", "order"]


def test_it_lays_the_graph_out_after_each_connection_keeping_nodes_moved_by_hand(author_page):
    page = author_page
    new_workflow(page, "fan_in", "dag")
    add_agent(page, "Code_Analyzer", "code_analyzer")
    add_agent(page, "Docs_Analyzer", "docs_analyzer")
    add_agent(page, "Report_Synthesizer", "report_synthesizer")
    assert len({position(page, node)["y"] for node in ("code_analyzer", "docs_analyzer", "report_synthesizer")}) == 1

    page.click("#connect-button")
    for source in ("code_analyzer", "docs_analyzer"):
        click_node(page, source)
        click_node(page, "report_synthesizer")
        page.wait_for_selector(f"#editor-panel p.mono:text-is('{source} → report_synthesizer')")
    page.keyboard.press("Escape")
    code, docs, report = (position(page, node) for node in ("code_analyzer", "docs_analyzer", "report_synthesizer"))
    assert code["x"] == docs["x"] < report["x"]  # one rank before the node they lead to
    assert code["y"] != docs["y"]
    assert min(code["y"], docs["y"]) < report["y"] < max(code["y"], docs["y"])

    # The report moved by hand stays where it was put when the next connection lays the rest out.
    start = page.evaluate(f"window.workflowEditor.cy.getElementById('{node_key(page, 'report_synthesizer')}')"
                          ".renderedPosition()")
    box = page.locator("#cy").bounding_box()
    page.mouse.move(box["x"] + start["x"], box["y"] + start["y"])
    page.mouse.down()
    page.mouse.move(box["x"] + start["x"] + 30, box["y"] + start["y"] + 60, steps=8)
    page.mouse.up()
    moved = position(page, "report_synthesizer")
    assert moved != report
    add_agent(page, "Test_Analyzer", "test_analyzer")
    page.click("#connect-button")
    click_node(page, "test_analyzer")
    click_node(page, "report_synthesizer")
    page.wait_for_selector("#editor-panel p.mono:text-is('test_analyzer → report_synthesizer')")
    page.keyboard.press("Escape")
    assert position(page, "report_synthesizer") == moved
    tested = position(page, "test_analyzer")
    assert tested["x"] < moved["x"]  # laid out before the node it leads to, not in the row
    assert len({round(position(page, node)["x"]) for node in ("code_analyzer", "docs_analyzer", "test_analyzer")}) == 1

    # "Auto layout" lays every node out again, the one moved by hand too.
    page.click("#layout-button")
    analyzers = [position(page, node) for node in ("code_analyzer", "docs_analyzer", "test_analyzer")]
    laid = position(page, "report_synthesizer")
    assert laid != moved and all(analyzer["x"] < laid["x"] for analyzer in analyzers)


def test_it_never_zooms_a_large_graph_out_below_readable_labels(author_page):
    page = author_page
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto("/workflows/release_review/")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    label_px = "window.workflowEditor.cy.zoom() * 12"  # the smallest labels (the edges') are 12 px at zoom 1
    assert page.evaluate("window.workflowEditor.cy.edges().first().style('font-size')") == "12px"
    assert page.evaluate(label_px) >= 9.99
    # Shown from its start node, the rest panned to.
    draft = page.evaluate(f"window.workflowEditor.cy.getElementById('{node_key(page, 'draft')}').renderedBoundingBox()")
    assert draft["x1"] >= 0 and draft["x2"] <= page.evaluate("window.workflowEditor.cy.width()")
    page.click("#fit-button")
    assert page.evaluate(label_px) >= 9.99
    box = page.locator("#cy").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 20)
    for _ in range(5):
        page.mouse.wheel(0, 400)  # zooming out with the wheel stops there too
    assert page.evaluate(label_px) >= 9.99
    click_node(page, "compliance")  # panned to, it is there to click
    page.wait_for_selector("h2:has-text('Node compliance')")


def test_it_finds_an_agent_by_part_of_its_name_and_lists_several_to_pick_from(author_page):
    page = author_page
    new_workflow(page, "picking", "dag")
    hint = page.locator("#agent-search-help")
    page.fill("#agent-search", "Code")
    page.press("#agent-search", "Enter")
    page.wait_for_selector("#editor-panel h2:has-text('Node code_analyzer')")
    expect(hint).to_contain_text("Added “code_analyzer” (Code_Analyzer)")

    page.fill("#agent-search", "analyzer")
    page.click("#add-node-button")
    choices = hint.locator("[data-agent-choice]")
    expect(choices).to_have_count(3)
    assert choices.all_inner_texts() == ["Code Analyzer (Code_Analyzer)", "Docs Analyzer (Docs_Analyzer)",
                                         "Test Analyzer (Test_Analyzer)"]
    choices.nth(2).click()
    page.wait_for_selector("#editor-panel h2:has-text('Node test_analyzer')")
    assert page.evaluate("window.workflowEditor.state.nodes.map(n => n.agent_ref)") == ["Code_Analyzer", "Test_Analyzer"]

    page.fill("#agent-search", "nobody such")
    page.click("#add-node-button")
    expect(hint).to_have_text("No agent “nobody such”: type part of its id or name.")


def test_it_clears_a_stale_hint_and_keeps_connecting_until_told_to_stop(author_page):
    page = author_page
    new_workflow(page, "hints", "dag")
    add_agent(page, "Scholar", "scholar")
    add_agent(page, "Validator", "validator")
    hint = page.locator("#agent-search-help")
    page.click("#connect-button")
    click_node(page, "scholar")
    page.mouse.click(*[page.locator("#cy").bounding_box()[key] + 8 for key in ("x", "y")])  # beside the nodes
    expect(hint).to_have_text("Connect: click the node the transition starts from (Esc or Connect to stop).")
    assert "source" not in node_classes(page, "scholar")
    click_node(page, "scholar")
    click_node(page, "validator")
    page.wait_for_selector("#editor-panel p.mono:text-is('scholar → validator')")
    page.click("#connect-button")  # the button stops it too
    assert page.locator("#connect-button").get_attribute("aria-pressed") == "false"
    expect(hint).to_have_text("")

    page.click("#delete-button")
    expect(hint).to_have_text("Deleted the transition.")
    click_node(page, "validator")  # the next action: what the last one said goes
    page.wait_for_selector("#editor-panel h2:has-text('Node validator')")
    expect(hint).to_have_text("")


@pytest.mark.parametrize("reading", ["state", "compress"])
def test_it_offers_no_input_where_the_target_reads_its_source_another_way(author_page, api, reading):
    """A state key the source sets and the target reads, or a target that compresses what it
    waits for: the edge passes data, as the server says (no warning), and nothing is offered."""
    from workflows.services import workflow_import_document

    draft = {"id": "draft", "agent_ref": "Scholar", "output_mapping": {"draft": "$.text"}}
    review = ({"id": "review", "agent_ref": "Validator", "input_mapping": {"text": "$.state.draft"}}
              if reading == "state" else {"id": "review", "agent_ref": "Validator", "compress": True})
    workflow_import_document({"workflow_id": "drafts", "name": "Drafts", "topology": "dag", "nodes": [draft, review],
                              "transitions": [{"from": "draft", "to": "review"}]})
    assert api.viewer.post("/api/workflows/drafts/validate").json()["warnings"] == []
    page = author_page
    page.goto("/workflows/drafts/")
    expect(page.locator("#problems-summary")).to_have_text("No problems: the workflow is valid.")
    click_node(page, "review")
    page.click("#editor-panel button:text-is('draft → review')")
    page.wait_for_selector("#editor-panel p.mono:text-is('draft → review')")
    expect(page.locator("#editor-panel [data-field=reading-offer]")).to_have_count(0)
