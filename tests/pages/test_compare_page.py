"""Two runs compared, in a real browser: picked on the list, the two graphs coloured by
difference with their legend, a differing node's panel with both budget bars, the context
decisions side by side and the output's differences, a node's tool calls paired, model
HTML shown as text."""

import re

import pytest
from playwright.sync_api import expect

from tests.executions.test_comparison import tool_call
from tests.pages.conftest import screenshot
from tests.pages.test_derive_requests import watch_errors
from tests.pages.test_executions import CONTEXT, make_execution

pytestmark = pytest.mark.django_db(transaction=True)

XSS = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'


def context(mode: str, passed: int, actions: list[dict]) -> dict:
    """The record of a review that read a 900-token draft and passed `passed` of it."""
    return {**CONTEXT, "task_id": "review",
            "total_input_data": {"draft": {"tokens": 900, "priority": 2, "data_type": "text", "transfer_mode": mode,
                                           "passed_tokens": passed},
                                 "system_prompt": {"tokens": 9, "priority": 1, "data_type": "system_prompt",
                                                   "passed_tokens": 9}},
            "total_tokens": 909,
            "resolution": {"strategy": "transfer_modes", "final_tokens": passed + 9, "within_limit": True,
                           "actions": actions}}


def review(mode: str, passed: int, actions: list[dict], output) -> dict:
    return {"node_id": "review", "status": "success", "output": output, "tokens_in": passed + 9, "tokens_out": 40,
            "context_record": context(mode, passed, actions),
            "resolved_inputs": [{"name": "draft", "transfer_mode": mode, "reason": f"{mode} chosen",
                                 "resolved_tokens": 900, "passed_tokens": passed, "batches": 0, "passed": True}]}


@pytest.fixture
def two_runs(demo):
    """Two runs of release_review: the same draft; reviews that passed the draft differently
    and came to other verdicts; and a publish only the second run reached."""
    draft = {"node_id": "draft", "status": "success", "output": {"text": "Release notes"}, "tokens_in": 300,
             "tokens_out": 80, "context_record": context("full", 300, [])}
    older = make_execution("release_review", [
        draft,
        review("summary", 300, [{"data": "draft", "action": "summarize", "original_tokens": 900, "reduced_tokens": 300,
                                 "reason": "over the summary threshold", "stage": "transfer"}],
               {"verdict": "revise", "notes": ["too long"]}),
    ], execution_id="exec_compare_a")
    newer = make_execution("release_review", [
        draft,
        review("reference", 60, [{"data": "draft", "action": "reference", "original_tokens": 900, "reduced_tokens": 60,
                                  "reason": "passed by reference", "stage": "transfer"}],
               {"verdict": "approve", "notes": ["too long", XSS]}),
        {"node_id": "publish", "status": "success", "output": {"url": "https://example.org/r"}, "tokens_in": 70,
         "tokens_out": 10},
    ], execution_id="exec_compare_b")
    return older, newer


def click_graph_node(page, side: str, node_id: str) -> None:
    """Click a node of one side's graph where cytoscape drew it, once the scroll has settled."""
    page.locator(f"#graph-{side}").scroll_into_view_if_needed()
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    box = page.locator(f"#graph-{side}").bounding_box()
    point = page.evaluate("([side, id]) => window.switchyard.compareGraphs[side].getElementById(id).renderedPosition()",
                          [side, node_id])
    page.mouse.click(box["x"] + point["x"], box["y"] + point["y"])


def look(page, side: str, node_id: str) -> tuple[str, str]:
    return tuple(page.evaluate(
        "([side, id]) => { const node = window.switchyard.compareGraphs[side].getElementById(id);"
        " return [node.data('look'), node.style('background-color')]; }", [side, node_id]))


def test_it_compares_two_runs_picked_on_the_list(page_for, api, two_runs):
    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    page.goto("/executions/")
    compare = page.locator("#compare-button")
    expect(compare).to_be_disabled()
    page.get_by_label("Pick exec_compare_a to compare").check()
    expect(compare).to_be_disabled()
    page.get_by_label("Pick exec_compare_b to compare").check()
    expect(compare).to_be_enabled()
    compare.click()
    page.wait_for_url("**/executions/compare/?a=exec_compare_a&b=exec_compare_b")

    # The two graphs, each node coloured by how it compares; the legend says what each colour is.
    page.wait_for_function("() => window.switchyard.compareGraphs && window.switchyard.compareGraphs.b")
    legend = page.locator("#compare-legend")
    for words in ("same (1)", "differs (1)", "only in this run (0 in A, 1 in B)", "not run"):
        expect(legend).to_contain_text(words)
    assert look(page, "a", "draft") == look(page, "b", "draft") == ("same", "rgb(227,241,231)")
    assert look(page, "a", "review") == look(page, "b", "review") == ("differs", "rgb(201,138,18)")
    assert look(page, "a", "publish") == ("not-run", "rgb(255,255,255)")
    assert look(page, "b", "publish") == ("only-here", "rgb(47,111,219)")
    assert look(page, "a", "compliance")[0] == look(page, "b", "compliance")[0] == "not-run"

    # The table marks the cells that differ.
    row = page.locator(".compare-table tr[data-node='review']")
    expect(row.locator("td.differs[data-field='tokens_in']")).to_have_text("309 → 69")
    expect(row.locator("td.differs[data-field='output']")).to_have_text("2 differences")
    expect(row.locator("td.differs[data-field='context']")).to_have_text("3 differ")
    expect(page.locator(".compare-table tr[data-node='draft'] td.differs")).to_have_count(0)

    # A differing node's panel: both budget bars, the decisions side by side, the output's differences.
    click_graph_node(page, "a", "review")
    panel = page.locator("#compare-panel")
    expect(panel.locator("h2")).to_contain_text("review")
    expect(page.locator(".compare-table tr.chosen")).to_have_attribute("data-node", "review")
    bars = panel.locator(".budget-side")
    expect(bars).to_have_count(2)
    expect(bars.nth(0)).to_have_attribute("data-side", "a")
    expect(bars.nth(0).locator(".budget-summary")).to_contain_text("309 of 4,050 tokens passed")
    expect(bars.nth(1).locator(".budget-summary")).to_contain_text("69 of 4,050 tokens passed")
    expect(panel.locator(".compare-facts tr.differs[data-field='tokens_in']")).to_have_count(1)
    expect(panel.locator(".compare-facts tr.differs[data-field='status']")).to_have_count(0)
    inputs = panel.locator(".compare-decisions").nth(0)
    expect(inputs.locator("tr.differs .changed[data-field='transfer_mode']").nth(0)).to_have_text("summary")
    expect(inputs.locator("tr.differs .changed[data-field='transfer_mode']").nth(1)).to_have_text("reference")
    actions = panel.locator(".compare-decisions").nth(1).locator("tbody tr")
    expect(actions).to_have_count(2)  # summarised in A only, referenced in B only
    expect(actions.nth(0)).to_contain_text("summarize")
    expect(actions.nth(0).locator("td.absent")).to_have_text("none")
    expect(panel.locator(".output-diff tbody tr")).to_have_count(2)
    verdict = panel.locator(".output-diff tr[data-path='/verdict']")
    expect(verdict).to_have_class("op-changed")
    expect(verdict.locator("td").nth(2)).to_have_text("revise")
    expect(verdict.locator("td").nth(3)).to_have_text("approve")
    added = panel.locator(".output-diff tr[data-path='/notes/1']")
    expect(added).to_have_class("op-added")
    expect(added).to_contain_text("<script>window.pwned=1</script>")  # shown, not run
    assert page.evaluate("() => window.pwned") is None
    screenshot(page, "execution-compare")

    # A node run only B has, from the table: A's side says so.
    page.locator(".compare-table tr[data-node='publish'] a").click()
    expect(panel.locator("h2")).to_contain_text("publish")
    expect(panel.locator(".budget-side[data-side='a']")).to_contain_text("Not run in this run.")
    expect(panel.locator(".budget-side[data-side='b'] .budget-empty")).to_contain_text("No context record")
    expect(panel).to_contain_text("Only run B has this node run")
    assert "panel=publish" in page.url  # the open panel, kept in the address
    assert errors == []


def test_it_keeps_compare_off_for_runs_of_two_workflows(page_for, api, two_runs):
    make_execution("thesis_reading", [], execution_id="exec_thesis")
    page = page_for(api.viewer.user)
    page.goto("/executions/")
    page.get_by_label("Pick exec_compare_a to compare").check()
    page.get_by_label("Pick exec_thesis to compare").check()
    expect(page.locator("#compare-button")).to_be_disabled()
    expect(page.locator("#compare-hint")).to_contain_text("runs of different workflows")
    page.get_by_label("Pick exec_compare_b to compare").check()
    expect(page.locator("#compare-hint")).to_contain_text("3 runs ticked")


@pytest.fixture
def long_runs(demo):
    """Two runs of 120 and 121 node runs of release_review's four nodes in a loop: B's
    61st output differs, and B runs draft a 31st time. The table has three pages."""
    nodes = ["draft", "review", "publish", "compliance"]

    def run(i, text="done"):
        return {"node_id": nodes[i % 4], "status": "success", "output": {"i": i, "text": text}, "tokens_in": 90,
                "tokens_out": 10, "context_record": context("full", 90, [])}

    make_execution("release_review", [run(i) for i in range(120)], execution_id="exec_long_a")
    make_execution("release_review", [run(i, "other" if i == 61 else "done") for i in range(121)],
                   execution_id="exec_long_b")


def test_it_shows_a_node_whose_pair_is_on_another_page_and_filters_the_table(page_for, api, long_runs):
    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    page.goto("/executions/compare/?a=exec_long_a&b=exec_long_b")
    page.wait_for_function("() => window.switchyard.compareGraphs && window.switchyard.compareGraphs.b")
    expect(page.locator(".compare-table tbody tr")).to_have_count(50)
    expect(page.locator("#compare-scope")).to_contain_text("Pairs 1–50 of 121: the output and the context decisions "
                                                           "are compared for these 50 only.")
    expect(page.locator("#pair-counts")).to_have_text("119 same · 1 differ · 0 only in A · 1 only in B")

    # compliance's pairs are all on the third page: its last one is fetched from the API, compared in full.
    assert page.locator(".compare-table tr[data-node='compliance']").count() == 0
    click_graph_node(page, "b", "compliance")
    panel = page.locator("#compare-panel")
    expect(panel.locator("h2")).to_contain_text("compliance")
    expect(panel).to_contain_text("round 30 · attempt 1")
    expect(panel.locator(".output-same")).to_have_text("The outputs are the same.")
    expect(panel.locator(".budget-side")).to_have_count(2)
    assert "panel=compliance" in page.url
    everything = panel.locator("a.node-pairs-link")
    expect(everything).to_have_text("All 30 pairs of this node")

    # The link shows that node's pairs alone, its panel open on its outcome.
    everything.click()
    # The new page opens the node's panel and rewrites its URL with `panel=` as it does, which
    # may come before a wait for the link's URL begins: expect the node's part of the URL,
    # whatever the page has added to it since.
    expect(page).to_have_url(re.compile(r"/executions/compare/\?a=exec_long_a&b=exec_long_b&node=compliance\b"))
    expect(page.locator(".compare-table tbody tr")).to_have_count(30)
    expect(page.locator(".compare-table tr[data-node='compliance']")).to_have_count(30)
    expect(page.locator("#compare-panel h2")).to_contain_text("compliance")
    expect(page.locator(".compare-table tr.chosen")).to_have_attribute("data-pair", "120")

    # The filter: every pair that is not the same, for every node.
    page.locator("#compare-verdict").select_option("not_same")
    page.locator("#compare-node").select_option("")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**verdict=not_same**")
    rows = page.locator(".compare-table tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_have_attribute("data-node", "draft")
    expect(rows.nth(1).locator("td.differs[data-field='output']")).to_have_text("1 difference")
    expect(page.locator("#compare-scope")).to_contain_text("Pairs 1–2 of 2 that match")
    assert errors == []


def test_it_shows_no_context_budget_for_an_edited_copy_that_never_ran(page_for, api, demo):
    draft = {"node_id": "draft", "status": "success", "output": {"text": "Release notes"}, "tokens_in": 300,
             "tokens_out": 80, "context_record": context("full", 300, [])}
    source = make_execution("release_review", [draft], execution_id="exec_source")
    make_execution("release_review", [{**draft, "kind": "edited", "output": {"text": "Edited notes"}}],
                   execution_id="exec_rerun", rerun_of=source)
    page = page_for(api.viewer.user)
    page.goto("/executions/compare/?a=exec_source&b=exec_rerun")
    page.wait_for_function("() => window.switchyard.compareGraphs && window.switchyard.compareGraphs.b")
    click_graph_node(page, "b", "draft")
    bars = page.locator("#compare-panel .budget-side")
    expect(bars.nth(0).locator(".budget-summary")).to_contain_text("309 of 4,050 tokens passed")
    expect(bars.nth(1)).to_contain_text("Did not run: an edited copy of the run it was re-run from.")
    expect(bars.nth(1).locator(".budget-summary")).to_have_count(0)


def test_it_pairs_a_nodes_tool_calls_and_shows_their_results_as_text(page_for, api, demo):
    read = "builtin.read_file"
    draft = {"node_id": "draft", "status": "success", "output": {"text": "Release notes"}}
    for execution_id, result in (("exec_tools_a", "# Notes"), ("exec_tools_b", XSS)):
        make_execution("release_review", [{**draft, "tool_calls": [
            tool_call("call_1_1", read, {"path": "notes.md"}, result),
            tool_call("call_1_2", read, {"path": "gone.md"}, "no such file", status="TOOL_ERROR")]}],
            execution_id=execution_id)
    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    page.goto("/executions/compare/?a=exec_tools_a&b=exec_tools_b")
    page.locator(".compare-table tr[data-node='draft'] a").click()
    calls = page.locator("#compare-panel .compare-tool-calls tbody tr")
    expect(calls).to_have_count(2)
    expect(calls.nth(0)).to_have_attribute("data-tool-verdict", "different_result")
    expect(calls.nth(0)).to_contain_text("different result")
    expect(calls.nth(0)).to_contain_text('"path": "notes.md"')
    expect(calls.nth(1)).to_have_attribute("data-tool-verdict", "same_result")
    expect(calls.nth(1).locator("code.error-code").first).to_have_text("TOOL_ERROR")
    result_b = calls.nth(0).locator("td").nth(3).locator("details.tool-result")
    result_b.locator("summary").click()
    expect(result_b.locator("pre")).to_contain_text("<script>window.pwned=1</script>")  # shown, not run
    assert page.evaluate("() => window.pwned") is None
    assert errors == []
