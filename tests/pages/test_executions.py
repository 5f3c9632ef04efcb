"""The execution pages, server side: the list, a run's inspection page, a node's plan page."""
import json
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.documents import import_documents
from executions.models import Evaluation, Execution, NodeRun
from tests.pages.conftest import signed_in
from workflows.models import Workflow

pytestmark = pytest.mark.django_db

XSS = "<script>window.pwned=1</script><b>bold</b>"
PAGE_QUERIES = 12  # session, user, roles, the run, what started it, its graph, node states, one page of node runs, its evaluation…
API_QUERIES = 7  # session, user, the run, its summary (grouped, the latest runs, the transitions taken), its re-runs


def make_execution(workflow_id: str, runs: list[dict], **fields) -> Execution:
    """A run with node runs written straight to the database (no worker needed)."""
    workflow = Workflow.objects.get(workflow_id=workflow_id)
    agents = {node.node_id: node.agent for node in workflow.nodes.select_related("agent")}
    start = timezone.now() - timedelta(seconds=30)
    values = {"status": "success", "started_at": start, "completed_at": start + timedelta(seconds=20), **fields}
    execution = Execution.objects.create(execution_id=fields.pop("execution_id", f"exec_page_{Execution.objects.count()}"),
                                         workflow=workflow, **{k: v for k, v in values.items() if k != "execution_id"})
    NodeRun.objects.bulk_create([
        NodeRun(execution=execution, node_id=run["node_id"], agent=run.get("agent") or agents[run["node_id"]],
                sequence=index + 1, started_at=start + timedelta(milliseconds=10 * index),
                completed_at=start + timedelta(milliseconds=10 * index + 8), duration_ms=8,
                **{key: value for key, value in run.items() if key not in ("node_id", "agent")})
        for index, run in enumerate(runs)
    ])
    return execution


CONTEXT = {
    "task_id": "task_vault_001",
    "total_input_data": {"notes": {"tokens": 900, "priority": 2, "data_type": "text", "transfer_mode": "summary",
                                   "passed_tokens": 300},
                         "system_prompt": {"tokens": 9, "priority": 1, "data_type": "system_prompt", "passed_tokens": 9}},
    "total_tokens": 909, "context_limit": 4050, "overflow": 0,
    "limits": {"max_input_tokens": 6000, "reserved_for_system_prompt": 1000, "reserved_for_instructions": 500,
               "safety_margin": 0.9, "available_for_data": 4500, "effective_data_limit": 4050, "data_limit": 4050},
    "resolution": {"strategy": "transfer_modes", "final_tokens": 309, "within_limit": True, "actions": [
        {"data": "notes", "action": "summarize", "original_tokens": 900, "reduced_tokens": 300, "reason": "summary"}]},
}


def heavy_run(node_id: str, **fields) -> dict:
    return {"node_id": node_id, "status": "success", "output": {"text": "x" * 200}, "prompt": "p" * 2000,
            "context_record": CONTEXT, "resolved_inputs": [{"name": "notes", "content": "n" * 500}],
            "tokens_in": 900, "tokens_out": 50, **fields}


# -- the list ---------------------------------------------------------------------------------


def test_it_lists_runs_with_their_status_duration_and_node_runs_by_status(api, demo):
    make_execution("thesis_reading", [{"node_id": "task_scholar_001", "status": "success"},
                                      {"node_id": "task_validator_001", "status": "failed"}],
                   execution_id="exec_listed", status="failed", ended_reason="node task_validator_001 failed")
    page = signed_in(api.viewer.user).get("/executions/").content.decode()
    assert "exec_listed" in page and 'class="badge failed"' in page
    assert "20.0 s" in page  # started → completed
    assert "1 success" in page and "1 failed" in page
    assert "node task_validator_001 failed" in page


def test_it_filters_the_list_and_shrugs_off_an_impossible_day(api, demo):
    make_execution("thesis_reading", [], execution_id="exec_thesis")
    make_execution("release_review", [], execution_id="exec_release", status="escalated", completed_at=None)
    browser = signed_in(api.viewer.user)
    page = browser.get("/executions/", {"workflow": "release_review"}).content.decode()
    assert "exec_release" in page and "exec_thesis" not in page
    page = browser.get("/executions/", {"status": "success", "since": "2026-02-31"}).content.decode()
    assert "exec_thesis" in page and "exec_release" not in page
    assert "No run matches" in browser.get("/executions/", {"status": "cancelled"}).content.decode()


# -- a run's page ------------------------------------------------------------------------------


def test_it_draws_a_named_input_that_reads_another_node_as_a_data_edge(api, demo):
    from executions.page_selectors import workflow_graph

    import_documents({"workflow_id": "reads", "name": "Reads", "topology": "par", "nodes": [
        {"id": "code", "agent_ref": "Code_Analyzer"},
        {"id": "report", "agent_ref": "Report_Synthesizer", "input_mapping": {"code": "$.nodes.code.analysis"}}]},
        actor="test")
    edges = workflow_graph(Workflow.objects.get(workflow_id="reads"))["edges"]
    assert edges == [{"source": "code", "target": "report", "kind": "data"}]


def test_it_renders_a_run_with_its_workflow_graph_and_node_runs(api, demo):
    execution = make_execution("thesis_reading", [heavy_run("task_scholar_001"), heavy_run("task_validator_001")],
                               execution_id="exec_shown", status="running", completed_at=None, input={"paper": "t.pdf"})
    response = signed_in(api.viewer.user).get(f"/executions/{execution.execution_id}/")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="run-status" class="badge big running"' in page
    assert 'href="/workflows/thesis_reading/"' in page
    assert "2 of 3 nodes done" in page  # the progress while it runs
    assert "&quot;paper&quot;: &quot;t.pdf&quot;" in page  # the input, collapsible
    data = response.context["page_data"]
    assert [node["id"] for node in data["graph"]["nodes"]] == ["task_scholar_001", "task_validator_001", "task_vault_001"]
    assert {"source": "task_scholar_001", "target": "task_validator_001", "kind": "sequence"} in data["graph"]["edges"]
    assert data["states"]["task_validator_001"]["status"] == "success" and "task_vault_001" not in data["states"]
    assert data["plan_url"] == "/executions/plan/thesis_reading/NODE/"
    assert page.count('data-node="task_scholar_001"') == 1  # the node runs table


def test_it_colours_each_node_by_its_latest_run(api, demo):
    execution = make_execution("release_review", [
        {"node_id": "publish", "status": "failed", "kind": "first"},
        {"node_id": "publish", "status": "failed", "kind": "retry", "attempt": 2},
        {"node_id": "publish", "status": "success", "kind": "fallback", "attempt": 3},
        {"node_id": "compliance", "status": "running"},
    ], status="running", completed_at=None)
    data = signed_in(api.viewer.user).get(f"/executions/{execution.execution_id}/").context["page_data"]
    assert data["states"]["publish"] == {"status": "success", "kind": "fallback", "attempt": 3, "runs": 3}
    assert data["states"]["compliance"]["status"] == "running"
    assert {edge["condition"] for edge in data["graph"]["edges"] if edge["kind"] == "transition"} >= {
        "output.verdict == 'revise' and state.rounds < 3"}


def test_it_answers_404_for_an_unknown_run_or_node(api, demo):
    browser = signed_in(api.viewer.user)
    assert browser.get("/executions/exec_nope/").status_code == 404
    assert browser.get("/executions/%3Cscript%3E/").status_code == 404
    assert browser.get("/executions/exec%00nul/").status_code == 404
    assert browser.get("/executions/plan/thesis%00reading/task_vault_001/").status_code == 404
    assert browser.get("/executions/plan/nope/task_vault_001/").status_code == 404
    assert browser.get("/executions/plan/thesis_reading/nope/").status_code == 404


def test_it_sends_anonymous_visitors_of_a_run_to_the_login_page(demo):
    execution = make_execution("thesis_reading", [])
    response = Client().get(f"/executions/{execution.execution_id}/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def escalated(**fields):
    return make_execution("release_review", [
        {"node_id": "compliance", "status": "failed", "error_code": "CAPABILITY_GAP", "error": "no legal_review"},
    ], status="escalated", completed_at=None, escalation={
        "node_id": "compliance", "node_run": 1, "error_code": "CAPABILITY_GAP", "error": "no legal_review",
        "escalate_to": "Orchestrator", "at": "2026-02-03T10:30:00+00:00"}, **fields)


def test_it_offers_resume_retry_and_abort_of_an_escalated_run_to_authors_only(api, demo):
    execution = escalated()
    author = signed_in(api.author.user).get(f"/executions/{execution.execution_id}/").content.decode()
    assert "Waiting for a person" in author and "Orchestrator" in author and "CAPABILITY_GAP" in author
    for action in ("resume", "retry", "abort"):
        assert f'data-steer="{action}"' in author
    assert 'data-can-steer="true"' in author
    viewer = signed_in(api.viewer.user).get(f"/executions/{execution.execution_id}/").content.decode()
    assert "Waiting for a person" in viewer and "data-steer=" not in viewer
    assert 'data-can-steer=""' in viewer and "Only authors can resume" in viewer


def page_data(page: str) -> dict:
    return json.loads(page.split('id="execution-data" type="application/json">')[1].split("</script>")[0])


def test_it_gives_authors_the_rerun_form_and_tells_it_what_runs_again_after_each_node(api, demo):
    execution = make_execution("thesis_reading", [{"node_id": "task_scholar_001", "status": "success"}])
    author = signed_in(api.author.user).get(f"/executions/{execution.execution_id}/").content.decode()
    assert 'id="rerun-form"' in author and 'src="/static/js/rerun_form.js"' in author
    assert page_data(author)["downstream"] == {  # a seq: every node after it
        "task_scholar_001": ["task_validator_001", "task_vault_001"], "task_validator_001": ["task_vault_001"],
        "task_vault_001": []}
    viewer = signed_in(api.viewer.user).get(f"/executions/{execution.execution_id}/").content.decode()
    assert 'id="rerun-form"' not in viewer
    trial = make_execution("thesis_reading", [], execution_id="try_alone", trial=True)
    assert 'id="rerun-form"' not in signed_in(api.author.user).get(f"/executions/{trial.execution_id}/").content.decode()

    # A dag: what depends on a node, by a transition or by reading its output. A state machine
    # runs whatever its transitions choose: the form reads its path instead.
    import_documents([{"workflow_id": "reads", "name": "reads", "topology": "dag", "nodes": [
        {"id": "a", "agent_ref": "Code_Analyzer", "input_mapping": {}},
        {"id": "b", "agent_ref": "Docs_Analyzer", "input_mapping": {}},
        {"id": "c", "agent_ref": "Test_Analyzer",
         "input_mapping": {"data_references": [{"ref_type": "task_output", "task_id": "a"}]}},
        {"id": "d", "agent_ref": "Report_Synthesizer", "input_mapping": {}},
    ], "transitions": [{"from": "b", "to": "d"}, {"from": "c", "to": "d"}]}])
    dag = make_execution("reads", [], execution_id="exec_dag")
    assert page_data(signed_in(api.author.user).get(f"/executions/{dag.execution_id}/").content.decode())[
        "downstream"] == {"a": ["c", "d"], "b": ["d"], "c": ["d"], "d": []}
    machine = make_execution("release_review", [], execution_id="exec_machine")
    assert page_data(signed_in(api.author.user).get(f"/executions/{machine.execution_id}/").content.decode())[
        "downstream"] == {}


def test_it_shows_no_escalation_for_a_run_that_is_not_escalated(api, demo):
    execution = make_execution("thesis_reading", [], ended_reason="")
    page = signed_in(api.author.user).get(f"/executions/{execution.execution_id}/").content.decode()
    assert "Waiting for a person" not in page and "data-steer=" not in page


def test_it_escapes_a_node_output_error_and_reason_that_hold_html(api, demo):
    execution = make_execution("thesis_reading", [
        {"node_id": "task_scholar_001", "status": "failed", "output": XSS, "error": XSS, "error_code": "X"},
    ], ended_reason=XSS)
    page = signed_in(api.viewer.user).get(f"/executions/{execution.execution_id}/").content.decode()
    assert "<script>window.pwned" not in page and "<b>bold</b>" not in page
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;" in page


# -- the evaluation and the quality gate -------------------------------------------------------

GATE = {"accuracy": 0.8, "overall_score": 0.7}


def scored(execution: Execution, overall: float, **fields) -> Evaluation:
    values = {"accuracy": 0.5, "completeness": 1.0, "efficiency": 0.9, "passed": False, "action": "revise"} | fields
    return Evaluation.objects.create(
        evaluation_id=f"eval_{execution.execution_id}", target_type="execution", target_id=execution.execution_id,
        execution=execution, method="computed", overall_score=overall, **values)


def test_it_shows_a_failed_quality_gate_naming_each_score_below_its_minimum(api, demo):
    execution = make_execution("thesis_reading", [], execution_id="exec_gated", quality_gate={
        "passed": False, "gate": GATE, "evaluation_id": "eval_exec_gated",
        "failed": [{"score": "accuracy", "value": 0.5, "minimum": 0.8},
                   {"score": "overall_score", "value": 0.6999, "minimum": 0.7}]})
    scored(execution, 0.6999)
    page = signed_in(api.viewer.user).get("/executions/exec_gated/").content.decode()
    assert ('<p id="quality-gate" class="gate failed" role="status" >'
            "Quality gate failed: accuracy 0.50 &lt; 0.80, overall score 0.6999 &lt; 0.70</p>") in page
    assert 'title="overall: 0.70"' in page and '<span class="badge fail" data-field="evaluation-result">fail</span>' in page
    assert '<strong data-field="evaluation-action">revise</strong>' in page
    assert '<a id="evaluation-link" class="small" href="/evaluations/eval_exec_gated/">' in page


def test_it_shows_a_passed_quality_gate_with_its_minimums(api, demo):
    execution = make_execution("thesis_reading", [], execution_id="exec_gate_ok", quality_gate={
        "passed": True, "gate": GATE, "failed": [], "evaluation_id": "eval_exec_gate_ok"})
    scored(execution, 0.9, passed=True, action="approve")
    page = signed_in(api.viewer.user).get("/executions/exec_gate_ok/").content.decode()
    assert "Quality gate passed: accuracy ≥ 0.80, overall score ≥ 0.70" in page
    assert 'class="gate passed"' in page


def test_it_says_a_run_that_just_ended_is_being_scored_and_others_nothing(api, demo):
    viewer = signed_in(api.viewer.user)
    make_execution("thesis_reading", [], execution_id="exec_just_ended")
    ended = viewer.get("/executions/exec_just_ended/")
    assert ended.context["awaiting_evaluation"] is True
    assert 'id="evaluation-waiting"' in ended.content.decode()
    assert ended.context["gate"] is None and 'id="quality-gate" class="gate" role="status" hidden' in ended.content.decode()
    # One that ended long ago unscored (before evaluations existed) is not waited for.
    make_execution("thesis_reading", [], execution_id="exec_long_ago", completed_at=timezone.now() - timedelta(days=2))
    long_ago = viewer.get("/executions/exec_long_ago/")
    assert long_ago.context["awaiting_evaluation"] is False and 'id="evaluation-waiting"' not in long_ago.content.decode()
    make_execution("thesis_reading", [], execution_id="exec_still_running", status="running", completed_at=None)
    running = viewer.get("/executions/exec_still_running/")
    assert running.context["awaiting_evaluation"] is False and running.context["evaluation"] is None
    assert re.search(r'id="run-evaluation"[^>]*hidden>', running.content.decode())


def test_it_pages_the_node_runs_table(api, demo):
    execution = make_execution("thesis_reading", [{"node_id": "task_scholar_001", "status": "success"}] * 120)
    browser = signed_in(api.viewer.user)
    first = browser.get(f"/executions/{execution.execution_id}/").content.decode()
    assert first.count('data-node="task_scholar_001"') == 50 and "page 1 of 3" in first
    last = browser.get(f"/executions/{execution.execution_id}/", {"page": 3}).content.decode()
    assert last.count('data-node="task_scholar_001"') == 20


def count_queries(client, path) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(path).status_code == 200
    return len(queries)


def test_it_reads_a_run_of_1000_node_runs_in_as_few_queries_as_a_run_of_3(api, demo, django_assert_max_num_queries):
    nodes = ["draft", "review", "publish", "compliance"]
    small = make_execution("release_review", [heavy_run(node) for node in nodes[:3]], execution_id="exec_small")
    large = make_execution("release_review", [heavy_run(nodes[i % 4], attempt=1 + i // 4) for i in range(1000)],
                           execution_id="exec_large", status="running", completed_at=None)
    browser = signed_in(api.viewer.user)
    browser.get("/executions/")  # the session's first read is not the page's
    with django_assert_max_num_queries(PAGE_QUERIES):
        response = browser.get(f"/executions/{large.execution_id}/")
    assert response.status_code == 200 and "1000" in response.content.decode()
    assert count_queries(browser, f"/executions/{large.execution_id}/") == count_queries(
        browser, f"/executions/{small.execution_id}/")
    with django_assert_max_num_queries(API_QUERIES):
        record = browser.get(f"/api/executions/{large.execution_id}")
    assert record.status_code == 200 and record.json()["node_runs_summary"]["total"] == 1000
    assert count_queries(browser, f"/api/executions/{large.execution_id}") == count_queries(
        browser, f"/api/executions/{small.execution_id}")


def test_it_lists_runs_in_a_bounded_number_of_queries(api, demo, django_assert_max_num_queries):
    for n in range(60):
        make_execution("thesis_reading", [{"node_id": "task_scholar_001", "status": "success"}] * 3,
                       execution_id=f"exec_many_{n}")
    browser = signed_in(api.viewer.user)
    browser.get("/")
    with django_assert_max_num_queries(10):
        assert browser.get("/executions/").status_code == 200


# -- the plan page -----------------------------------------------------------------------------


def test_it_renders_the_plan_page_of_a_node(api, demo):
    response = signed_in(api.viewer.user).get("/executions/plan/thesis_reading/task_vault_001/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "No model was called." in page and "Knowledge_Vault" in page
    assert json.loads(page.split('id="plan-data" type="application/json">')[1].split("</script>")[0]) == {
        "workflow_id": "thesis_reading", "node_id": "task_vault_001", "agent_id": "Knowledge_Vault"}
    assert 'src="/static/js/budget.js"' in page and 'src="/static/js/node_plan.js"' in page
    assert 'id="try-node"' not in page and 'id="try-card"' not in page  # trying runs a model: authors only
    author = signed_in(api.author.user).get("/executions/plan/thesis_reading/task_vault_001/").content.decode()
    assert 'id="try-node"' in author and 'id="try-card"' in author


# -- two runs compared, and a run's re-runs ------------------------------------------------------


def compared_pair():
    """A run of release_review and a re-run of it from `review` whose review wrote HTML and
    summarised its input, and which went on to `publish`."""
    source = make_execution("release_review", [heavy_run("draft"), heavy_run("review", output={"verdict": "revise"})],
                            execution_id="exec_source")
    summarised = {**CONTEXT, "total_input_data": {**CONTEXT["total_input_data"], "notes": {
        **CONTEXT["total_input_data"]["notes"], "transfer_mode": "reference", "passed_tokens": 40}}}
    rerun = make_execution("release_review", [
        heavy_run("draft", kind="reused", tokens_in=0, tokens_out=0),  # a copy: not run, not billed
        heavy_run("review", output={"verdict": XSS}, context_record=summarised, tokens_in=440),
        heavy_run("publish"),
    ], execution_id="exec_rerun", rerun_of=source, rerun={"from_node": "review"})
    return source, rerun


def test_it_renders_two_runs_compared_with_the_differing_cells_marked(api, demo):
    compared_pair()
    response = signed_in(api.viewer.user).get("/executions/compare/", {"a": "exec_source", "b": "exec_rerun"})
    assert response.status_code == 200
    page = response.content.decode()
    assert 'href="/executions/exec_source/"' in page and 'href="/executions/exec_rerun/"' in page
    assert "re-run of" in page and "from node <span class=\"mono\">review</span>" in page
    rows = {row["node_id"]: row for row in response.context["rows"]}
    assert [(row["node_id"], row["verdict"]) for row in response.context["rows"]] == [
        ("draft", "same"), ("review", "differs"), ("publish", "only_b")]
    tokens_in = next(cell for cell in rows["review"]["cells"] if cell["field"] == "tokens_in")
    assert (tokens_in["a"], tokens_in["b"], tokens_in["differs"]) == (900, 440, True)
    assert rows["review"]["output_differences"] == 1
    assert re.search(r'<td class="pair-cell differs" data-field="tokens_in">\s*<span class="side-a">900</span>', page)
    assert page.count('class="pair-cell differs" data-field="kind"') == 1  # the reused draft
    assert "1 same · 1 differ · 0 only in A · 1 only in B" in page
    # The data the script draws from: the comparison, with the HTML of an output kept as text.
    assert XSS not in page and "<script>window.pwned" not in page
    data = json.loads(page.split('id="compare-data" type="application/json">')[1].split("</script>")[0])
    assert data["pairs"][1]["output_diff"] == [{"path": "/verdict", "op": "changed", "a": "revise", "b": XSS}]
    assert 'src="/static/js/execution_compare.js"' in page and 'src="/static/js/budget.js"' in page


def test_it_marks_an_attempt_a_re_runs_copy_did_not_repeat(api, demo):
    source = make_execution("release_review", [heavy_run("draft", status="failed"),
                                               heavy_run("draft", kind="retry", attempt=2)], execution_id="exec_retried")
    make_execution("release_review", [heavy_run("draft", kind="reused", attempt=2, tokens_in=0, tokens_out=0)],
                   execution_id="exec_copied", rerun_of=source)
    response = signed_in(api.viewer.user).get("/executions/compare/", {"a": "exec_retried", "b": "exec_copied"})
    assert [(row["attempt"], row["verdict"], row["not_repeated"]) for row in response.context["rows"]] == [
        (1, "only_a", True), (2, "same", False)]
    assert response.context["comparison"]["nodes"][0]["verdict"] == "same"
    assert response.content.decode().count(">not repeated</span>") == 1


def test_it_reads_two_runs_of_1000_node_runs_in_as_few_queries_as_two_of_3(api, demo):
    nodes = ["draft", "review", "publish", "compliance"]
    for name, count in (("small", 3), ("large", 1000)):
        for side in ("a", "b"):
            make_execution("release_review", [heavy_run(nodes[i % 4]) for i in range(count)],
                           execution_id=f"exec_{name}_{side}")
    browser = signed_in(api.viewer.user)
    browser.get("/executions/")  # the session's first read is not the page's
    few = count_queries(browser, "/executions/compare/?a=exec_small_a&b=exec_small_b")
    # Session, user, roles; both runs, their node runs' light fields, the agents they name, their
    # evaluations; the graph's nodes and transitions; the heavy fields of the page's pairs.
    assert count_queries(browser, "/executions/compare/?a=exec_large_a&b=exec_large_b") == few <= 10


def test_it_shows_a_page_of_pairs_compared_in_full_and_counts_them_all(api, demo):
    nodes = ["draft", "review", "publish", "compliance"]
    make_execution("release_review", [heavy_run(nodes[i % 4]) for i in range(120)], execution_id="exec_long_a")
    make_execution("release_review", [heavy_run(nodes[i % 4], output={"text": "y"} if i == 61 else {"text": "x" * 200})
                                      for i in range(121)], execution_id="exec_long_b")
    browser = signed_in(api.viewer.user)
    response = browser.get("/executions/compare/", {"a": "exec_long_a", "b": "exec_long_b", "page": 2})
    page = response.content.decode()
    rows = response.context["rows"]
    assert len(rows) == 50 and rows[0]["index"] == 50 and rows[-1]["index"] == 99
    assert 'data-pair="50"' in page and 'data-pair="49"' not in page
    assert "119 same · 1 differ · 0 only in A · 1 only in B" in page
    assert re.search(r"Pairs 51–100 of 121: the output and the context decisions are compared for these 50 only\.\s+"
                     r"The counts and the graphs' colours cover all 121 pairs", page)
    assert "page 2 of 3 · 121 in all" in page and 'href="?a=exec_long_a&amp;b=exec_long_b&amp;page=3"' in page
    data = json.loads(page.split('id="compare-data" type="application/json">')[1].split("</script>")[0])
    assert [pair["index"] for pair in data["pairs"]] == list(range(50, 100))
    assert data["counts"]["nodes"] == {"same": 2, "differs": 2, "only_a": 0, "only_b": 0, "unverified": 0}
    # The pair a node's panel opens on: draft's 31st round (only in B), review's 16th, else the last.
    assert {node["node_id"]: node["open"] for node in data["nodes"]} == {
        "draft": 30, "review": 46, "publish": 90, "compliance": 120}

    differing = browser.get("/executions/compare/", {"a": "exec_long_a", "b": "exec_long_b", "verdict": "not_same"})
    assert [(row["node_id"], row["round"], row["verdict"]) for row in differing.context["rows"]] == [
        ("draft", 31, "only_b"), ("review", 16, "differs")]
    text = differing.content.decode()
    assert "Pairs 1–2 of 2 that match" in text and '<option value="not_same" selected>' in text
    one_node = browser.get("/executions/compare/", {"a": "exec_long_a", "b": "exec_long_b", "node": "publish"})
    assert {row["node_id"] for row in one_node.context["rows"]} == {"publish"} and len(one_node.context["rows"]) == 30
    none = browser.get("/executions/compare/", {"a": "exec_long_a", "b": "exec_long_b", "verdict": "only_a"})
    assert none.context["rows"] == [] and "No pair matches." in none.content.decode()
    # A filter the page does not know is no filter; a page past the end is the last.
    assert len(browser.get("/executions/compare/", {"a": "exec_long_a", "b": "exec_long_b", "verdict": "odd",
                                                    "page": 9}).context["rows"]) == 21


def test_it_says_which_pairs_it_counted_unverified(api, demo, monkeypatch):
    from executions import comparison

    monkeypatch.setattr(comparison, "SETTLE_LIMIT", 0)  # no room to settle any pair from its heavy fields
    make_execution("release_review", [heavy_run("draft", output={"v": 1}), heavy_run("review", output={"v": 1})],
                   execution_id="exec_text_a")
    make_execution("release_review", [heavy_run("draft", output={"v": 2}), heavy_run("review", output={"v": 1.0})],
                   execution_id="exec_text_b")
    response = signed_in(api.viewer.user).get("/executions/compare/", {"a": "exec_text_a", "b": "exec_text_b"})
    page = response.content.decode()
    assert [(row["node_id"], row["verdict"], row["differs"]) for row in response.context["rows"]] == [
        ("draft", "unverified", True), ("review", "unverified", False)]
    assert "0 same · 0 differ · 0 only in A · 0 only in B · 2 unverified" in page
    assert re.search(r'<p class="small" id="compare-unverified">2 pairs whose fields are the same but whose output or '
                     r'context decisions are stored differently were not compared in full', page)
    assert '<i class="dot verdict-unverified"></i>unverified (2)' in page
    assert ">differs here</span>" in page and ">same here</span>" in page


def test_it_explains_what_it_cannot_compare(api, demo):
    make_execution("release_review", [], execution_id="exec_review")
    make_execution("thesis_reading", [], execution_id="exec_thesis")
    browser = signed_in(api.viewer.user)
    missing = browser.get("/executions/compare/", {"a": "exec_review"})
    assert missing.status_code == 400 and "Pick two runs" in missing.content.decode()
    assert browser.get("/executions/compare/", {"a": "exec_review", "b": "exec_nope"}).status_code == 404
    assert browser.get("/executions/compare/", {"a": "exec_review", "b": "exec<b>"}).status_code == 404
    different = browser.get("/executions/compare/", {"a": "exec_review", "b": "exec_thesis"})
    assert different.status_code == 422
    page = different.content.decode()
    assert "workflow &#x27;release_review&#x27;" in page and "workflow &#x27;thesis_reading&#x27;" in page
    assert 'id="compare-data"' not in page


def test_it_offers_a_box_per_run_and_a_compare_button_on_the_list(api, demo):
    make_execution("release_review", [], execution_id="exec_one")
    page = signed_in(api.viewer.user).get("/executions/").content.decode()
    assert '<input type="checkbox" class="pick" aria-label="Pick exec_one to compare" data-workflow="release_review">' in page
    assert '<button type="button" id="compare-button" class="primary" data-url="/executions/compare/" disabled>' in page


def test_it_links_a_re_run_to_its_source_and_a_run_to_its_re_runs_with_compare_links(api, demo):
    source, rerun = compared_pair()
    browser = signed_in(api.viewer.user)
    page = browser.get("/executions/exec_rerun/").content.decode()
    assert re.search(r'Re-run of <a class="mono" href="/executions/exec_source/">exec_source</a> from node '
                     r'<span class="mono">review</span>', page)
    assert 'id="compare-with-source" href="/executions/compare/?a=exec_source&amp;b=exec_rerun"' in page
    assert 'id="reruns"' not in page
    page = browser.get("/executions/exec_source/").content.decode()
    assert 'id="rerun-of"' not in page
    assert re.search(r'<li data-rerun="exec_rerun"><a class="mono" href="/executions/exec_rerun/">', page)
    assert 'href="/executions/compare/?a=exec_source&amp;b=exec_rerun">compare</a>' in page


def test_it_lists_the_newest_re_runs_and_says_there_are_more(api, demo, settings):
    source = make_execution("release_review", [], execution_id="exec_source")
    start = timezone.now()
    for n in range(22):
        make_execution("release_review", [], execution_id=f"exec_rerun_{n:02d}", rerun_of=source,
                       created_at=start + timedelta(seconds=n))
    page = signed_in(api.viewer.user).get("/executions/exec_source/").content.decode()
    listed = re.findall(r'<li data-rerun="(exec_rerun_\d+)">', page)
    assert listed == [f"exec_rerun_{n:02d}" for n in range(21, 1, -1)]
    assert "The newest 20 are listed; there are more." in page


def test_it_reads_a_re_run_with_re_runs_of_its_own_in_as_few_queries_as_a_plain_run(api, demo):
    source, rerun = compared_pair()
    make_execution("release_review", [], execution_id="exec_rerun_of_rerun", rerun_of=rerun)
    plain = make_execution("release_review", [heavy_run("draft")], execution_id="exec_plain")
    browser = signed_in(api.viewer.user)
    browser.get("/executions/")
    assert count_queries(browser, "/executions/exec_rerun/") == count_queries(browser, f"/executions/{plain.execution_id}/")


def test_it_tells_an_approver_why_they_cannot_resume_and_whom_to_ask(api, demo):
    execution = escalated()
    page = signed_in(api.approver.user).get(f"/executions/{execution.execution_id}/").content.decode()
    assert "data-steer=" not in page
    assert ("Only authors can resume, retry or abort a run; you are signed in as approver-user (viewer, approver). "
            "Ask admin-user, author-user.") in page


def test_it_says_on_release_reviews_page_that_it_ends_escalated_on_purpose(api, demo):
    page = signed_in(api.viewer.user).get("/workflows/release_review/").content.decode()
    assert "Ends escalated, on purpose" in page and "Backup_Publisher" in page


def test_it_writes_a_gates_wait_in_seconds_and_minutes_not_milliseconds(api, demo):
    execution = make_execution("release_review", [{"node_id": "draft", "status": "success"},
                                                  {"node_id": "approve", "status": "success"}])
    execution.node_runs.filter(node_id="approve").update(duration_ms=45932)
    execution.node_runs.filter(node_id="draft").update(duration_ms=245_000)
    page = signed_in(api.viewer.user).get(f"/executions/{execution.execution_id}/").content.decode()
    assert "45.9 s" in page and "4 min 05 s" in page
    assert "45932 ms" not in page and "245000 ms" not in page
