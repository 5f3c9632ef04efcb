"""What model calls cost, on the pages: a run's page (its total, each node's cost in the
graph, the timeline and the table, each node run's calls in its panel, the judge's calls,
and a run stopped by its budget), the executions list ordered by cost, the charts of what
the last runs cost on an agent's and a workflow's page (and where an agent's window limits
came from), a node plan's cost estimate, and the workflow editor's cost limits.

The runs on priced models are real: the demo chain on a real worker, served by two loopback
OpenAI-compatible servers that report usage (as tests/executions/test_costs_worker.py), so
every figure on the page is checked against the record the worker stored.
"""
import re
from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from playwright.sync_api import expect

from agents.models import Agent
from executions.page_selectors import cost_text
from executions.services import execution_start
from tests.agents.backends.chat_server import ChatServer
from tests.executions.conftest import thesis_reply, wait_for
from tests.executions.test_costs_worker import HOSTED_USAGE, LOCAL_USAGE, move
from tests.pages.conftest import screenshot, signed_in
from tests.pages.test_derive_requests import watch_errors
from tests.pages.test_execution_browser import click_graph_node
from tests.pages.test_executions import make_execution
from tests.replay import load_demo
from tests.workflow_edits import edit_workflow
from workflows.models import Workflow

UNITS = 10 ** 12


def usd_text(value: str | None) -> str:
    """A USD decimal string as the pages write it ("0.000048150000" → "$0.00004815")."""
    return cost_text(int(Decimal(value) * UNITS))


def call(purpose="node", backend="hosted", model="gpt-4o-mini", tokens_in=1234, tokens_out=56, cached_in=0,
         usage="reported", cost="0.000068700000"):
    return {"purpose": purpose, "backend": backend, "model": model, "tokens_in": tokens_in, "tokens_out": tokens_out,
            "cached_in": cached_in, "usage": usage, "cost": cost}


def units(value: str) -> int:
    return int(Decimal(value) * UNITS)


BACKENDS = """
[backends.hosted]
kind = "openai_compatible"
base_url = "{hosted}"
api_key_env = "HOSTED_KEY"
max_retries = 0

[backends.local]
kind = "openai_compatible"
base_url = "{local}"
max_retries = 0

[models."local-llama"]
context_window = 32768
input_price = "0.02"
output_price = "0.05"
"""


def use_backends(settings, path, hosted_url="http://127.0.0.1:9/v1", local_url="http://127.0.0.1:9/v1"):
    """The two named backends (and local-llama's prices) in this process's settings; the file
    for workers to read. Nothing is called unless a run is."""
    from agents.backends.config import read_backends_file

    path.write_text(BACKENDS.format(hosted=hosted_url, local=local_url))
    loaded = read_backends_file(path)
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, **loaded["backends"]}
    settings.MODEL_OVERRIDES = loaded["models"]
    return path


@pytest.fixture
def priced(workers, settings, tmp_path):
    """The demo, with workers that can read its workspace, and two loopback servers behind
    the backends `hosted` (gpt-4o-mini, published prices) and `local` (local-llama, priced
    in the operators' file)."""
    settings.WORKSPACE_ROOT = tmp_path
    workers.env["WORKSPACE_ROOT"] = str(tmp_path)
    load_demo(tmp_path)
    with ChatServer() as hosted, ChatServer() as local:
        hosted.reply(usage=HOSTED_USAGE).respond_with(thesis_reply)
        local.reply(usage=LOCAL_USAGE).respond_with(thesis_reply)
        config = use_backends(settings, tmp_path / "backends.toml", hosted.base_url, local.base_url)
        workers.env.update(SWITCHYARD_BACKENDS_FILE=str(config), HOSTED_KEY="sk-hosted")
        yield SimpleNamespace(workers=workers, hosted=hosted, local=local)


# -- a run's page ---------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_run_on_priced_models_shows_each_calls_each_nodes_and_the_runs_cost(page_for, api, priced):
    move("Scholar", "hosted", "gpt-4o-mini")
    move("Validator", "hosted", "gpt-4o-mini")
    move("Knowledge_Vault", "local", "local-llama")
    priced.workers.start(1)
    workflow = Workflow.objects.get(workflow_id="thesis_reading")
    execution = wait_for(execution_start(workflow=workflow, actor=api.author.user), workers=priced.workers, timeout=120)
    assert execution.status == "success", (execution.ended_reason, priced.workers.logs())
    record = api.viewer.record(execution.execution_id)
    runs = {run["node_id"]: run for run in record["node_runs"]}
    assert record["cost_complete"] is True and Decimal(record["cost"]) > 0
    assert sum(units(run["cost"]) for run in runs.values()) == units(record["cost"])  # no judge on this workflow

    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    page.goto(f"/executions/{execution.execution_id}/")
    # The run's total, as the record has it, exactly.
    expect(page.locator("#run-cost")).to_have_text(usd_text(record["cost"]))
    # Each node's: in the timeline, the table and the graph's label and tooltip.
    for node_id, run in runs.items():
        expect(page.locator(f".tl-row[data-node='{node_id}'] .tl-cost")).to_have_text(usd_text(run["cost"]))
        row = page.locator(f"table.node-runs tr:has(a[data-node='{node_id}'])")
        expect(row.locator(".cost-cell")).to_have_text(usd_text(run["cost"]))
        drawn = page.evaluate("""(id) => { const node = window.switchyard.executionGraph.getElementById(id);
            return {label: node.data('label'), cost: node.data('cost'), title: node.data('title')}; }""", node_id)
        assert drawn["label"].split("\n")[-1] == usd_text(run["cost"])
        assert Decimal(drawn["cost"]) == Decimal(run["cost"])
        assert f"cost {usd_text(run['cost'])}" in drawn["title"]
        assert f"{run['tokens_in']:,} → {run['tokens_out']:,} tokens" in drawn["title"]
    # The tooltip shows when the pointer is on a node.
    box = page.locator("#graph").bounding_box()
    point = page.evaluate("() => window.switchyard.executionGraph.getElementById('task_scholar_001').renderedPosition()")
    page.mouse.move(box["x"] + point["x"], box["y"] + point["y"])
    expect(page.locator("#graph")).to_have_attribute("title", re.compile(r"^task_scholar_001: success .* cost \$"))

    # A node's panel: its calls, each with its backend, model, tokens, usage and cost.
    click_graph_node(page, "task_vault_001")
    attempt = page.locator("#node-panel .attempt[open]")
    vault = runs["task_vault_001"]
    expect(attempt.locator(".run-cost")).to_have_text(usd_text(vault["cost"]))
    rows = attempt.locator("table.calls tbody tr")
    expect(rows).to_have_count(len(vault["calls"]))
    assert len(vault["calls"]) == len(priced.local.requests) >= 1  # one call per batch
    for index, made in enumerate(vault["calls"]):
        cells = rows.nth(index).locator("td")
        expect(cells.nth(1)).to_have_text(made["purpose"])
        expect(cells.nth(2)).to_have_text("local")
        expect(cells.nth(3)).to_have_text("local-llama")
        expect(cells.nth(4)).to_have_text(f"{LOCAL_USAGE['prompt_tokens']:,}")
        expect(cells.nth(5)).to_have_text(f"{LOCAL_USAGE['completion_tokens']:,}")
        expect(cells.nth(7)).to_have_text("reported")
        expect(cells.nth(8)).to_have_text(usd_text(made["cost"]))
    expect(attempt.locator("table.calls .calls-total")).to_have_text(usd_text(vault["cost"]))
    expect(page.locator("#node-panel .node-cost")).to_have_text(f"cost {usd_text(vault['cost'])}")
    screenshot(page, "run-costs")

    # The cached input tokens a server reported are shown, priced at the cached price.
    page.click(".tl-row[data-node='task_scholar_001'] .tl-label")
    expect(page.locator("#node-panel h2").first).to_contain_text("task_scholar_001")
    scholar = page.locator("#node-panel .attempt[open] table.calls tbody tr").first
    assert runs["task_scholar_001"]["calls"][0]["cached_in"] == 1000
    expect(scholar.locator("td").nth(6)).to_have_text("1,000")
    expect(scholar.locator("td").nth(8)).to_have_text(usd_text(runs["task_scholar_001"]["calls"][0]["cost"]))
    assert page.locator("#budget-stop").is_hidden()
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_builtin_calls_cost_nothing_unpriced_ones_say_so_and_the_judges_calls_are_listed(page_for, api, demo):
    builtin = [call(backend="builtin", model="builtin", tokens_in=310, tokens_out=42, usage="builtin",
                    cost="0.000000000000")]
    unpriced = [call(purpose="batch 1/2", model="mystery-model", cost=None),
                dict(call(purpose="batch 2/2", usage="counted", cost="0.000068700000"), encoding="o200k_base")]
    judge = [call(purpose="judge", tokens_in=500, tokens_out=20, cost="0.000087000000")]
    execution = make_execution("thesis_reading", [
        {"node_id": "task_scholar_001", "status": "success", "tokens_in": 310, "tokens_out": 42, "calls": builtin},
        {"node_id": "task_validator_001", "status": "success", "tokens_in": 2468, "tokens_out": 112, "calls": unpriced,
         "cost": units("0.0000687"), "cost_complete": False},
    ], execution_id="exec_mixed_costs", cost=units("0.0000687") + units("0.000087"), cost_complete=False, calls=judge)
    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    page.goto(f"/executions/{execution.execution_id}/?node=task_scholar_001")
    # The run's total is at least what was priced: not every call was.
    expect(page.locator("#run-cost .cost.incomplete")).to_have_text("≥ $0.0001557")
    expect(page.locator("#run-cost")).to_contain_text("not every call priced")
    expect(page.locator("#run-cost .run-cost-split")).to_have_text("(nodes $0.0000687, the judge's calls $0.000087)")
    # The builtin is not a model: its calls cost nothing, and say so.
    attempt = page.locator("#node-panel .attempt[open]")
    expect(attempt.locator(".run-cost")).to_have_text("nothing (builtin, not a model)")
    builtin_row = attempt.locator("table.calls tbody tr").first
    expect(builtin_row.locator("td").nth(3)).to_have_text("no model")
    expect(builtin_row.locator("td").nth(7)).to_have_text("builtin")
    expect(builtin_row.locator(".call-cost")).to_have_text("nothing (builtin, not a model)")
    # A model the catalogue has no prices for: "no price", and the node's cost is at least the rest.
    page.click(".tl-row[data-node='task_validator_001'] .tl-label")
    attempt = page.locator("#node-panel .attempt[open]")
    expect(attempt.locator("table.calls tbody tr").nth(0).locator(".call-cost")).to_have_text("no price")
    expect(attempt.locator("table.calls tbody tr").nth(1).locator(".call-cost")).to_have_text("$0.0000687")
    # Tokens counted here say the encoding they were counted in.
    expect(attempt.locator("table.calls tbody tr").nth(1).locator("td.usage")).to_have_text("counted (in o200k_base)")
    expect(attempt.locator(".run-cost")).to_contain_text("≥ $0.0000687")
    expect(page.locator(".tl-row[data-node='task_validator_001'] .tl-cost")).to_have_text("≥ $0.0000687")
    expect(page.locator("table.node-runs tr:has(a[data-node='task_validator_001']) .cost-cell")).to_contain_text(
        "≥ $0.0000687")
    # The judge's calls, outside the nodes.
    judge_box = page.locator("#run-judge-calls")
    judge_box.locator("summary").click()
    expect(judge_box.locator("table.calls tbody tr")).to_have_count(1)
    expect(judge_box.locator("table.calls tbody tr td").nth(1)).to_have_text("judge")
    expect(judge_box.locator(".calls-total")).to_have_text("$0.000087")
    assert errors == []


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_run_stopped_by_its_budget_shows_the_limit_what_was_spent_and_the_refused_calls_bound(page_for, api, priced):
    for agent_id in ("Scholar", "Validator", "Knowledge_Vault"):
        move(agent_id, "hosted", "gpt-4o-mini")
    Agent.objects.filter(agent_id__in=["Scholar", "Validator"]).update(max_output_tokens=1000)
    Agent.objects.filter(agent_id="Knowledge_Vault").update(max_output_tokens=4000)
    edit_workflow("thesis_reading", lambda document: document["limits"].update(max_cost="0.0015"))
    priced.workers.start(1)
    execution = wait_for(execution_start(workflow=Workflow.objects.get(workflow_id="thesis_reading")),
                         workers=priced.workers, timeout=120)
    assert execution.status == "failed" and execution.ended_reason.startswith("BUDGET_EXCEEDED"), priced.workers.logs()
    details = execution.node_runs.get(node_id="task_vault_001").error_details

    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    page.goto(f"/executions/{execution.execution_id}/")
    stop = page.locator("#budget-stop")
    expect(stop).to_be_visible()
    expect(stop.locator("h2")).to_have_text("Stopped by its budget at node task_vault_001")
    expect(stop.locator("[data-figure=limit]")).to_have_text("max_cost $0.0015")
    expect(stop.locator("[data-figure=spent]")).to_have_text(usd_text(details["run_spent"]))
    expect(stop.locator("[data-figure=estimate]")).to_have_text(usd_text(details["estimate"]))
    expect(stop.locator("[data-figure=left]")).to_have_text(
        usd_text(str(Decimal("0.0015") - Decimal(details["run_spent"]))))
    expect(stop).to_contain_text(f"{details['tokens_in']:,} tokens in and up to 4,000 out")
    expect(stop).to_contain_text("the call was not made")
    assert Decimal(details["run_spent"]) == Decimal(execution.cost) / UNITS  # what the run had spent is its cost
    expect(page.locator("#run-cost")).to_have_text(cost_text(execution.cost))
    expect(page.locator("#run-ended-reason")).to_contain_text("BUDGET_EXCEEDED at node 'task_vault_001'")
    # Its node: no call made, the error with its code.
    stop.locator("h2 a").click()
    attempt = page.locator("#node-panel .attempt[open]")
    expect(attempt.locator(".attempt-error code")).to_have_text("BUDGET_EXCEEDED")
    expect(attempt.locator(".calls-none")).to_have_text("No model call.")
    expect(page.locator(".tl-row[data-node='task_vault_001'] .tl-cost")).to_have_text("—")
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_a_node_run_past_its_max_node_cost_and_a_model_without_prices_say_why(page_for, api, demo):
    node_limit = make_execution("thesis_reading", [
        {"node_id": "task_scholar_001", "status": "failed", "error_code": "BUDGET_EXCEEDED",
         "error": "the next call (up to $0.0021) would take the node past its max_node_cost $0.002 (spent $0.0005)",
         "error_details": {"backend": "hosted", "model": "gpt-4o-mini", "tokens_in": 1500, "max_tokens": 3000,
                           "estimate": "0.002100000000", "node_spent": "0.000500000000", "limit": "max_node_cost",
                           "max_node_cost": "0.002000000000"}},
    ], execution_id="exec_node_limit", status="escalated", completed_at=None,
        ended_reason="", escalation={"node_id": "task_scholar_001", "error_code": "BUDGET_EXCEEDED", "error": "…",
                                     "escalate_to": "Orchestrator", "at": "2026-02-03T10:30:00+00:00"})
    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    page.goto(f"/executions/{node_limit.execution_id}/")
    stop = page.locator("#budget-stop")
    expect(stop.locator("[data-figure=limit]")).to_have_text("max_node_cost $0.002")
    expect(stop.locator("[data-figure=spent]")).to_have_text("$0.0005")
    expect(stop.locator("[data-figure=left]")).to_have_text("$0.0015")
    expect(stop.locator("[data-figure=estimate]")).to_have_text("$0.0021")
    expect(stop).to_contain_text("The run waits for a person (on_budget: escalate).")

    unpriced = make_execution("thesis_reading", [
        {"node_id": "task_scholar_001", "status": "failed", "error_code": "BUDGET_EXCEEDED", "error": "no prices",
         "error_details": {"backend": "local", "model": "mystery-model"}},
    ], execution_id="exec_no_prices", status="failed", ended_reason="BUDGET_EXCEEDED at node 'task_scholar_001': …")
    page.goto(f"/executions/{unpriced.execution_id}/")
    expect(page.locator("#budget-stop [data-figure=model]")).to_have_text("local / mystery-model")
    expect(page.locator("#budget-stop")).to_contain_text("has no prices in the catalogue")
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_it_shows_a_run_whose_spend_crossed_its_limit_after_a_call_cost_more_than_was_claimed(page_for, api, demo):
    crossed = make_execution("thesis_reading", [
        {"node_id": "task_scholar_001", "status": "failed", "error_code": "BUDGET_EXCEEDED",
         "error": "the run has spent $0.06004, past its max_cost $0.05: …",
         "error_details": {"limit": "max_cost", "max_cost": "0.050000000000", "run_spent": "0.060040000000",
                           "run_claimed": "0.000000000000", "node_spent": "0.060040000000", "crossed": True,
                           "backend": "hosted", "model": "gpt-4o-mini", "cost": "0.030020000000",
                           "estimate": "0.000900000000", "tokens_in": 30000, "tokens_out": 10, "tokens_counted": 350,
                           "usage": "reported"}},
    ], execution_id="exec_crossed", status="failed", ended_reason="BUDGET_EXCEEDED at node 'task_scholar_001': …")
    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    page.goto(f"/executions/{crossed.execution_id}/")
    stop = page.locator("#budget-stop")
    expect(stop.locator("[data-figure=limit]")).to_have_text("max_cost $0.05")
    expect(stop.locator("[data-figure=spent]")).to_have_text(usd_text("0.060040000000"))
    expect(stop.locator("[data-figure=over]")).to_have_text(usd_text("0.010040000000"))
    expect(stop.locator("[data-figure=cost]")).to_have_text(usd_text("0.030020000000"))
    expect(stop.locator("[data-figure=estimate]")).to_have_text(usd_text("0.000900000000"))
    expect(stop).to_contain_text("30,000 tokens in, reported; 350 counted here before the call")
    expect(stop).to_contain_text("no call was made after it")
    expect(stop).not_to_contain_text("the call was not made")
    assert errors == []


# -- the executions list --------------------------------------------------------------------------


def costed_runs():
    """Five runs of thesis_reading that cost different amounts, one of them not every call priced."""
    made = {}
    for name, cost, complete in (("exec_cost_a", "0.0012", True), ("exec_cost_b", "0.00003", True),
                                 ("exec_cost_c", "0.5", False), ("exec_cost_d", "0", True), ("exec_cost_e", "0.0007", True)):
        made[name] = make_execution("thesis_reading", [{"node_id": "task_scholar_001", "status": "success",
                                                        "cost": units(cost), "cost_complete": complete}],
                                    execution_id=name, cost=units(cost), cost_complete=complete)
    return made


@pytest.mark.django_db
def test_the_list_orders_by_cost_on_the_server_in_the_same_queries(api, demo):
    costed_runs()
    browser = signed_in(api.viewer.user)
    page = browser.get("/executions/", {"sort": "-cost"}).content.decode()
    assert re.findall(r'data-execution-id="(exec_cost_\w)"', page) == [f"exec_cost_{x}" for x in "caebd"]
    assert 'aria-sort="descending"' in page and 'href="?sort=cost"' in page  # the next click: cheapest first
    page = browser.get("/executions/", {"sort": "cost", "workflow": "thesis_reading"}).content.decode()
    assert re.findall(r'data-execution-id="(exec_cost_\w)"', page) == [f"exec_cost_{x}" for x in "dbeac"]
    assert 'href="?workflow=thesis_reading&amp;sort=-cost"' in page  # the filters are kept
    assert "≥ $0.50" in page and "not every call priced" in page and "$0.00003" in page
    assert browser.get("/executions/", {"sort": "'; drop"}).status_code == 200  # an unknown order: newest first

    with CaptureQueriesContext(connection) as few:
        browser.get("/executions/", {"sort": "-cost"})
    for index in range(20):
        make_execution("thesis_reading", [{"node_id": "task_scholar_001", "status": "success"}] * 3,
                       execution_id=f"exec_more_{index}", cost=units("0.0001") * index)
    with CaptureQueriesContext(connection) as many:
        browser.get("/executions/", {"sort": "-cost"})
    assert len(many) == len(few)


@pytest.mark.django_db(transaction=True)
def test_the_list_sorts_by_cost_in_the_browser(page_for, api, demo):
    runs = costed_runs()
    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    page.goto("/executions/?workflow=thesis_reading")
    page.click("#sort-cost")
    page.wait_for_url("**/executions/?workflow=thesis_reading&sort=-cost")
    shown = page.locator("tr[data-execution-id]")
    expect(shown).to_have_count(5)
    order = [row.get_attribute("data-execution-id") for row in shown.all()]
    assert order == sorted(runs, key=lambda name: (-runs[name].cost, -runs[name].created_at.timestamp()))
    expect(page.locator("th.cost-col")).to_have_attribute("aria-sort", "descending")
    expect(page.locator("tr[data-execution-id='exec_cost_c'] .cost-cell")).to_have_text("≥ $0.50 — not every call priced")
    expect(page.locator("tr[data-execution-id='exec_cost_b'] .cost-cell")).to_have_text("$0.00003")
    page.click("#sort-cost")
    page.wait_for_url("**/executions/?workflow=thesis_reading&sort=cost")
    assert [row.get_attribute("data-execution-id") for row in page.locator("tr[data-execution-id]").all()] == order[::-1]
    expect(page.locator("th.cost-col")).to_have_attribute("aria-sort", "ascending")
    page.click("#sort-started")
    page.wait_for_url("**/executions/?workflow=thesis_reading")
    expect(page.locator("th[aria-sort]")).to_contain_text("Started")
    assert errors == []


# -- the charts of what the last runs cost ------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_agent_and_workflow_pages_chart_what_the_last_runs_cost(page_for, api, demo):
    costs = ["0.0012", "0.00003", "0.0007", "0.00041"]
    for index, cost in enumerate(costs):
        make_execution("thesis_reading", [
            {"node_id": "task_scholar_001", "status": "success", "cost": units(cost), "tokens_in": 100, "tokens_out": 10,
             "cost_complete": index != 2},
            {"node_id": "task_validator_001", "status": "success", "cost": units("0.0001")},
        ], execution_id=f"exec_chart_{index}", cost=units(cost) + units("0.0001"), cost_complete=index != 2)
    page = page_for(api.viewer.user)
    errors = watch_errors(page)

    page.goto("/agents/Scholar/")
    chart = page.locator("#cost-chart")
    bars = chart.locator("rect.cost-bar")
    expect(bars).to_have_count(4)
    assert [bar.get_attribute("data-cost") for bar in bars.all()] == [f"{Decimal(cost):.12f}" for cost in costs]
    assert [bar.get_attribute("data-execution") for bar in bars.all()] == [f"exec_chart_{index}" for index in range(4)]
    total = sum(Decimal(cost) for cost in costs)
    expect(chart.locator("[data-figure=total]")).to_have_text(usd_text(str(total)))
    expect(chart.locator("[data-figure=mean]")).to_have_text(usd_text(str(total / 4)))
    expect(chart.locator("[data-figure=incomplete]")).to_contain_text("1 run not every call priced")
    expect(chart.locator("rect.cost-bar.incomplete")).to_have_count(1)
    expect(chart.locator(".cost-summary")).to_contain_text("400 → 40 tokens")
    assert chart.locator("a.cost-bar-link").first.get_attribute("href") == "/executions/exec_chart_0/"
    # The tallest bar is the dearest run; the mean is drawn across.
    heights = [float(bar.get_attribute("height")) for bar in bars.all()]
    assert heights.index(max(heights)) == 0 and chart.locator("line.cost-mean").count() == 1
    # Where its window limits came from.
    expect(page.locator("[data-source=max_input_tokens]")).to_contain_text("Switchyard's default")
    expect(page.locator("[data-source=max_output_tokens]")).to_contain_text("Switchyard's default")

    page.goto("/workflows/thesis_reading/")
    chart = page.locator("#cost-chart")
    expect(chart.locator("rect.cost-bar")).to_have_count(4)
    run_total = total + 4 * Decimal("0.0001")
    expect(chart.locator("[data-figure=total]")).to_have_text(usd_text(str(run_total)))
    expect(chart.locator("[data-figure=mean]")).to_have_text(usd_text(str(run_total / 4)))
    chart.locator("a.cost-bar-link").last.click()
    page.wait_for_url("**/executions/exec_chart_3/")
    assert errors == []


@pytest.mark.django_db(transaction=True)
def test_an_agents_limits_say_they_came_from_the_model_catalogue(page_for, api, demo, settings, tmp_path):
    from agents.services import agent_import_document

    use_backends(settings, tmp_path / "backends.toml")
    agent_import_document({"agent_id": "Reader", "name": "Reader", "version": "1.0.0", "type": "business",
                           "status": "active", "prompt_config": {"system_prompt": "You read."},
                           "capabilities": {"skills": ["read"]}, "runtime": {"backend": "hosted", "model": "gpt-4o-mini"},
                           "context_limits": {"max_output_tokens": 2000}})
    page = page_for(api.viewer.user)
    page.goto("/agents/Reader/")
    expect(page.locator("[data-source=max_input_tokens]")).to_contain_text(
        re.compile(r"^from gpt-4o-mini's context window of \d+ less max_output_tokens, from genai-prices"))
    expect(page.locator("[data-source=max_output_tokens]")).to_have_text("from the agent's document")
    expect(page.locator("#cost-chart")).to_contain_text("It has not run in any execution yet.")


# -- a node's plan ----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_plan_page_shows_the_cost_estimate_its_assumption_and_the_prices_sources(page_for, api, demo, settings,
                                                                                    tmp_path):
    use_backends(settings, tmp_path / "backends.toml")
    move("Knowledge_Vault", "hosted", "gpt-4o-mini")
    plan = api.viewer.post("/api/workflows/thesis_reading/nodes/task_vault_001/plan").json()
    estimate = plan["cost_estimate"]
    assert estimate["cost"] is not None
    page = page_for(api.viewer.user)
    errors = watch_errors(page)
    page.goto("/executions/plan/thesis_reading/task_vault_001/")
    expect(page.locator("#plan-cost-value")).to_have_text(usd_text(estimate["cost"]))
    expect(page.locator("#plan-cost-model")).to_have_text("hosted / gpt-4o-mini")
    expect(page.locator("#plan-cost-assumption")).to_have_text(f"Assumes {estimate['assumption']}")
    expect(page.locator("#plan-cost")).to_contain_text(f"{estimate['tokens_in']:,} (each batch's prompt, counted here)")
    for name, price in (("input_price", "$0.15"), ("output_price", "$0.60"), ("cached_input_price", "$0.075")):
        row = page.locator(f"#plan-prices tr[data-price={name}]")
        expect(row.locator("td").first).to_have_text(f"{price} per million tokens")
        expect(row.locator(".price-source")).to_have_text(estimate["prices"]["sources"][name])
        assert estimate["prices"]["sources"][name].startswith("genai-prices")
    expect(page.locator("#plan-cost-arithmetic")).to_contain_text(
        f"{estimate['tokens_in']:,} tokens in × $0.15 + {estimate['tokens_out']:,} tokens out × $0.60")

    # The builtin calls no model: it would cost nothing.
    page.goto("/executions/plan/thesis_reading/task_scholar_001/")
    expect(page.locator("#plan-cost-value")).to_have_text("nothing")
    expect(page.locator("#plan-prices tr[data-price=input_price] .price-source")).to_have_text(
        "builtin: calls no model and costs nothing")
    assert errors == []


# -- the workflow editor's cost limits ------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_editor_edits_validates_and_keeps_the_cost_limits(page_for, api, settings, tmp_path):
    settings.WORKSPACE_ROOT = tmp_path
    load_demo(tmp_path)
    page = page_for(api.author.user)
    errors = watch_errors(page)
    page.goto("/workflows/thesis_reading/")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    max_cost = page.locator("[data-field=max_cost]")
    max_cost.fill("0.5x")
    problem = page.locator(".field:has([data-field=max_cost]) .field-problem")
    expect(problem).to_contain_text("'0.5x' is not an amount of USD")
    expect(max_cost).to_have_class(re.compile(r"\binvalid\b"))
    max_cost.fill("0.50")
    expect(problem).to_have_text("")
    page.locator("[data-field=max_node_cost]").fill("0.1234567")  # seven places: more than a price holds
    expect(page.locator(".field:has([data-field=max_node_cost]) .field-problem")).to_contain_text("not an amount of USD")
    page.locator("[data-field=max_node_cost]").fill("0.10")
    # Escalating needs someone to escalate to: the server says so at the field.
    page.select_option("[data-field=on_budget]", "escalate")
    expect(page.locator(".field:has([data-field=on_budget]) .field-problem")).to_contain_text("escalate_to")
    page.select_option("[data-field=on_budget]", "fail")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    page.click("#save-button")
    page.wait_for_selector("#editor-status:has-text('Saved')")
    workflow = Workflow.objects.get(workflow_id="thesis_reading")
    assert workflow.cost_limits == {"max_cost": "0.50", "max_node_cost": "0.10", "on_budget": "fail"}

    # Shown again as saved, and kept by a save that changes something else.
    page.reload()
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    expect(page.locator("[data-field=max_cost]")).to_have_value("0.50")
    expect(page.locator("[data-field=max_node_cost]")).to_have_value("0.10")
    expect(page.locator("[data-field=on_budget]")).to_have_value("fail")
    page.locator("[data-field=name]").fill("Thesis reading, on a budget")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    page.click("#save-button")
    page.wait_for_selector("#editor-status:has-text('Saved')")
    workflow.refresh_from_db()
    assert workflow.name == "Thesis reading, on a budget"
    assert workflow.cost_limits == {"max_cost": "0.50", "max_node_cost": "0.10", "on_budget": "fail"}
    # Emptied, a limit is gone.
    page.locator("[data-field=max_node_cost]").fill("")
    page.wait_for_selector("#problems-summary:has-text('No problems')")
    page.click("#save-button")
    page.wait_for_selector("#editor-status:has-text('Saved')")
    workflow.refresh_from_db()
    assert workflow.cost_limits == {"max_cost": "0.50", "on_budget": "fail"}
    assert errors == []
