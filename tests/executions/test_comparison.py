"""Two runs compared: `execution_comparison`, `GET /api/executions/compare` and the command
`compare_executions`. The runs are written straight to the database: comparing reads only."""
import io
import json
from datetime import timedelta

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
from executions.comparison import execution_comparison, executions_for_comparison
from executions.models import Evaluation, Execution, NodeRun
from executions.services import execution_rerun, execution_start
from tests.executions.conftest import drain
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
    assert comparison["counts"] == {"pairs": {"same": 1, "differs": 1, "only_a": 0, "only_b": 1},
                                    "nodes": {"same": 1, "differs": 1, "only_a": 0, "only_b": 1}}
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


def runs_of(count, version):
    """A state machine's loop: draft, review, publish, compliance, again and again."""
    nodes = ["draft", "review", "publish", "compliance"]
    return [node_run(nodes[i % 4], agent_version=version, output={"i": i, "text": "x" * 50}) for i in range(count)]


def test_it_compares_two_runs_of_500_node_runs_in_as_many_queries_as_two_of_5(api, django_assert_max_num_queries):
    version = AgentVersion.objects.filter(agent__agent_id="Drafter").first()
    for execution_id, count in (("exec_small_a", 5), ("exec_small_b", 5), ("exec_large_a", 500), ("exec_large_b", 500)):
        make_run(execution_id, runs_of(count, version))
    for execution in Execution.objects.all():
        evaluate(execution, 0.8)
    api.viewer.get("/api/me")  # the token's first use of the minute is written down: not part of the comparison

    def queries(a, b):
        with CaptureQueriesContext(connection) as captured:
            response = api.viewer.get("/api/executions/compare", a=a, b=b)
        assert response.status_code == 200, response.json()
        return len(captured), response.json()

    few, small = queries("exec_small_a", "exec_small_b")
    many, large = queries("exec_large_a", "exec_large_b")
    assert len(small["pairs"]) == 5 and len(large["pairs"]) == 500
    assert large["pairs"][-1]["b"]["agent_version"] == version.version
    assert many == few
    # The token with its user, both runs, their node runs, their evaluations, the graph's nodes and transitions.
    with django_assert_max_num_queries(6):
        api.viewer.get("/api/executions/compare", a="exec_large_a", b="exec_large_b")


# -- the command -------------------------------------------------------------------------------


def test_the_command_prints_the_comparison_as_json(two_runs):
    out = io.StringIO()
    call_command("compare_executions", "exec_source", "exec_rerun", stdout=out)
    printed = json.loads(out.getvalue())
    assert printed == json.loads(json.dumps(execution_comparison(*two_runs)))
    assert printed["counts"]["pairs"] == {"same": 1, "differs": 1, "only_a": 0, "only_b": 1}


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
