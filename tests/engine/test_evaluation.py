"""The pure scorer: each formula on facts small enough to check by hand."""
import pytest

from engine.evaluation import Check, Policy, RunFact, Verdict, aggregate, gate_failures, score_run, verdict_of

BUDGET = 1000


def run(node_id, status="success", agent="a", tokens=100, **extra):
    return RunFact(node_id=node_id, agent_id=agent, status=status, tokens=tokens, token_budget=BUDGET, **extra)


def score(runs, checks=(), verdict=None, expected=("x", "y"), elapsed=0.0, wall=100.0, policy=Policy(),
          run_failed=False):
    return score_run(expected=list(expected), runs=list(runs), checks=list(checks), verdict=verdict,
                     elapsed_seconds=elapsed, wall_seconds=wall, policy=policy, run_failed=run_failed)


def test_it_scores_a_clean_run_by_the_written_formulas():
    scored = score([run("x"), run("y")], checks=[Check("contract x → y", True, "x", "a")], elapsed=10)
    assert scored.completeness == 1.0
    assert scored.accuracy == 1.0
    # tokens: 1 − 200 / 2000 = 0.9; time: 1 − 10 / 100 = 0.9
    assert scored.efficiency == 0.9
    assert scored.overall_score == pytest.approx(0.4 * 1 + 0.4 * 1 + 0.2 * 0.9)
    assert (scored.passed, scored.action) == (True, "approve")
    assert scored.details["efficiency"] | {} == {"tokens_used": 200, "token_budget": 2000, "token_efficiency": 0.9,
                                                 "elapsed_seconds": 10.0, "wall_seconds": 100.0, "time_efficiency": 0.9}
    assert set(scored.details["formulas"]) >= {"accuracy", "completeness", "efficiency", "overall_score"}


def test_it_counts_a_node_complete_only_when_its_last_run_succeeded():
    scored = score([run("x", "failed"), run("x"), run("y", "failed")])
    assert scored.completeness == 0.5
    assert scored.details["completeness"] == {"expected": ["x", "y"], "completed": ["x"], "incomplete": ["y"]}
    assert scored.feedback[0] == "completeness: 1 of 2 nodes completed; not completed: y"


def test_it_does_not_count_a_node_whose_final_output_breaks_a_contract():
    scored = score([run("x"), run("y")], checks=[Check("contract x → y", False, "x", "a", "at atoms: required")])
    assert scored.completeness == 0.5
    assert scored.accuracy == 0.0
    assert "accuracy: contract x → y (x) failed: at atoms: required" in scored.feedback


def test_it_averages_the_checks_with_the_judge():
    checks = [Check("contract", True), Check("contract", True), Check("verified answer", False), Check("contract", True)]
    scored = score([run("x"), run("y")], checks=checks, verdict=Verdict("judge", 0.5, ("thin",)))
    assert scored.accuracy == pytest.approx((3 / 4 + 0.5) / 2)
    assert "judge judge: thin" in scored.feedback
    assert scored.details["accuracy"]["judge"]["score"] == 0.5


def test_it_says_accuracy_was_not_measured_when_nothing_could_be_verified_and_passes_nothing_on_it():
    scored = score([run("x"), run("y")], elapsed=10)
    assert scored.accuracy is None and scored.scores()["accuracy"] is None
    assert scored.details["accuracy"]["unverified"] is True and scored.details["accuracy"]["measured"] is False
    assert ("accuracy: not measured — nothing verifiable in this run (no contract, verified answer or judge); the "
            "overall score is of what was measured, and the run does not pass on it") in scored.feedback
    # completeness 1.0 and efficiency 0.9, by their weights (0.4, 0.2) alone
    assert scored.overall_score == pytest.approx((0.4 * 1 + 0.2 * 0.9) / 0.6, abs=1e-4)
    assert (scored.passed, scored.action) == (False, "revise")


def test_it_charges_every_attempt_against_the_budget_of_the_expected_nodes():
    scored = score([run("x", "failed", tokens=900), run("x", tokens=900), run("y", tokens=400)], elapsed=0)
    # 2,200 tokens of a 2,000-token budget: token efficiency 0; time efficiency 1
    assert scored.details["efficiency"]["token_efficiency"] == 0.0
    assert scored.efficiency == 0.5
    assert "efficiency: 2200 tokens used of a 2000-token budget" in scored.feedback


def test_it_decides_pass_and_action_from_the_thresholds():
    policy = Policy(weights={"accuracy": 1, "completeness": 1, "efficiency": 1}, pass_score=0.9, revise_score=0.5)
    half = score([run("x"), run("y")], checks=[Check("contract", True), Check("verified answer", False)],
                 policy=policy, elapsed=100)  # (0.5 + 1 + 0.45) / 3
    assert half.overall_score == pytest.approx(0.65)
    assert (half.passed, half.action) == (False, "revise")
    none = score([run("x", "failed"), run("y", "failed")], checks=[Check("contract", False)], policy=policy, elapsed=100)
    assert (none.passed, none.action) == (False, "reject")


def test_it_aggregates_by_the_mean_and_names_what_it_took_in():
    rows = [{"evaluation_id": "e2", "accuracy": 1.0, "completeness": 0.5, "efficiency": 0.8, "overall_score": 0.76},
            {"evaluation_id": "e1", "accuracy": 0.5, "completeness": 0.5, "efficiency": 1.0, "overall_score": 0.6}]
    combined = aggregate(rows)
    assert combined.scores() == {"accuracy": 0.75, "completeness": 0.5, "efficiency": 0.9, "overall_score": 0.68}
    assert (combined.passed, combined.action) == (False, "revise")
    assert combined.details["evaluations"] == ["e2", "e1"]
    assert combined.feedback[1] == "1 below the pass score 0.7: e1"
    with pytest.raises(ValueError):
        aggregate([])


def test_it_names_the_scores_below_a_gate():
    scores = {"accuracy": 0.5, "completeness": 1.0, "efficiency": 0.9, "overall_score": 0.78}
    assert gate_failures(scores, {"completeness": 1.0, "accuracy": 0.8}) == [
        {"score": "accuracy", "value": 0.5, "minimum": 0.8}]
    assert gate_failures(scores, {"overall_score": 0.7}) == []


def test_it_does_not_take_a_failed_run_with_nothing_verifiable_as_accurate():
    scored = score([run("x"), run("y", status="failed")])
    assert scored.accuracy == 0.0 and scored.details["accuracy"]["unverified"] is True
    assert "accuracy: 0.0, since not every node completed: what failed is never scored as accurate nor " \
           "approved" in scored.feedback


def test_a_failed_run_is_never_accurate_nor_approved_whatever_its_topology():
    generous = Policy(pass_score=0.1, revise_score=0.05)
    # A state machine past max_steps: every node it entered completed, and its checks held.
    looped = score([run("x"), run("y")], checks=[Check("contract", True)], run_failed=True, policy=generous)
    # A par with a failed node: the same rule, not a default of its own.
    par = score([run("x"), run("y", "failed")], checks=[Check("contract", True)], run_failed=True, policy=generous)
    for scored in (looped, par):
        assert scored.accuracy == 0.0 and scored.passed is False and scored.action == "revise"
    assert looped.completeness == 1.0 and looped.details["accuracy"]["failed"] == "the run failed"
    assert "accuracy: 0.0, since the run failed: what failed is never scored as accurate nor approved" in \
        looped.feedback
    assert score([run("x"), run("y")], checks=[Check("contract", True)], policy=generous).passed is True


def test_it_fails_a_gate_on_a_score_nobody_measured_and_leaves_it_out_of_means():
    scores = {"accuracy": None, "completeness": 1.0, "efficiency": 0.9, "overall_score": 0.97}
    assert gate_failures(scores, {"accuracy": 0.5, "completeness": 1.0}) == [
        {"score": "accuracy", "value": None, "minimum": 0.5}]
    assert verdict_of({"accuracy": None, "completeness": 1.0, "efficiency": 1.0}, Policy()) == {
        "overall_score": 1.0, "pass": False, "action": "revise"}
    rows = [{"evaluation_id": "e2", "accuracy": None, "completeness": 1.0, "efficiency": 1.0, "overall_score": 1.0},
            {"evaluation_id": "e1", "accuracy": 0.5, "completeness": 1.0, "efficiency": 1.0, "overall_score": 0.8}]
    combined = aggregate(rows)
    assert combined.accuracy == 0.5 and combined.overall_score == 0.9 and combined.passed is True
    assert "accuracy not measured in 1 of 2, left out of its mean" in combined.feedback
    never = aggregate(rows[:1])
    assert never.accuracy is None and (never.passed, never.action) == (False, "revise")
