"""A run's page in a real browser as it reads a run a piece at a time: a run of 20,000 node
runs opens with its counts and graph, its timeline counted in slices of time, zoomed and
moved until its node runs show one by one, and a node's panel lists its runs a page at a
time; a small run's timeline draws each node run, and zooms and comes back to the whole
run; a large run that goes on is followed without asking more often than once a second.
Node runs are written straight to the database."""
import re
from datetime import datetime, timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from core.documents import import_documents
from executions.models import Execution, NodeRun
from executions.page_selectors import cost_text
from tests.pages.test_derive_requests import watch_errors
from tests.pages.test_executions import make_execution
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)

# A state machine that loops: plan → act → check → plan … until check says it is done.
LOOP = {
    "workflow_id": "long_loop", "name": "A long loop (state machine)", "topology": "state_machine",
    "nodes": [{"id": "plan", "agent_ref": "Drafter", "input_mapping": {}},
              {"id": "act", "agent_ref": "Reviewer", "input_mapping": {}},
              {"id": "check", "agent_ref": "Publisher", "input_mapping": {}}],
    "transitions": [{"from": "plan", "to": "act"}, {"from": "act", "to": "check"},
                    {"from": "check", "to": "plan", "condition": "output.again"}],
}
STEP_MS = 60  # a node run starts every 60 ms, and takes 45
FAILS_EVERY = 41  # an act whose sequence number is a multiple of this fails once (a timeout), then is retried
COST = 30_000_000  # $0.00003 a run, in units of 10⁻¹² USD
MAX_TIMELINE_ELEMENTS = 2000
CALL = {"purpose": "node", "backend": "hosted", "model": "gpt-4o-mini", "tokens_in": 420, "tokens_out": 38,
        "cached_in": 0, "usage": "reported", "cost": "0.000030000000"}


def long_run(count: int, *, status: str = "success", execution_id: str = "exec_long") -> Execution:
    """A run of the loop with `count` node runs, as a worker would have left them (light
    fields, a small output, the transition taken), written in batches; with `status`
    running, its last node run is still going."""
    import_documents([LOOP])
    workflow = Workflow.objects.get(workflow_id="long_loop")
    agents = {node.node_id: node.agent for node in workflow.nodes.select_related("agent")}
    versions = {node_id: agent.versions.order_by("-id").first() for node_id, agent in agents.items()}
    going = status == "running"
    start = timezone.now() - timedelta(milliseconds=STEP_MS * count + (0 if going else 2000))
    end = start + timedelta(milliseconds=STEP_MS * (count - 1) + 45)
    execution = Execution.objects.create(execution_id=execution_id, workflow=workflow, status=status,
                                         started_at=start, completed_at=None if going else end, input={"goal": "loop"})
    priced = 0
    following = {"plan": "act", "act": "check", "check": "plan"}
    node_id, attempt, batch = "plan", 1, []
    for sequence in range(1, count + 1):
        began = start + timedelta(milliseconds=STEP_MS * (sequence - 1))
        last = sequence == count
        fails = node_id == "act" and attempt == 1 and sequence % FAILS_EVERY == 0
        running = going and last
        if fails:
            ended = {"status": "failed", "error_code": "TIMEOUT", "error": "the model took longer than 30 s",
                     "decision": None, "output": None}
        elif running:
            ended = {"status": "running", "decision": None, "output": None}
        else:
            done = node_id == "check" and last
            ended = {"status": "success", "output": {"step": sequence, "again": not done},
                     "decision": {"action": "end"} if done else {"action": "next", "node_id": following[node_id]}}
        batch.append(NodeRun(
            execution=execution, node_id=node_id, agent=agents[node_id], agent_version=versions[node_id],
            kind="first" if attempt == 1 else "retry", attempt=attempt, sequence=sequence, dispatches=1,
            started_at=began, completed_at=None if running else began + timedelta(milliseconds=45),
            duration_ms=None if running else 45, worker="worker-1@switchyard", backend="hosted", model="gpt-4o-mini",
            tokens_in=None if running else 420, tokens_out=None if running else 38, calls=[] if running or fails else [CALL],
            cost=0 if running or fails else COST, prompt=f"Step {sequence}: go on.", **ended))
        priced += batch[-1].cost
        if len(batch) == 2000:
            NodeRun.objects.bulk_create(batch)
            batch = []
        node_id, attempt = (node_id, 2) if fails else (following[node_id], 1)
    NodeRun.objects.bulk_create(batch)
    Execution.objects.filter(pk=execution.pk).update(cost=priced)
    execution.refresh_from_db()
    return execution


def shown_window(page) -> tuple[datetime, datetime]:
    """The window of time the timeline draws (both ends read at once, from one drawing)."""
    ends = page.evaluate("() => { const box = document.getElementById('timeline'); return [box.dataset.since, box.dataset.until]; }")
    return tuple(datetime.fromisoformat(end) for end in ends)


def window_changes(page, before: tuple[datetime, datetime]) -> tuple[datetime, datetime]:
    """Wait until the timeline draws another window than `before` (15 s at most); return it."""
    for _ in range(150):
        after = shown_window(page)
        if after != before:
            return after
        page.wait_for_timeout(100)
    raise AssertionError(f"the timeline still draws {before}")


def timeline_elements(page) -> int:
    return page.evaluate("document.querySelectorAll('#timeline *').length")


def test_a_run_of_20000_node_runs_opens_zooms_to_its_node_runs_and_lists_a_nodes_runs(page_for, api, demo):
    execution = long_run(20_000)
    failed = execution.node_runs.filter(status="failed").count()
    check_runs = execution.node_runs.filter(node_id="check").count()
    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    asked = []
    page.on("request", lambda request: asked.append(request.url) if "/api/executions/" in request.url else None)
    page.goto(f"/executions/{execution.execution_id}/")

    # The header, the graph and the timeline, from two reads: the summary and the timeline's window.
    timeline = page.locator("#timeline")
    expect(timeline).to_have_attribute("data-drawn", "slices")
    expect(page.locator("#run-status")).to_have_text("success")
    expect(page.locator("#run-counts")).to_have_text(f"20000 ({failed} failed)")
    expect(page.locator("#run-cost")).to_have_text(cost_text((20_000 - failed) * COST))
    assert page.evaluate("""() => window.switchyard.executionGraph.nodes().map((node) => node.data('status'))""") == [
        "success"] * 3
    assert page.evaluate("() => window.switchyard.executionGraph.edges('.taken').length") == 3  # the loop, closed
    # Nothing else of the run is read: what started it (a trigger and its callbacks) is the third.
    paths = sorted(url.split(f"/api/executions/{execution.execution_id}", 1)[1].split("?")[0] for url in asked)
    assert paths == ["", "/timeline", "/trigger"], asked
    lanes = timeline.locator(".tl-row")
    expect(lanes).to_have_count(3)
    expect(lanes.locator(".tl-label")).to_have_text([re.compile(rf"^{node}[\d,]+$") for node in ("plan", "act", "check")])
    assert sum(timeline.locator(".tl-runs").evaluate_all("(lanes) => lanes.map((lane) => Number(lane.dataset.runs))")) == 20_000
    assert timeline.locator(".tl-slice").count() > 100 and timeline.locator(".tl-bar").count() == 0
    assert timeline_elements(page) < MAX_TIMELINE_ELEMENTS
    act = timeline.locator(".tl-row[data-node='act'] .tl-slice.failed").first  # a slice holding a timeout
    expect(act).to_have_attribute("title", re.compile(r"^act · \+[^·]+ to \+[^·]+ · \d+ failed, \d+ success · click to zoom in$"))
    expect(page.locator("#timeline-span")).to_contain_text("20,000 node runs, counted in slices of")
    expect(page.locator("[data-timeline=whole]")).to_be_disabled()

    # Zoomed in: a quarter of the run, still counted.
    whole = shown_window(page)
    page.click("[data-timeline=in]")
    zoomed = window_changes(page, whole)
    expect(page.locator("#timeline-span")).to_have_text(re.compile(r"^\+\d+ min \d\d s to \+\d+ min \d\d s \(\d+ min \d\d s\) of 19 min 59 s · [\d,]+ node runs"))
    expect(page.locator("[data-timeline=whole]")).to_be_enabled()
    assert timeline_elements(page) < MAX_TIMELINE_ELEMENTS
    # Moved: the lanes dragged to the right show what came before; a sideways scroll, what came after.
    track = timeline.locator(".tl-row[data-node='plan'] .tl-track").bounding_box()
    middle = (track["x"] + track["width"] / 2, track["y"] + track["height"] / 2)
    page.mouse.move(*middle)
    page.mouse.down()
    page.mouse.move(middle[0] + track["width"] / 4, middle[1], steps=5)
    page.mouse.up()
    dragged = window_changes(page, zoomed)
    assert dragged[0] < zoomed[0] and dragged[1] < zoomed[1]
    expect(page.locator("#node-panel h2")).to_have_text("Node")  # the drag opened nothing
    page.mouse.move(*middle)
    page.mouse.wheel(track["width"] / 2, 0)
    scrolled = window_changes(page, dragged)
    assert scrolled[0] > dragged[0]

    # A slice clicked: its node runs one by one, each a bar.
    timeline.locator(".tl-row[data-node='act'] .tl-slice").nth(3).click()
    expect(timeline).to_have_attribute("data-drawn", "runs")
    bars = timeline.locator(".tl-bar")
    assert 0 < bars.count() <= 400 and timeline_elements(page) < MAX_TIMELINE_ELEMENTS
    bar = timeline.locator(".tl-row[data-node='act'] .tl-bar.success").first
    run_id = bar.get_attribute("data-run")
    bar.click()
    opened = page.locator(f"#node-panel #run-{run_id}[open]")
    step = NodeRun.objects.get(pk=run_id).sequence
    expect(opened.locator("pre.output")).to_contain_text(f'"step": {step}')  # its whole record, read when opened
    expect(timeline.locator(f".tl-bar.chosen[data-run='{run_id}']")).to_have_count(1)

    # A node's panel: its latest runs (the latest open, whole), the trail, and older ones on demand.
    page.click(".tl-row[data-node='check'] .tl-label")
    panel = page.locator("#node-panel")
    expect(panel.locator("h2")).to_have_text("Node check")
    expect(panel.locator(".attempt")).to_have_count(20)
    expect(panel.locator(".panel-more")).to_contain_text(f"Showing the last 20 of {check_runs:,} runs of this node.")
    expect(panel.locator(".trail-chip").first).to_have_text(f"… {check_runs - 12:,} earlier runs …")
    latest = execution.node_runs.filter(node_id="check").order_by("-sequence").first()
    expect(panel.locator(".attempt").first).to_have_attribute("data-run", str(latest.pk))
    expect(panel.locator(f"#run-{latest.pk}[open] pre.output")).to_contain_text(f'"step": {latest.sequence}')
    expect(panel.locator(".node-cost")).to_contain_text(f"over {check_runs:,} runs")
    panel.locator("button[data-older]").click()
    expect(panel.locator(".attempt")).to_have_count(40)
    expect(panel.locator(".panel-more")).to_contain_text(f"Showing the last 40 of {check_runs:,}")

    # The whole run again; the table is the server's first page.
    page.click("[data-timeline=whole]")
    expect(timeline).to_have_attribute("data-drawn", "slices")
    assert shown_window(page) == whole
    expect(page.locator("table.node-runs tbody tr")).to_have_count(50)
    expect(page.locator("#runs-pager")).to_contain_text("page 1 of 400")
    assert errors == []


def test_a_large_run_that_goes_on_is_followed_once_a_second_at_most(page_for, api, demo):
    execution = long_run(5000, status="running", execution_id="exec_going")
    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    rounds = []
    page.on("request", lambda request: rounds.append(request.url)
            if request.url.endswith(f"/api/executions/{execution.execution_id}") else None)
    page.goto(f"/executions/{execution.execution_id}/?node=plan")
    expect(page.locator("#run-live")).to_be_visible()
    expect(page.locator("#run-progress")).to_contain_text("running: ")
    expect(page.locator("#node-panel .attempt")).to_have_count(20)
    page.wait_for_timeout(3500)
    assert 3 <= len(rounds) <= 5  # one at the start, then one a second or less often

    # The run's last node run ends, and the run with it: the page shows it, then stops asking.
    last = execution.node_runs.order_by("-sequence").first()
    NodeRun.objects.filter(pk=last.pk).update(status="success", completed_at=timezone.now(), duration_ms=45,
                                              output={"step": last.sequence, "again": False})
    Execution.objects.filter(pk=execution.pk).update(status="success", completed_at=timezone.now())
    expect(page.locator("#run-status")).to_have_text("success")
    expect(page.locator("#run-live")).to_be_hidden()
    expect(page.locator(f".tl-row[data-node='{last.node_id}'] .dot.success")).to_have_count(1)
    ended = len(rounds)
    page.wait_for_timeout(2000)
    assert len(rounds) == ended and errors == []


def test_a_small_runs_timeline_draws_each_run_and_zooms_and_comes_back(page_for, api, demo):
    execution = make_execution("thesis_reading", [
        {"node_id": "task_scholar_001", "status": "success", "output": {"n": 1}},
        {"node_id": "task_scholar_001", "status": "failed", "kind": "retry", "attempt": 2, "error_code": "TIMEOUT"},
        {"node_id": "task_validator_001", "status": "success"},
    ], execution_id="exec_small_timeline")
    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    page.goto(f"/executions/{execution.execution_id}/")
    timeline = page.locator("#timeline")
    expect(timeline).to_have_attribute("data-drawn", "runs")
    expect(timeline.locator(".tl-row")).to_have_count(3)  # every node of the graph, one that did not run too
    expect(timeline.locator(".tl-row[data-node='task_scholar_001'] .tl-bar")).to_have_text(["round 1 · attempt 1", "round 1 · attempt 2 · retry"])
    expect(timeline.locator(".tl-row[data-node='task_vault_001'] .tl-bar")).to_have_count(0)
    expect(page.locator("#timeline-span")).to_have_text(re.compile(r"^\d+ ms from the first node's start$"))
    timeline.locator(".tl-bar.failed").click()
    expect(page.locator("#node-panel .attempt[open] .attempt-error code")).to_have_text("TIMEOUT")

    loop = long_run(7, execution_id="exec_loop_7")
    first = loop.node_runs.get(sequence=1)
    page.goto(f"/executions/{loop.execution_id}/")
    bars = timeline.locator(".tl-bar")
    expect(bars).to_have_count(7)
    whole = shown_window(page)
    page.click("[data-timeline=in]")
    zoomed = window_changes(page, whole)
    expect(page.locator("#timeline-span")).to_have_text(re.compile(r"^\+\d+ ms to \+\d+ ms \(\d+ ms\) of \d+ ms$"))
    assert 0 < bars.count() < 7 and timeline.locator(f".tl-bar[data-run='{first.pk}']").count() == 0
    earlier = page.locator("[data-timeline=earlier]")
    while earlier.is_enabled():  # back to the run's start, half a window at a time
        page.click("[data-timeline=earlier]")
        zoomed = window_changes(page, zoomed)
    assert abs(zoomed[0] - whole[0]) < timedelta(milliseconds=1) and zoomed[1] < whole[1]  # the page counts in ms
    expect(timeline.locator(f".tl-bar[data-run='{first.pk}']")).to_have_count(1)
    assert bars.count() < 7
    page.click("[data-timeline=whole]")
    expect(bars).to_have_count(7)
    assert shown_window(page) == whole
    assert errors == []
