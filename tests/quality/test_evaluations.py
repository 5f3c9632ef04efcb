"""Evaluating runs of the demo workflows, driven in this process (the worker's task is
`executions.evaluate`; the real worker does it in tests/quality/test_evaluation_worker.py)."""
from unittest import mock

import pytest

from agents.models import Agent
from executions.models import Evaluation, Execution, ThoughtSearch
from executions.services import execution_abort, execution_start
from quality.evaluations import execution_evaluate
from tests.executions.conftest import approve_gate, drain
from tests.workflow_edits import edit_workflow
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def demo(in_process):
    return in_process.evaluate


def run(workflow_id, **input):
    return drain(execution_start(workflow=Workflow.objects.get(workflow_id=workflow_id), input=input))


def test_it_asks_a_worker_to_evaluate_a_run_once_it_ends(demo):
    execution = run("parallel_analysis", repository="acme")
    assert execution.status == "success"
    demo.assert_called_once_with((execution.pk,), countdown=None, queue=mock.ANY, producer=mock.ANY)


def test_it_evaluates_a_run_with_its_judge_its_agents_and_its_gate():
    execution = run("parallel_analysis", repository="acme")
    evaluation = execution_evaluate(execution_pk=execution.pk)
    assert (evaluation.target_type, evaluation.target_id, evaluation.method) == ("execution", execution.execution_id,
                                                                                 "computed")
    assert evaluation.completeness == 1.0
    judge = evaluation.details["accuracy"]["judge"]
    assert (judge["agent_id"], judge["score"]) == ("Judge", 1.0)  # the builtin rules find nothing wrong
    assert evaluation.accuracy == 1.0 and 0.9 < evaluation.efficiency <= 1.0
    assert (evaluation.passed, evaluation.action) == (True, "approve")
    assert "quality gate passed: completeness ≥ 1.0, overall_score ≥ 0.7" in evaluation.feedback
    execution.refresh_from_db()
    assert execution.quality_gate == {"passed": True, "failed": [], "run_failed": False, "gate": {"completeness": 1.0, "overall_score": 0.7},
                                      "evaluation_id": evaluation.evaluation_id}

    per_agent = Evaluation.objects.filter(execution=execution, target_type="agent")
    assert sorted(per_agent.values_list("target_id", flat=True)) == [
        "Code_Analyzer", "Docs_Analyzer", "Report_Synthesizer", "Test_Analyzer"]
    aggregates = Evaluation.objects.filter(method="aggregate")
    assert sorted(aggregates.values_list("target_type", "target_id")) == [
        ("agent", "Code_Analyzer"), ("agent", "Docs_Analyzer"), ("agent", "Report_Synthesizer"),
        ("agent", "Test_Analyzer"), ("workflow", "parallel_analysis")]
    assert aggregates.get(target_type="workflow").details["evaluations"] == [evaluation.evaluation_id]


def test_it_evaluates_a_run_once_however_often_it_is_asked():
    execution = run("parallel_analysis", repository="acme")
    first = execution_evaluate(execution_pk=execution.pk)
    count = Evaluation.objects.count()
    assert execution_evaluate(execution_pk=execution.pk).pk == first.pk
    assert Evaluation.objects.count() == count


def test_it_leaves_runs_that_have_not_ended_and_cancelled_ones_alone():
    execution = execution_start(workflow=Workflow.objects.get(workflow_id="parallel_analysis"), input={"repository": "acme"})
    assert execution_evaluate(execution_pk=execution.pk) is None
    Execution.objects.filter(pk=execution.pk).update(status="cancelled")
    assert execution_evaluate(execution_pk=execution.pk) is None
    assert execution_evaluate(execution_pk=10**9) is None  # deleted since: nothing to do
    assert not Evaluation.objects.exists()


def test_it_marks_a_run_that_misses_its_gate_and_names_the_score():
    edit_workflow("release_review", lambda document: document["evaluation"].update(quality_gate={"completeness": 1.0}))
    execution = drain(approve_gate(run("release_review", topic="v2")))
    assert execution.status == "escalated"  # the compliance node needs a tool nobody has
    execution_abort(execution=execution)
    evaluation = execution_evaluate(execution_pk=execution.pk)
    execution.refresh_from_db()
    assert execution.quality_gate["passed"] is False
    [failure] = execution.quality_gate["failed"]
    assert failure["score"] == "completeness" and failure["value"] < 1.0 and failure["minimum"] == 1.0
    assert evaluation.passed is False and evaluation.action in ("revise", "reject")
    assert any(line.startswith("quality gate failed: the run failed, completeness ") for line in evaluation.feedback)
    assert "compliance" in evaluation.details["completeness"]["incomplete"]


def test_a_state_machine_that_failed_on_max_steps_is_neither_accurate_nor_approved():
    def loop_forever(document):
        document["limits"]["max_steps"] = 4
        document["transitions"][1]["condition"] = "true"

    edit_workflow("release_review", loop_forever)
    execution = run("release_review", topic="loop")
    assert (execution.status, execution.ended_reason) == ("failed", "max_steps: the run reached its bound of 4 steps")
    evaluation = execution_evaluate(execution_pk=execution.pk)
    assert evaluation.completeness == 1.0  # every node it entered completed
    assert evaluation.accuracy == 0.0 and evaluation.details["accuracy"]["failed"] == "the run failed"
    assert evaluation.passed is False and evaluation.action != "approve"
    assert "accuracy: 0.0, since the run failed: what failed is never scored as accurate nor approved" in \
        evaluation.feedback


def test_a_run_with_nothing_verifiable_says_accuracy_was_not_measured_and_passes_no_gate_on_it(api):
    edit_workflow("parallel_analysis", lambda document: document["evaluation"].update(
        judge_agent=None, quality_gate={"accuracy": 0.5, "completeness": 1.0}))
    execution = run("parallel_analysis", repository="acme")  # nothing anyone checks says so
    assert execution.status == "success"
    evaluation = execution_evaluate(execution_pk=execution.pk)
    assert evaluation.accuracy is None and evaluation.details["accuracy"]["measured"] is False
    assert evaluation.overall_score < 0.9999 and evaluation.overall_score == pytest.approx(
        (0.4 * evaluation.completeness + 0.2 * evaluation.efficiency) / 0.6, abs=1e-4)
    assert evaluation.passed is False and evaluation.action == "revise"
    execution.refresh_from_db()
    assert execution.quality_gate["passed"] is False
    assert execution.quality_gate["failed"] == [{"score": "accuracy", "value": None, "minimum": 0.5}]
    assert "quality gate failed: accuracy not measured (minimum 0.5)" in evaluation.feedback
    parts = Evaluation.objects.filter(execution=execution, target_type="agent")
    assert parts.count() == 4 and set(parts.values_list("accuracy", flat=True)) == {None}
    aggregate = Evaluation.objects.get(method="aggregate", target_type="workflow", target_id="parallel_analysis")
    assert aggregate.accuracy is None and aggregate.passed is False

    shown = api.viewer.get(f"/api/evaluations/{evaluation.evaluation_id}").json()
    assert shown["scores"]["accuracy"] is None and shown["pass"] is False
    exported = api.viewer.get(f"/api/evaluations/{evaluation.evaluation_id}").json()
    document = {key: exported[key] for key in ("target_type", "target_id", "scores", "overall_score", "pass",
                                                "feedback", "action")}
    recorded = api.author.post("/api/evaluations", {**document, "evaluation_id": "by_hand_unmeasured"})
    assert recorded.status_code == 201, recorded.json()
    assert Evaluation.objects.get(evaluation_id="by_hand_unmeasured").accuracy is None
    claimed = api.author.post("/api/evaluations", {**document, "pass": True, "action": "approve"})
    assert claimed.status_code == 422 and "pass is true, but the scores give false" in claimed.json()["message"]


def test_it_checks_a_game_of_24_answer_again_with_exact_arithmetic():
    good = run("game24", numbers=[4, 9, 10, 13])
    evaluation = execution_evaluate(execution_pk=good.pk)
    [check] = evaluation.details["accuracy"]["checks"]
    assert (check["name"], check["passed"], check["node_id"]) == ("verified answer", True, "solve")
    assert evaluation.accuracy == 1.0 and good.quality_gate is None
    good.refresh_from_db()
    assert good.quality_gate["passed"] is True

    bad = run("game24", numbers=[4, 9, 10, 13])
    search = ThoughtSearch.objects.get(execution=bad)
    search.final_solution = {**search.final_solution, "answer": "(13 - 9) * (10 - 4) + 0"}  # 24 with a made-up 0
    search.save()
    evaluation = execution_evaluate(execution_pk=bad.pk)
    assert evaluation.accuracy == 0.0
    bad.refresh_from_db()
    assert bad.quality_gate["failed"] == [{"score": "accuracy", "value": 0.0, "minimum": 1.0}]
    assert any("verified answer (solve) failed" in line for line in evaluation.feedback)


def test_it_checks_an_answer_with_the_first_verifier_that_knows_its_problem(monkeypatch):
    from quality import evaluations

    bad = run("game24", numbers=[4, 9, 10, 13])
    search = ThoughtSearch.objects.get(execution=bad)
    search.final_solution = {**search.final_solution, "answer": "(13 - 9) * (10 - 4) + 0"}  # the search still says valid
    search.save()
    asked = []

    def knows_nothing(answer, problem):
        asked.append(problem)
        raise ValueError("not a problem this verifier knows")

    # No verifier knows the problem: the search's own verification is trusted.
    monkeypatch.setattr(evaluations, "ANSWER_VERIFIERS", [knows_nothing])
    [check] = execution_evaluate(execution_pk=bad.pk).details["accuracy"]["checks"]
    assert check["passed"] is True and asked == [search.problem]

    Evaluation.objects.filter(execution=bad).delete()
    evaluations.register_answer_verifier(lambda answer, problem: [f"{answer} is not allowed"])
    [check] = execution_evaluate(execution_pk=bad.pk).details["accuracy"]["checks"]
    assert check["passed"] is False and check["detail"].endswith("is not allowed")
    assert len(asked) == 2, "the verifier that knows nothing is asked first, then the next"


def test_it_scores_a_search_that_found_no_answer_as_a_failed_check_and_its_gate_as_missed():
    failed = run("game24", numbers=[1, 1, 1, 1])
    assert failed.status == "failed"
    evaluation = execution_evaluate(execution_pk=failed.pk)
    [check] = evaluation.details["accuracy"]["checks"]
    assert (check["name"], check["passed"], check["node_id"]) == ("verified answer", False, "solve")
    assert check["detail"].startswith("the search found no answer (SEARCH_EXHAUSTED: no terminal node meets")
    assert evaluation.accuracy == 0.0 and evaluation.passed is False
    failed.refresh_from_db()
    assert failed.quality_gate["passed"] is False
    assert failed.quality_gate["failed"] == [{"score": "accuracy", "value": 0.0, "minimum": 1.0}]
    assert not any(line.startswith("quality gate passed") for line in evaluation.feedback)


def test_it_checks_each_final_output_against_the_contracts_it_feeds():
    execution = run("thesis_reading")
    assert execution.status == "success"
    scholar = execution.node_runs.get(node_id="task_scholar_001")
    scholar.output = {"atoms": [{"atom_id": "a1"}]}  # breaks Scholar → Validator
    scholar.save()
    evaluation = execution_evaluate(execution_pk=execution.pk)
    checks = {check["name"]: check for check in evaluation.details["accuracy"]["checks"]}
    assert checks["contract Scholar → Validator"]["passed"] is False
    assert "required" in checks["contract Scholar → Validator"]["detail"]
    assert checks["contract Validator → Knowledge_Vault"]["passed"] is True
    assert evaluation.details["completeness"]["incomplete"] == ["task_scholar_001"]
    scholar_part = Evaluation.objects.get(execution=execution, target_type="agent", target_id="Scholar")
    assert (scholar_part.accuracy, scholar_part.completeness) == (0.0, 0.0)
    assert Evaluation.objects.get(execution=execution, target_type="agent", target_id="Validator").accuracy == 1.0


def use_model_judge(settings, chat_server):
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "chat": {
        "kind": "openai_compatible", "base_url": chat_server.base_url, "model": "judge-model", "max_retries": 0,
        "timeout_seconds": 5}}
    Agent.objects.filter(agent_id="Judge").update(backend="chat")


def test_it_asks_a_judge_on_a_chat_completions_backend(settings, chat_server):
    use_model_judge(settings, chat_server)
    chat_server.reply('{"score": 0.25, "feedback": ["the report repeats itself"]}')
    execution = run("parallel_analysis", repository="acme")
    evaluation = execution_evaluate(execution_pk=execution.pk)
    [request] = chat_server.requests
    prompt = request.body["messages"][-1]["content"]
    assert f"run {execution.execution_id}" in prompt and '"task_d"' in prompt
    assert evaluation.accuracy == 0.25  # no contract in this workflow: the judge alone
    assert "judge Judge: the report repeats itself" in evaluation.feedback
    execution.refresh_from_db()
    assert execution.quality_gate["failed"][0]["score"] == "overall_score"


def test_it_reports_a_judge_that_answers_out_of_shape_and_relies_on_the_checks(settings, chat_server):
    use_model_judge(settings, chat_server)
    chat_server.reply('{"verdict": "fine"}')
    execution = run("parallel_analysis", repository="acme")
    evaluation = execution_evaluate(execution_pk=execution.pk)
    assert evaluation.details["accuracy"]["judge"] is None
    assert evaluation.details["accuracy"]["judge_problem"].startswith("judge Judge answered in another shape")
    # No contract in this workflow and no verdict: accuracy was not measured, and nothing passes on it.
    assert evaluation.accuracy is None and evaluation.details["accuracy"]["unverified"] is True
    assert (evaluation.passed, evaluation.action) == (False, "revise")


def test_it_refreshes_an_aggregate_when_a_person_adds_an_evaluation(api):
    execution = run("parallel_analysis", repository="acme")
    execution_evaluate(execution_pk=execution.pk)
    response = api.author.post("/api/evaluations", {
        "evaluation_id": "by_hand", "target_type": "agent", "target_id": "Code_Analyzer",
        "scores": {"accuracy": 0.0, "completeness": 0.0, "efficiency": 0.0}, "overall_score": 0.0, "pass": False,
        "feedback": ["wrong file"], "action": "reject"})
    assert response.status_code == 201
    combined = Evaluation.objects.get(method="aggregate", target_type="agent", target_id="Code_Analyzer")
    assert combined.details["evaluations"][0] == "by_hand" and len(combined.details["evaluations"]) == 2
    computed = Evaluation.objects.get(execution=execution, target_type="agent", target_id="Code_Analyzer")
    assert combined.overall_score == pytest.approx(round(computed.overall_score / 2, 4), abs=1e-4)


def test_it_evaluates_a_run_whose_natural_id_a_person_took(api):
    execution = run("parallel_analysis", repository="acme")
    api.author.post("/api/evaluations", {
        "evaluation_id": f"eval_{execution.execution_id}", "target_type": "workflow", "target_id": "parallel_analysis",
        "scores": {"accuracy": 1, "completeness": 1, "efficiency": 1}, "overall_score": 1, "pass": True,
        "action": "approve"})
    evaluation = execution_evaluate(execution_pk=execution.pk)
    assert evaluation.evaluation_id.startswith(f"eval_{execution.execution_id}_")
    assert (evaluation.target_type, evaluation.method) == ("execution", "computed")


def test_a_run_that_failed_never_meets_its_gate_whatever_its_scores():
    from executions.page_selectors import gate_summary

    edit_workflow("release_review", lambda document: document["evaluation"].update(quality_gate={"overall_score": 0.0}))
    execution = drain(approve_gate(run("release_review", topic="v2")))
    execution_abort(execution=execution)  # escalated, then aborted: the run failed
    evaluation = execution_evaluate(execution_pk=execution.pk)
    execution.refresh_from_db()
    assert (execution.status, execution.quality_gate["passed"]) == ("failed", False)
    assert execution.quality_gate["failed"] == [] and execution.quality_gate["run_failed"] is True
    assert evaluation.passed is False and "quality gate failed: the run failed" in evaluation.feedback
    assert gate_summary(execution.quality_gate)["text"] == "Quality gate failed: the run failed"
    assert gate_summary(evaluation.details["quality_gate"])["passed"] is False
