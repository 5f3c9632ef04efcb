"""Every kind of page at 800 and 1280 px wide, as an author with the demo loaded and a few
finished runs: no control (a link, button, input, select, textarea) lies outside the window
sideways unless it sits in a container that scrolls, the document itself never scrolls
sideways, and the browser's console stays silent (no warning, no error, no 404)."""

import re

import pytest
from playwright.sync_api import expect

from quality.evaluations import execution_evaluate
from tests.pages.conftest import screenshot
from tests.pages.test_evaluations import finished_in_process
from tests.pages.test_thought_tree import tot_execution

pytestmark = pytest.mark.django_db(transaction=True)

WIDTHS = (800, 1280)

# Each kind of page, by a name for its screenshot and a function of the runs that gives its address.
PAGES = {
    "overview": lambda runs: "/",
    "agents": lambda runs: "/agents/",
    "agent": lambda runs: "/agents/Scholar/",
    "agent-edit": lambda runs: "/agents/Scholar/edit/",
    "derive-requests": lambda runs: "/derive-requests/",
    "workflows": lambda runs: "/workflows/",
    "workflow-editor": lambda runs: "/workflows/thesis_reading/",
    "workflow-new": lambda runs: "/workflows/new/",
    "runs": lambda runs: "/executions/",
    "run": lambda runs: f"/executions/{runs['first'].execution_id}/",
    "run-tools": lambda runs: f"/executions/{runs['tools'][0].execution_id}/?node=ask&run={runs['tools'][1].pk}#node-panel",
    "run-compare": lambda runs: f"/executions/compare/?a={runs['first'].execution_id}&b={runs['second'].execution_id}",
    "node-plan": lambda runs: "/executions/plan/thesis_reading/task_validator_001/",
    "thought-tree": lambda runs: f"/executions/{runs['tot'][0].execution_id}/tot/{runs['tot'][1].node_run_id}/",
    "evaluations": lambda runs: "/evaluations/",
    "evaluation": lambda runs: f"/evaluations/{runs['evaluation'].evaluation_id}/",
    "evaluation-new": lambda runs: "/evaluations/new/",
    "blueprints": lambda runs: "/blueprints/",
    "blueprint": lambda runs: "/blueprints/thesis_reading_system/",
    "experiments": lambda runs: "/experiments/",
    "experiment": lambda runs: f"/experiments/{runs['experiment'].experiment_id}/",
    "experiment-new": lambda runs: "/experiments/new/?workflow=echo&dataset=capitals",
}

# Controls that stick out of the window although no container of theirs scrolls sideways.
STRAYS = """() => {
  const width = document.documentElement.clientWidth;
  const scrolls = element => {
    for (let box = element.parentElement; box && box !== document.body; box = box.parentElement) {
      const overflow = getComputedStyle(box).overflowX;
      if ((overflow === 'auto' || overflow === 'scroll') && box.scrollWidth > box.clientWidth) return true;
    }
    return false;
  };
  return [...document.querySelectorAll('a, button, input, select, textarea')]
    .filter(element => element.getClientRects().length && getComputedStyle(element).visibility !== 'hidden')
    .filter(element => { const box = element.getBoundingClientRect(); return box.width && (box.left < -1 || box.right > width + 1); })
    .filter(element => !scrolls(element))
    .map(element => `${element.tagName.toLowerCase()} "${(element.textContent || element.name || element.id).trim().slice(0, 40)}"`);
}"""


@pytest.fixture
def runs(demo, no_tasks, settings):
    """Two finished runs of thesis_reading (the first evaluated), a Tree-of-Thoughts search,
    a node that called tools (its panel open on its conversation), and an experiment started."""
    from tests.pages.test_csp import started_experiment
    from tests.pages.test_tool_conversation import tool_run  # which reads this module's watch_console

    first = finished_in_process("thesis_reading")
    return {"first": first, "evaluation": execution_evaluate(execution_pk=first.pk),
            "second": finished_in_process("thesis_reading"), "tot": tot_execution(),
            "tools": tool_run(settings.WORKSPACE_ROOT), "experiment": started_experiment()}


def watch_console(page) -> list[str]:
    """What the page said in its console (warnings and errors), threw, or failed to load."""
    said: list[str] = []
    page.on("console", lambda message: said.append(f"{message.type}: {message.text}")
            if message.type in ("warning", "error") else None)
    page.on("pageerror", lambda error: said.append(f"uncaught: {error}"))
    page.on("response", lambda response: said.append(f"{response.status}: {response.url}")
            if response.status >= 400 else None)
    return said


@pytest.mark.parametrize("width", WIDTHS)
def test_it_fits_every_page_in_the_window_without_a_word_in_the_console(page_for, api, runs, width):
    """Every kind of page in turn, on the same data: what is wrong is named by page."""
    page = page_for(api.author.user)
    page.set_viewport_size({"width": width, "height": 900})
    said = watch_console(page)
    wrong = {}
    for kind, address in PAGES.items():
        said.clear()
        page.goto(address(runs))
        page.wait_for_load_state("networkidle")

        screenshot(page, f"layout-{kind}-{width}")
        sideways = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        found = {"scrolls sideways by": sideways, "controls outside": page.evaluate(STRAYS), "console": list(said)}
        if found != {"scrolls sideways by": 0, "controls outside": [], "console": []}:
            wrong[kind] = found
    assert wrong == {}


def test_it_brings_a_nodes_settings_into_view_in_a_narrow_window(page_for, api, demo):
    from tests.pages.test_workflow_editor import click_node

    page = page_for(api.author.user)
    page.set_viewport_size({"width": 800, "height": 700})
    page.goto("/workflows/thesis_reading/")
    page.wait_for_function("window.workflowEditor && window.workflowEditor.cy.nodes().length > 0")
    page.locator("#cy").scroll_into_view_if_needed()
    click_node(page, "task_validator_001")

    heading = page.locator("#editor-panel h2").first
    assert heading.inner_text() == "Node task_validator_001"
    box = heading.bounding_box()
    assert 0 <= box["y"] and box["y"] + box["height"] <= 700, "the node's settings are out of sight"
    # One line: a long id ends in an ellipsis, the whole of it in the heading's title.
    assert heading.get_attribute("title") == "Node task_validator_001"
    assert box["height"] < 30


def test_it_answers_favicon_ico_with_the_icon_the_pages_link_to(client, db):
    answer = client.get("/favicon.ico")
    assert (answer.status_code, answer["Location"]) == (301, "/static/favicon.svg")
    icon = client.get("/static/favicon.svg")
    assert icon.status_code == 200 and icon["Content-Type"] == "image/svg+xml"


@pytest.mark.parametrize("width", WIDTHS)
def test_it_keeps_a_builtin_runs_cost_inside_its_fact(page_for, api, demo, no_tasks, width):
    from tests.pages.test_execution_browser import click_graph_node

    run = finished_in_process("thesis_reading")
    page = page_for(api.author.user)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"/executions/{run.execution_id}/")
    page.wait_for_function("() => window.switchyard.executionGraph")
    page.locator("#graph").scroll_into_view_if_needed()
    click_graph_node(page, "task_scholar_001")
    cost = page.locator("#node-panel .run-cost .cost.builtin").first
    cost.wait_for()
    # The words stay inside their fact and do not run into the duration beside them.
    inside = cost.evaluate("""(words) => {
        const fact = words.closest('dd').getBoundingClientRect(), box = words.getBoundingClientRect();
        return box.right <= fact.right + 0.5 && box.left >= fact.left - 0.5;
    }""")
    assert inside, "the builtin's cost runs past its fact"


@pytest.mark.parametrize("address", ["/evaluations/", "/agents/Knowledge_Vault/"])
def test_it_shows_an_evaluations_feedback_whole_at_1280_px(page_for, api, runs, address):
    page = page_for(api.author.user)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(address)
    table = page.locator("table.evaluations-table")
    expect(table.locator("th").last).to_have_text("Feedback")
    # The table fits its place: nothing of it (the Feedback column least of all) is scrolled out of sight.
    assert table.evaluate("(table) => table.getBoundingClientRect().right <= table.closest('.card, main').getBoundingClientRect().right + 0.5 &&"
                          " table.parentElement.scrollWidth <= table.parentElement.clientWidth")


def test_it_keeps_the_design_documents_sections_in_tooltips(page_for, api, demo):
    from tests.pages.test_execution_browser import click_graph_node
    from tests.pages.test_executions import CONTEXT, make_execution

    whole = "300 tokens < 2K: passed whole (§5.1)"
    record = {**CONTEXT, "resolution": {**CONTEXT["resolution"], "actions": [
        {"data": "notes", "action": "summarize", "original_tokens": 900, "reduced_tokens": 300,
         "reason": "text data is passed as summary (§5.3)"}]}}
    run = make_execution("thesis_reading", [{"node_id": "task_scholar_001", "status": "success", "context_record": record,
                                             "resolved_inputs": [{"name": "notes", "transfer_mode": "full", "reason": whole,
                                                                  "resolved_tokens": 300, "passed_tokens": 300}]}])
    page = page_for(api.author.user)
    page.goto(f"/executions/{run.execution_id}/")
    page.wait_for_function("() => window.switchyard.executionGraph")
    click_graph_node(page, "task_scholar_001")
    reasons = page.locator("#node-panel .reason")
    expect(reasons.first).to_be_visible()
    assert "§" not in page.locator("#node-panel").inner_text()
    shown = reasons.evaluate_all("(spans) => spans.map((span) => [span.textContent, span.title])")
    assert ["300 tokens < 2K: passed whole", "data-transfer-protocol §5.1"] in shown
    assert ["text data is passed as summary", "data-transfer-protocol §5.3"] in shown


@pytest.mark.parametrize("width", WIDTHS)
def test_it_fits_a_transitions_from_and_to_in_its_settings(page_for, api, demo, width):
    from tests.workflow_edits import edit_workflow

    def long_ids(document):  # ids of some 25 characters, as people write them
        ids = {node["id"] for node in document["nodes"]}
        for node in document["nodes"]:
            node["id"] = f"{node['id']}_of_the_release"
        for transition in document["transitions"]:
            for end in ("from", "to", "on_failure"):
                if transition.get(end) in ids:
                    transition[end] = f"{transition[end]}_of_the_release"

    edit_workflow("release_review", long_ids)
    page = page_for(api.author.user)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/workflows/release_review/")
    page.wait_for_function("window.workflowEditor && window.workflowEditor.cy.edges().length > 0")
    page.evaluate("() => { window.workflowEditor.cy.edges('[transition]')[0].emit('tap'); }")  # returns nothing: a collection is costly to send back
    panel = page.locator("#editor-panel")
    expect(panel.locator("h2").first).to_have_text("Transition")
    # Each select stays in the panel and shows the whole id it holds (measured in its own font).
    fits = panel.evaluate("""(panel) => {
        const edge = panel.getBoundingClientRect().right - parseFloat(getComputedStyle(panel).paddingRight);
        const pen = document.createElement('canvas').getContext('2d');
        return [...panel.querySelectorAll('.endpoints select')].map((select) => {
            const style = getComputedStyle(select);
            pen.font = `${style.fontSize} ${style.fontFamily}`;
            const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 20;  // the arrow
            return [select.value, select.getBoundingClientRect().right <= edge + 0.5,
                    pen.measureText(select.selectedOptions[0].text).width <= room];
        });
    }""")
    assert fits == [["draft_of_the_release", True, True], ["review_of_the_release", True, True]]


def test_a_table_wider_than_its_place_scrolls_in_a_frame_that_says_so(page_for, api, runs):
    page = page_for(api.author.user)
    page.set_viewport_size({"width": 800, "height": 900})
    page.goto(f"/executions/{runs['first'].execution_id}/")
    frame = page.locator(".table-frame:has(table.node-runs)")
    scroller = frame.locator(".table-scroll")
    assert scroller.evaluate("(box) => box.scrollWidth > box.clientWidth"), "the node runs table is wider at 800 px"
    expect(frame).to_have_class(re.compile(r"\bmore-right\b"))  # the shadow and "scroll →" on the right
    assert scroller.get_attribute("tabindex") == "0" and "scrolls sideways" in scroller.get_attribute("aria-label")

    scroller.evaluate("(box) => { box.scrollLeft = box.scrollWidth; }")  # scrolled to the end: the cue moves left
    expect(frame).to_have_class(re.compile(r"\bmore-left\b"))
    expect(frame).not_to_have_class(re.compile(r"\bmore-right\b"))
