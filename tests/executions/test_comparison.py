"""Two runs compared: `execution_comparison`, `GET /api/executions/compare` and the command
`compare_executions`. The runs are written straight to the database: comparing reads only.
Every count comes from the light half (each node run's light fields and digest), and only
a page of pairs is compared in full: the tests hold the two halves to one answer."""
import hashlib
import io
import json
from datetime import timedelta
from math import ceil

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents.models import AgentVersion
from core.documents import import_documents
from core.errors import DocumentError
from demo.documents import AGENTS, PARALLEL_ANALYSIS, RELEASE_REVIEW
from engine.comparison import HEAVY_FIELDS, compare_runs
from executions import comparison
from executions.comparison import execution_comparison, executions_for_comparison
from executions.models import Evaluation, Execution, NodeRun
from executions.services import execution_rerun, execution_start
from tests.executions.conftest import drain
from tests.executions.test_query_plans import insert_select
from workflows.models import Workflow

pytestmark = pytest.mark.django_db

CONTEXT = {
    "total_input_data": {"draft": {"tokens": 900, "priority": 2, "data_type": "text", "transfer_mode": "full",
                                   "passed_tokens": 900}},
    "total_tokens": 900, "context_limit": 4050, "overflow": 0,
    "resolution": {"strategy": "none", "actions": [], "final_tokens": 900, "within_limit": True},
}
SUMMARISED = {
    **CONTEXT,
    "total_input_data": {"draft": {"tokens": 900, "priority": 2, "data_type": "text", "transfer_mode": "summary",
                                   "passed_tokens": 300}},
    "resolution": {"strategy": "transfer_modes", "final_tokens": 300, "within_limit": True, "actions": [
        {"data": "draft", "action": "summarize", "original_tokens": 900, "reduced_tokens": 300,
         "reason": "over the budget", "stage": "transfer"}]},
}


@pytest.fixture(autouse=True)
def demo():
    import_documents([*AGENTS, PARALLEL_ANALYSIS, RELEASE_REVIEW])


def make_run(execution_id, runs, workflow_id="release_review", **fields):
    """A run and its node runs, as the workers would have left them."""
    workflow = Workflow.objects.get(workflow_id=workflow_id)
    agents = {node.node_id: node.agent for node in workflow.nodes.select_related("agent")}
    start = timezone.now() - timedelta(minutes=5)
    execution = Execution.objects.create(execution_id=execution_id, workflow=workflow, status="success",
                                         started_at=start, completed_at=start + timedelta(seconds=12), **fields)
    NodeRun.objects.bulk_create([
        NodeRun(execution=execution, agent=agents[run["node_id"]], sequence=index + 1, **run)
        for index, run in enumerate(runs)
    ])
    return execution


def node_run(node_id, **fields):
    return {"node_id": node_id, "status": "success", "tokens_in": 900, "tokens_out": 50, "duration_ms": 8,
            "output": {"text": f"{node_id} done"}, "context_record": CONTEXT,
            "resolved_inputs": [{"name": "draft", "transfer_mode": "full", "reason": "fits", "resolved_tokens": 900,
                                 "passed_tokens": 900, "batches": 0, "passed": True}], **fields}


def evaluate(execution, overall):
    return Evaluation.objects.create(
        evaluation_id=f"eval_{execution.execution_id}", target_type="execution", target_id=execution.execution_id,
        accuracy=overall, completeness=1.0, efficiency=0.5, overall_score=overall, passed=overall >= 0.7,
        action="approve" if overall >= 0.7 else "revise", method="computed", execution=execution)


@pytest.fixture
def two_runs():
    """A run, and a re-run of it from `review` whose review summarised its input and wrote
    another verdict, and which went on to `publish`."""
    source = make_run("exec_source", [node_run("draft"), node_run("review", output={"verdict": "revise"})])
    rerun = make_run("exec_rerun", [
        node_run("draft", kind="reused", duration_ms=0, tokens_in=0, tokens_out=0),  # a copy: not run, not billed
        node_run("review", output={"verdict": "approve", "note": "ok"}, context_record=SUMMARISED, tokens_in=300,
                 resolved_inputs=[{"name": "draft", "transfer_mode": "summary", "reason": "over the budget",
                                   "resolved_tokens": 900, "passed_tokens": 300, "batches": 0, "passed": True}]),
        node_run("publish"),
    ], rerun_of=source, rerun={"from_node": "review", "reused": ["draft"]})
    evaluate(source, 0.55)
    evaluate(rerun, 0.9)
    return source, rerun


def test_it_compares_two_runs_node_run_by_node_run(two_runs):
    source, rerun = two_runs
    comparison = execution_comparison(source, rerun)
    assert [(pair["node_id"], pair["verdict"]) for pair in comparison["pairs"]] == [
        ("draft", "same"), ("review", "differs"), ("publish", "only_b")]
    draft, review, publish = comparison["pairs"]
    assert draft["changed"] == ["kind", "duration_ms", "tokens_in", "tokens_out"]
    assert (draft["a"]["kind"], draft["b"]["kind"]) == ("first", "reused")
    assert review["changed"] == ["tokens_in"]
    # In the stored order of the output's members (PostgreSQL's jsonb keeps its own).
    assert sorted(review["output_diff"], key=lambda entry: entry["path"]) == [
        {"path": "/note", "op": "added", "a": None, "b": "ok"},
        {"path": "/verdict", "op": "changed", "a": "revise", "b": "approve"}]
    assert review["inputs"][0]["changed"] == ["transfer_mode", "reason", "passed_tokens"]
    (action,) = review["actions"]
    assert (action["data"], action["action"], action["a"], action["b"]["reduced_tokens"]) == ("draft", "summarize", None, 300)
    assert review["b"]["context_record"] == SUMMARISED  # what the page's budget bar draws
    assert publish["a"] is None and publish["b"]["agent"] == "Publisher"
    assert comparison["counts"] == {"pairs": {"same": 1, "differs": 1, "only_a": 0, "only_b": 1, "unverified": 0},
                                    "nodes": {"same": 1, "differs": 1, "only_a": 0, "only_b": 1, "unverified": 0}}
    assert [pair["index"] for pair in comparison["pairs"]] == [0, 1, 2]
    assert comparison["page"] == {"offset": 0, "limit": 50, "count": 3, "verdict": None, "node": None}
    for side in ("a", "b"):
        assert [node["id"] for node in comparison["graphs"][side]["nodes"]] == ["draft", "review", "approve",
                                                                               "publish", "compliance"]
    assert comparison["workflow"]["workflow_id"] == "release_review"


def test_it_sums_up_each_run_with_its_scores_and_where_it_was_re_run_from(two_runs):
    source, rerun = two_runs
    comparison = execution_comparison(*executions_for_comparison("exec_source", "exec_rerun"))
    a, b = comparison["a"], comparison["b"]
    assert (a["execution_id"], a["rerun_of"], a["rerun_from_node"]) == ("exec_source", None, None)
    assert (b["execution_id"], b["rerun_of"], b["rerun_from_node"]) == ("exec_rerun", "exec_source", "review")
    assert (a["node_runs"], a["tokens_in"], a["tokens_out"]) == (2, 1800, 100)
    assert (b["node_runs"], b["tokens_in"], b["tokens_out"]) == (3, 1200, 100)  # the copy spent nothing
    assert a["duration_ms"] == 12_000 and a["trial"] is False and a["status"] == "success"
    assert a["evaluation"] == {"evaluation_id": "eval_exec_source", "accuracy": 0.55, "completeness": 1.0,
                               "efficiency": 0.5, "overall_score": 0.55, "passed": False}
    assert b["evaluation"]["passed"] is True


def test_it_leaves_out_the_evaluations_that_are_not_the_runs_own(two_runs):
    source, _ = two_runs
    Evaluation.objects.create(evaluation_id="eval_agent_part", target_type="agent", target_id="Reviewer",
                              accuracy=0.1, completeness=0.1, efficiency=0.1, overall_score=0.1, passed=False,
                              action="reject", method="computed", execution=source)
    unscored = make_run("exec_unscored", [node_run("draft")])
    comparison = execution_comparison(source, unscored)
    assert comparison["a"]["evaluation"]["evaluation_id"] == "eval_exec_source"
    assert comparison["b"]["evaluation"] is None


def test_it_compares_a_trial(two_runs):
    source, _ = two_runs
    trial = make_run("exec_trial", [node_run("review", output={"verdict": "revise"})], trial=True)
    comparison = execution_comparison(source, trial)
    assert comparison["b"]["trial"] is True
    assert [(pair["node_id"], pair["verdict"]) for pair in comparison["pairs"]] == [("draft", "only_a"), ("review", "same")]


def test_it_refuses_runs_of_two_workflows_naming_both():
    review = make_run("exec_review", [node_run("draft")])
    parallel = make_run("exec_parallel", [node_run("task_a")], workflow_id="parallel_analysis")
    with pytest.raises(DocumentError) as refused:
        execution_comparison(review, parallel)
    assert "workflow 'release_review'" in str(refused.value) and "workflow 'parallel_analysis'" in str(refused.value)


@pytest.mark.django_db(transaction=True)
def test_it_compares_a_real_re_run_with_the_run_it_was_re_run_from(in_process):
    source = drain(execution_start(workflow=Workflow.objects.get(workflow_id="thesis_reading")))
    edited = {"validation_results": [{"atom_id": "edited-1", "valid": False, "note": "edited by a person"}]}
    rerun = drain(execution_rerun(source=source, from_node="task_vault_001", outputs={"task_validator_001": edited}))
    assert (source.status, rerun.status) == ("success", "success")

    comparison = execution_comparison(*executions_for_comparison(source.execution_id, rerun.execution_id))
    scholar, validator, vault = comparison["pairs"]
    assert (scholar["node_id"], scholar["b"]["kind"], scholar["verdict"]) == ("task_scholar_001", "reused", "same")
    assert (validator["b"]["kind"], validator["verdict"]) == ("edited", "differs")
    assert any(entry["path"].startswith("/validation_results/0/") for entry in validator["output_diff"])
    assert (vault["a"]["kind"], vault["b"]["kind"]) == ("first", "first")
    assert vault["inputs"] and vault["b"]["context_record"]["resolution"]["actions"] is not None
    assert comparison["b"]["rerun_of"] == source.execution_id and comparison["b"]["rerun_from_node"] == "task_vault_001"
    assert comparison["b"]["tokens_in"] < comparison["a"]["tokens_in"]  # the copies were not billed


# -- the API ---------------------------------------------------------------------------------


def test_it_answers_the_comparison_to_a_viewer(api, two_runs):
    response = api.viewer.get("/api/executions/compare", a="exec_source", b="exec_rerun")
    assert response.status_code == 200, response.json()
    answer = response.json()
    assert answer == json.loads(json.dumps(execution_comparison(*two_runs)))
    assert {"path": "/verdict", "op": "changed", "a": "revise", "b": "approve"} in answer["pairs"][1]["output_diff"]


def test_it_answers_404_naming_the_unknown_run(api, two_runs):
    response = api.viewer.get("/api/executions/compare", a="exec_source", b="exec_nowhere")
    assert response.status_code == 404
    assert response.json() == {"code": "NOT_FOUND", "message": "execution 'exec_nowhere' does not exist",
                               "details": {"where": "b"}}
    assert api.viewer.get("/api/executions/compare", a="exec_gone", b="exec_rerun").json()["details"] == {"where": "a"}


def test_it_answers_422_for_runs_of_two_workflows(api):
    make_run("exec_review", [node_run("draft")])
    make_run("exec_parallel", [node_run("task_a")], workflow_id="parallel_analysis")
    response = api.viewer.get("/api/executions/compare", a="exec_review", b="exec_parallel")
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "INVALID_DOCUMENT"
    assert "'release_review'" in body["message"] and "'parallel_analysis'" in body["message"]


@pytest.mark.parametrize("params", [{"a": "exec_source"}, {"a": "exec_source", "b": "bad id!"}, {}])
def test_it_answers_422_for_a_missing_or_malformed_id(api, two_runs, params):
    response = api.viewer.get("/api/executions/compare", **params)
    assert response.status_code == 422 and response.json()["code"] == "VALIDATION_ERROR"


def test_it_asks_for_credentials(api, two_runs):
    assert api.anonymous.get("/api/executions/compare", a="exec_source", b="exec_rerun").status_code == 401


def test_it_still_reads_an_execution_by_id_beside_the_compare_route(api, two_runs):
    assert api.viewer.get("/api/executions/exec_source").json()["execution_id"] == "exec_source"


def runs_of(count, version, output=lambda i: {"i": i, "text": "x" * 50}):
    """A state machine's loop: draft, review, publish, compliance, again and again."""
    nodes = ["draft", "review", "publish", "compliance"]
    return [node_run(nodes[i % 4], agent_version=version, output=output(i)) for i in range(count)]


def answer_queries(api, a, b, **params):
    """The queries `GET /api/executions/compare` makes, and its answer."""
    api.viewer.get("/api/me")  # the token's first use of the minute is written down: not part of the comparison
    with CaptureQueriesContext(connection) as captured:
        response = api.viewer.get("/api/executions/compare", a=a, b=b, **params)
    assert response.status_code == 200, response.json()
    return len(captured), response.json()


# The token with its user, both runs, their node runs' light fields, the agents and the agent
# versions they name, their evaluations, the graph's nodes and transitions.
FIXED_QUERIES = 8


def test_it_compares_two_runs_of_2000_node_runs_in_as_many_queries_as_two_of_5(api):
    version = AgentVersion.objects.filter(agent__agent_id="Drafter").first()
    for execution_id, count in (("exec_small_a", 5), ("exec_small_b", 5), ("exec_large_a", 2000), ("exec_large_b", 2000)):
        make_run(execution_id, runs_of(count, version))
    for execution in Execution.objects.all():
        evaluate(execution, 0.8)
    few, small = answer_queries(api, "exec_small_a", "exec_small_b")
    many, large = answer_queries(api, "exec_large_a", "exec_large_b")
    assert len(small["pairs"]) == 5 and len(large["pairs"]) == 50  # a page
    assert large["counts"]["pairs"]["same"] == 2000 and large["a"]["node_runs"] == 2000
    assert large["pairs"][-1]["b"]["agent_version"] == version.version
    # And one query for the heavy fields of the page's pairs.
    assert many == few == FIXED_QUERIES + 1


def test_it_settles_pairs_the_digests_cannot_in_a_bounded_number_of_queries(api, monkeypatch):
    """Outputs that differ where the light fields do not: each pair must be compared in full
    to be judged, and one answer does that for SETTLE_LIMIT pairs, CHUNK node runs a query."""
    monkeypatch.setattr(comparison, "SETTLE_LIMIT", 30)
    monkeypatch.setattr(comparison, "CHUNK", 20)
    for execution_id, count in (("exec_small_a", 5), ("exec_small_b", 5), ("exec_large_a", 1000), ("exec_large_b", 1000)):
        make_run(execution_id, runs_of(count, None, output=lambda i, side=execution_id[-1]: {"i": i, "side": side}))
    bound = FIXED_QUERIES - 1 + ceil(2 * 30 / 20) + ceil(2 * 50 / 20)  # no agent version named
    few, small = answer_queries(api, "exec_small_a", "exec_small_b")
    many, large = answer_queries(api, "exec_large_a", "exec_large_b")
    assert small["counts"]["pairs"] == {"same": 0, "differs": 5, "only_a": 0, "only_b": 0, "unverified": 0}
    assert large["counts"]["pairs"] == {"same": 0, "differs": 30, "only_a": 0, "only_b": 0, "unverified": 970}
    assert few <= many <= bound


def test_it_compares_a_page_of_pairs_in_full_and_counts_them_all(api):
    version = AgentVersion.objects.filter(agent__agent_id="Drafter").first()
    make_run("exec_loop_a", runs_of(10, version))
    make_run("exec_loop_b", runs_of(12, version, output=lambda i: {"i": i, "text": "y" if i == 4 else "x" * 50}))
    whole = execution_comparison(*executions_for_comparison("exec_loop_a", "exec_loop_b"), limit=500)
    assert [(pair["node_id"], pair["round"]) for pair in whole["pairs"]][:4] == [
        ("draft", 1), ("draft", 2), ("draft", 3), ("review", 1)]
    response = api.viewer.get("/api/executions/compare", a="exec_loop_a", b="exec_loop_b", offset=3, limit=4)
    answer = response.json()
    assert answer["page"] == {"offset": 3, "limit": 4, "count": 12, "verdict": None, "node": None}
    assert [pair["index"] for pair in answer["pairs"]] == [3, 4, 5, 6]
    assert answer["pairs"] == json.loads(json.dumps(whole["pairs"][3:7]))
    assert answer["counts"] == whole["counts"] == {
        "pairs": {"same": 9, "differs": 1, "only_a": 0, "only_b": 2, "unverified": 0},
        "nodes": {"same": 1, "differs": 3, "only_a": 0, "only_b": 0, "unverified": 0}}
    # Each node opens on its first pair that differs (or is in one run only), else its last.
    assert answer["nodes"] == whole["nodes"] == [
        {"node_id": "draft", "verdict": "differs", "pairs": 3, "open": 1},  # its second round's output
        {"node_id": "review", "verdict": "same", "pairs": 3, "open": 5},
        {"node_id": "publish", "verdict": "differs", "pairs": 3, "open": 8},  # a third round only b ran
        {"node_id": "compliance", "verdict": "differs", "pairs": 3, "open": 11}]
    past = api.viewer.get("/api/executions/compare", a="exec_loop_a", b="exec_loop_b", offset=12).json()
    assert past["pairs"] == [] and past["page"]["count"] == 12 and past["counts"] == whole["counts"]
    for params in ({"limit": 0}, {"limit": 501}, {"offset": -1}):
        refused = api.viewer.get("/api/executions/compare", a="exec_loop_a", b="exec_loop_b", **params)
        assert refused.status_code == 422 and refused.json()["code"] == "VALIDATION_ERROR"


def test_it_filters_the_pairs_by_verdict_and_node(api, two_runs):
    def shown(**params):
        answer = api.viewer.get("/api/executions/compare", a="exec_source", b="exec_rerun", **params).json()
        assert answer["counts"]["pairs"] == {"same": 1, "differs": 1, "only_a": 0, "only_b": 1, "unverified": 0}
        return answer["page"]["count"], [(pair["index"], pair["node_id"]) for pair in answer["pairs"]]

    assert shown() == (3, [(0, "draft"), (1, "review"), (2, "publish")])
    assert shown(verdict="not_same") == (2, [(1, "review"), (2, "publish")])
    assert shown(verdict="differs") == (1, [(1, "review")])
    assert shown(verdict="only_b") == (1, [(2, "publish")])
    assert shown(verdict="only_a") == (0, [])
    assert shown(node="review") == (1, [(1, "review")])
    assert shown(node="draft", verdict="not_same") == (0, [])
    assert shown(node="nowhere") == (0, [])
    refused = api.viewer.get("/api/executions/compare", a="exec_source", b="exec_rerun", verdict="different")
    assert refused.status_code == 422


# -- the two halves agree ----------------------------------------------------------------------

FAILURE = {"input": "extra", "error_code": "REF_NOT_FOUND", "fallback_strategy": "use_default", "fallback_value": [],
           "error_message": "at 10:00"}


@pytest.fixture
def stored_differently():
    """Two runs whose node runs have the same light fields but heavy fields stored as other
    text: a true difference (draft), one JSON value written two ways (review: 1 and 1.0),
    and a difference only where nothing is compared (publish: a failure's message)."""
    a = make_run("exec_text_a", [node_run("draft", output={"v": 1}), node_run("review", output={"v": 1}),
                                 node_run("publish", resolution_failures=[FAILURE])])
    b = make_run("exec_text_b", [node_run("draft", output={"v": 2}), node_run("review", output={"v": 1.0}),
                                 node_run("publish", resolution_failures=[{**FAILURE, "error_message": "at 10:01"}])])
    return a, b


def full_runs(execution):
    """A run's node runs with every field the engine compares, read whole: the reference."""
    return [{**run, "agent": run.pop("agent__agent_id"), "agent_version": run.pop("agent_version__version")}
            for run in NodeRun.objects.filter(execution=execution).order_by("sequence", "id").values(
                "node_id", "kind", "attempt", "status", "error_code", "duration_ms", "tokens_in", "tokens_out",
                "agent__agent_id", "agent_version__version", "id", *HEAVY_FIELDS)]


def test_the_light_half_gives_the_verdicts_of_the_whole_comparison(two_runs, stored_differently):
    for a, b in (two_runs, stored_differently):
        reference = compare_runs(full_runs(a), full_runs(b))
        aligned = comparison.runs_aligned(a, b)
        assert [pair["verdict"] for pair in aligned.pairs] == [pair["verdict"] for pair in reference["pairs"]]
        assert aligned.summary["nodes"] == reference["nodes"] and aligned.summary["counts"] == reference["counts"]
        page = comparison.comparison_page(aligned)
        assert page["pairs"] == json.loads(json.dumps(reference["pairs"]))
    assert [pair["verdict"] for pair in comparison.runs_aligned(*stored_differently).pairs] == ["differs", "same", "same"]


def test_it_counts_the_pairs_it_had_no_room_to_settle_as_unverified(api, stored_differently, monkeypatch):
    monkeypatch.setattr(comparison, "SETTLE_LIMIT", 1)
    answer = api.viewer.get("/api/executions/compare", a="exec_text_a", b="exec_text_b").json()
    assert [(pair["node_id"], pair["verdict"], pair["differs"]) for pair in answer["pairs"]] == [
        ("draft", "differs", True), ("review", "unverified", False), ("publish", "unverified", False)]
    assert answer["counts"]["pairs"] == {"same": 0, "differs": 1, "only_a": 0, "only_b": 0, "unverified": 2}
    assert [(node["node_id"], node["verdict"]) for node in answer["nodes"]] == [
        ("draft", "differs"), ("review", "unverified"), ("publish", "unverified")]
    unverified = api.viewer.get("/api/executions/compare", a="exec_text_a", b="exec_text_b", verdict="unverified")
    assert [pair["node_id"] for pair in unverified.json()["pairs"]] == ["review", "publish"]
    # The command compares every pair: nothing is left unverified.
    out = io.StringIO()
    call_command("compare_executions", "exec_text_a", "exec_text_b", stdout=out)
    printed = json.loads(out.getvalue())
    assert [pair["verdict"] for pair in printed["pairs"]] == ["differs", "same", "same"]
    assert printed["counts"]["pairs"] == {"same": 2, "differs": 1, "only_a": 0, "only_b": 0, "unverified": 0}


def test_the_database_keeps_a_digest_of_what_is_compared(stored_differently):
    a, b = stored_differently
    draft_a, review_a, publish_a = NodeRun.objects.filter(execution=a).order_by("sequence")
    draft_b, review_b, publish_b = NodeRun.objects.filter(execution=b).order_by("sequence")
    assert len(draft_a.compared_digest) == 32 and draft_a.compared_digest != draft_b.compared_digest
    assert review_a.compared_digest != review_b.compared_digest  # 1 and 1.0: one value, two texts
    NodeRun.objects.filter(pk=draft_b.pk).update(output={"v": 1})
    draft_b.refresh_from_db()
    assert draft_b.compared_digest == draft_a.compared_digest
    NodeRun.objects.filter(pk=draft_b.pk).update(context_record={**CONTEXT, "resolution": {"actions": [{"data": "x"}]}})
    draft_b.refresh_from_db()
    assert draft_b.compared_digest != draft_a.compared_digest
    # What is not compared is not in the digest: the prompt, the rest of the record.
    NodeRun.objects.filter(pk=review_b.pk).update(output={"v": 1}, prompt="another",
                                                  context_record={**CONTEXT, "total_tokens": 1})
    review_b.refresh_from_db()
    assert review_b.compared_digest == review_a.compared_digest
    # A value moved from one field to the next is another digest.
    moved = make_run("exec_moved", [node_run("draft", output=None, resolved_inputs=[{"name": "v"}]),
                                    node_run("draft", output=[{"name": "v"}], resolved_inputs=[])])
    first, second = NodeRun.objects.filter(execution=moved).order_by("sequence")
    assert first.compared_digest != second.compared_digest


# -- the command -------------------------------------------------------------------------------


def test_the_command_prints_the_comparison_as_json(two_runs):
    out = io.StringIO()
    call_command("compare_executions", "exec_source", "exec_rerun", stdout=out)
    printed = json.loads(out.getvalue())
    assert printed.pop("page") == {"offset": 0, "limit": 3, "count": 3, "verdict": None, "node": None}
    answer = json.loads(json.dumps(execution_comparison(*two_runs)))
    del answer["page"]
    assert printed == answer
    assert printed["counts"]["pairs"] == {"same": 1, "differs": 1, "only_a": 0, "only_b": 1, "unverified": 0}


def test_the_command_exits_2_naming_what_it_cannot_compare(two_runs):
    make_run("exec_parallel", [node_run("task_a")], workflow_id="parallel_analysis")
    with pytest.raises(CommandError, match="execution 'exec_nowhere' does not exist") as unknown:
        call_command("compare_executions", "exec_source", "exec_nowhere", stdout=io.StringIO())
    assert unknown.value.returncode == 2
    with pytest.raises(CommandError, match="only runs of one workflow") as different:
        call_command("compare_executions", "exec_source", "exec_parallel", stdout=io.StringIO())
    assert different.value.returncode == 2


def test_each_run_is_drawn_as_the_version_of_the_workflow_it_ran():
    from tests.workflow_edits import edit_workflow

    workflow = Workflow.objects.get(workflow_id="release_review")
    first = workflow.versions.get(number=1)
    def without_compliance(document):
        document["nodes"] = [node for node in document["nodes"] if node["id"] != "compliance"]
        document["transitions"] = [t for t in document["transitions"] if t["to"] != "compliance"]

    edited = edit_workflow("release_review", without_compliance)
    second = edited.versions.get(number=2)
    old = make_run("exec_old", [node_run("draft")], workflow_version=first)
    new = make_run("exec_new", [node_run("draft")], workflow_version=second)
    graphs = execution_comparison(old, new)["graphs"]
    assert [node["id"] for node in graphs["a"]["nodes"]] == ["draft", "review", "approve", "publish", "compliance"]
    assert [node["id"] for node in graphs["b"]["nodes"]] == ["draft", "review", "approve", "publish"]


# -- PostgreSQL's plans for two runs of 100,000 node runs ------------------------------------------

LARGE = 100_000


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the plans checked are PostgreSQL's")
@pytest.mark.django_db(transaction=True)  # VACUUM runs outside a transaction
def test_it_reads_two_runs_of_100000_node_runs_by_index_without_a_subplan(api):
    """Every query of the answer that reads node runs is planned as an index scan (never a
    sequential scan of the table) and runs no subplan per row. b's every 1,000th output
    differs where its light fields do not, so the queries that settle pairs are planned too.

    The table is vacuumed and analysed, as autovacuum leaves it: the light fields are then
    read from the index alone. (Without the visibility map, with the two runs the whole
    table and their records this small, a sequential scan and a sort cost about as much,
    and PostgreSQL takes either.)"""
    a = make_run("exec_huge_a", [])
    b = make_run("exec_huge_b", [])
    agent = Workflow.objects.get(workflow_id="release_review").nodes.get(node_id="draft").agent_id
    insert_select(NodeRun, {
        "execution_id": "e.id", "agent_id": "%s", "sequence": "i", "status": "'success'",
        "node_id": "(ARRAY['draft', 'review', 'publish', 'compliance'])[1 + i %% 4]",
        "tokens_in": "900", "tokens_out": "50", "duration_ms": "8",
        "output": "jsonb_build_object('i', i, 'b', e.id = %s AND i %% 1000 = 0)",
    }, "executions_execution e, generate_series(1, %s) i WHERE e.id IN (%s, %s)", (agent, b.pk), (LARGE, a.pk, b.pk))
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE executions_noderun")

    queries, answer = answer_queries(api, "exec_huge_a", "exec_huge_b", verdict="differs")
    assert answer["counts"]["pairs"] == {"same": LARGE - 100, "differs": 100, "only_a": 0, "only_b": 0, "unverified": 0}
    assert len(answer["pairs"]) == 50 and queries <= FIXED_QUERIES + 2

    with CaptureQueriesContext(connection) as captured:
        execution_comparison(a, b, verdict="differs")
    reading = [query["sql"] for query in captured.captured_queries if "executions_noderun" in query["sql"]]
    assert len(reading) == 3  # the light fields; the heavy ones of the pairs to settle; of the page's
    with connection.cursor() as cursor:
        for sql in reading:
            plan = plan_of(cursor, sql)
            assert "Seq Scan on executions_noderun" not in plan, plan
            assert "SubPlan" not in plan, plan
            assert "Index" in plan, plan
        assert "Index Only Scan" in plan_of(cursor, reading[0])  # the light fields, from the index alone


def plan_of(cursor, sql: str) -> str:
    cursor.execute(f"EXPLAIN {sql}")
    return "\n".join(row[0] for row in cursor.fetchall())


def tool_call(id, name, arguments, result, status="success"):
    """A tool call as the tool loop records it (its digest: of the result's JSON text)."""
    text = json.dumps(result if status == "success" else {"error": result})
    return {"id": id, "turn": 1, "name": name, "server": name.split(".")[0], "tool": name.split(".")[1],
            "arguments": arguments, "status": status, "error_code": "" if status == "success" else status,
            "error": "" if status == "success" else result, "duration_ms": 3.5, "result_preview": text[:500],
            "result_digest": "sha256:" + hashlib.sha256(text.encode()).hexdigest(),
            "result": result if status == "success" else None, "result_kept": status == "success",
            "result_tokens": 10, "approved_by": None, "started_at": "2026-02-03T10:30:00Z"}


def test_it_pairs_the_tool_calls_of_a_node_by_tool_and_arguments_and_tells_their_results_apart(api):
    search, read = "builtin.knowledge_search", "builtin.read_file"
    a = make_run("exec_tools_a", [node_run("draft"), node_run("review", tool_calls=[
        tool_call("call_1_1", search, {"query": "budget", "limit": 5}, {"found": 2}),
        tool_call("call_1_2", read, {"path": "a.md"}, "# A"),
        tool_call("call_1_3", read, {"path": "gone.md"}, "no such file", status="TOOL_ERROR"),
        tool_call("call_2_1", search, {"query": "tokens"}, {"found": 1})])])
    b = make_run("exec_tools_b", [node_run("draft"), node_run("review", tool_calls=[
        tool_call("call_1_1", search, {"limit": 5, "query": "budget"}, {"found": 2}),  # its keys in another order
        tool_call("call_1_2", read, {"path": "a.md"}, "# A, edited"),
        tool_call("call_1_3", read, {"path": "gone.md"}, "no such file", status="TOOL_ERROR"),
        tool_call("call_1_4", read, {"path": "b.md"}, "# B")])])
    answer = api.viewer.get("/api/executions/compare", a=a.execution_id, b=b.execution_id)
    assert answer.status_code == 200, answer.json()
    draft, review = answer.json()["pairs"]
    assert draft["tool_calls"] == []
    assert [(call["name"], call["arguments"], call["verdict"]) for call in review["tool_calls"]] == [
        (search, {"query": "budget", "limit": 5}, "same_result"),
        (read, {"path": "a.md"}, "different_result"),
        (read, {"path": "gone.md"}, "same_result"),  # the same failure
        (search, {"query": "tokens"}, "only_a"),
        (read, {"path": "b.md"}, "only_b")]
    same, different, failed, only_a, only_b = review["tool_calls"]
    assert different["a"]["result_preview"] == '"# A"' and different["b"]["result_preview"] == '"# A, edited"'
    assert failed["a"]["error_code"] == failed["b"]["error_code"] == "TOOL_ERROR"
    assert only_a["b"] is None and only_b["a"] is None and only_b["b"]["id"] == "call_1_4"
    # Shown beside the pair, not counted: the outputs and context decisions are the same.
    assert review["verdict"] == "same" and not review["differs"]
