"""A node whose agent has tools, on the run page in a real browser: the node's panel shows
its conversation — each model turn, the tool calls it asked for (arguments and result
folded, a failed call's code and message), the final answer, a turn's budget — with a
result holding HTML shown as text; the timeline marks each call inside the node's bar."""
import re

import pytest
from playwright.sync_api import expect

from tests.executions.node_kinds.test_tool_loop import run
from tests.pages.conftest import screenshot
from tests.pages.test_layout import watch_console

pytestmark = pytest.mark.django_db(transaction=True)

HTML = "<script>window.pwned=1</script><b>bold</b>"


def tool_run(workspace):
    """A run whose one node read a file holding HTML, and asked for a search with an argument
    the tool does not take (refused, and returned to the model as an error); then answered."""
    (workspace / "note.txt").write_text(HTML)
    calls = [{"name": "builtin.read_file", "arguments": {"path": "note.txt"}},
             {"name": "builtin.knowledge_search", "arguments": {"query": "budget", "colour": "red"}}]
    execution, node = run("tool_test_call", {"calls": calls}, tools=["builtin.*"])
    assert execution.status == "success", execution.ended_reason
    return execution, node


def test_the_node_panel_reads_as_the_conversation_and_shows_a_result_as_text(page_for, api, demo, no_tasks,
                                                                              settings):
    execution, node = tool_run(settings.WORKSPACE_ROOT)
    page = page_for(api.viewer.user)
    said = watch_console(page)
    page.goto(f"/executions/{execution.execution_id}/?node=ask&run={node.pk}#node-panel")

    conversation = page.locator("#node-panel .attempt[open] .conversation")
    turns = conversation.locator(":scope > li.turn")
    expect(turns).to_have_count(2)
    first, final = turns.nth(0), turns.nth(1)
    expect(first.locator(".turn-head")).to_contain_text("Model turn 1")
    expect(first.locator(".turn-head")).to_contain_text(f"{node.turns[0]['tokens_in']:,} in")
    expect(final.locator(".turn-head")).to_contain_text("Model turn 2: the final answer")
    expect(final).to_have_class("turn final")
    expect(final.locator(".turn-text")).to_contain_text("TOOL_ARGUMENTS_INVALID")  # the answer: the calls' statuses

    read, search = first.locator(".tool-call").nth(0), first.locator(".tool-call").nth(1)
    expect(first.locator(".tool-call")).to_have_count(2)
    expect(read.locator(".tool-name")).to_have_text("builtin.read_file")
    expect(read.locator(".tool-status")).to_have_text("success")
    expect(search.locator(".tool-status")).to_have_text("TOOL_ARGUMENTS_INVALID")
    expect(search.locator(".tool-error")).to_contain_text("'colour' was unexpected")
    assert search.locator("details.tool-result").count() == 0  # a failed call has no result

    # Arguments and result are folded until asked for; the result is shown, never run.
    result = read.locator("details.tool-result")
    expect(result.locator("pre")).to_be_hidden()
    result.locator("summary").click()
    expect(result.locator("pre")).to_be_visible()
    expect(result.locator("pre")).to_contain_text(HTML)
    read.locator("details.tool-arguments summary").click()
    expect(read.locator("details.tool-arguments pre")).to_have_text('{\n  "path": "note.txt"\n}')
    assert page.locator("#node-panel b:text-is('bold'), #node-panel script").count() == 0
    assert page.evaluate("window.pwned") is None

    # The second turn's budget: the results it was given, against the node's limit.
    budget = final.locator("details.turn-budget")
    expect(budget.locator("summary")).to_contain_text(f"of {node.turns[1]['context']['context_limit']:,} tokens")
    budget.locator("summary").click()
    expect(budget.locator(".budget-legend")).to_contain_text("builtin.read_file result (call_1_1)")
    screenshot(page, "execution_tool_calls")

    # The timeline: a mark for each call inside the node's bar.
    marks = page.locator(f".tl-bar[data-run='{node.pk}'] .tl-call")
    expect(marks).to_have_count(2)
    expect(marks.nth(0)).to_have_attribute("title", f"builtin.read_file · success · {round(node.tool_calls[0]['duration_ms'])} ms")
    expect(marks.nth(1)).to_have_class("tl-call failed")
    assert said == []


def test_a_call_waiting_for_approval_shows_in_the_conversation_of_the_waiting_node(page_for, api, demo, no_tasks):
    execution, node = run("tool_test_search", {"q": "context window"},
                          tools_needing_approval=["builtin.knowledge_search"])
    assert node.status == "waiting"
    page = page_for(api.author.user)
    said = watch_console(page)
    # The overview lists it among the gates waiting for this author, and leads to it.
    page.goto("/")
    waiting = page.locator(f'#gates-pending tr[data-gate="{node.pk}"]')
    expect(waiting).to_contain_text("Let the agent call builtin.knowledge_search?")
    waiting.locator("a.gate-link").click()
    expect(page).to_have_url(re.compile(f"/executions/{execution.execution_id}/"))
    page.goto(f"/executions/{execution.execution_id}/?node=ask&run={node.pk}#node-panel")
    call = page.locator("#node-panel .attempt[open] .conversation .tool-call")
    expect(call).to_have_count(1)
    expect(call).to_have_class("tool-call waiting")
    expect(call.locator(".tool-status")).to_have_text("awaiting approval")
    expect(call).to_contain_text("not run: a person decides first")
    call.locator("details.tool-arguments summary").click()
    expect(call.locator("details.tool-arguments pre")).to_have_text('{\n  "query": "context window"\n}')
    assert call.locator("details.tool-result").count() == 0

    # An author decides it here, as any gate: the calls go on to a worker.
    gate = page.locator(f'#node-panel [data-gate="{node.pk}"]')
    expect(gate.locator(".gate-shown")).to_contain_text("builtin.knowledge_search")
    gate.locator(".gate-comment-input").fill("fine to search")
    gate.get_by_role("button", name="Approve the data of gate ask").click()
    expect(gate.locator(".gate-decided-by")).to_have_text("author-user")
    node.refresh_from_db()
    assert (node.status, node.gate["decision"], node.gate["comment"]) == ("pending", "approve", "fine to search")
    assert said == []
