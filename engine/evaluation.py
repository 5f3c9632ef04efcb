"""Scoring a run (core-data-structures §7): plain facts in, the seed's scores out, with
each score's formula and the figures it used, so a person can check the arithmetic.

The service (`quality/evaluations.py`) gathers the facts from the database: one
`RunFact` per node run, the verifiable `Check`s (contract checks, verified answers) and
an optional judge's verdict. The same function scores a whole execution and the slice of
it that one agent performed.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

SCORES = ("accuracy", "completeness", "efficiency")
GATE_KEYS = (*SCORES, "overall_score")

FORMULAS = {
    "completeness": "completed nodes / expected nodes — a node is completed when its last run succeeded "
                    "and its output meets every contract it feeds",
    "accuracy": "mean of (passed checks / checks) and the judge's score, of those present; not measured (null) "
                "when the run has nothing verifiable; 0.0 when the run failed or not every expected node "
                "completed, whatever the checks say — checks are contract checks of every output produced and "
                "verified answers (e.g. a Game-of-24 expression recomputed exactly; a search that found none "
                "fails its check)",
    "efficiency": "(token efficiency + time efficiency) / 2, where token efficiency = 1 − tokens used "
                  "(all attempts, in + out) / token budget (max input + output tokens of each expected "
                  "node's agent) and time efficiency = 1 − elapsed / the workflow's max_wall_seconds, each "
                  "clamped to [0, 1]",
    "overall_score": "weights · (accuracy, completeness, efficiency) / the sum of their weights, over the scores "
                     "measured (an accuracy not measured is left out, counted neither 0 nor 1)",
    "pass": "overall_score ≥ the pass score, accuracy measured and the run not failed",
    "action": "approve when passed; otherwise revise when overall_score ≥ the revise score, reject below it",
}


@dataclass(frozen=True)
class RunFact:
    """One node run, as scoring sees it."""

    node_id: str
    agent_id: str
    status: str
    tokens: int = 0  # in + out
    token_budget: int = 0  # max input + output tokens of the agent that ran it
    duration_ms: int = 0
    error_code: str = ""


@dataclass(frozen=True)
class Check:
    """Something verifiable about the run's outputs, and whether it held."""

    name: str
    passed: bool
    node_id: str = ""
    agent_id: str = ""
    detail: str = ""


@dataclass(frozen=True)
class Verdict:
    """A judge agent's score in [0, 1] and what it said."""

    agent_id: str
    score: float
    feedback: tuple[str, ...] = ()


@dataclass(frozen=True)
class Policy:
    """The weights and thresholds from settings."""

    weights: dict[str, float] = field(default_factory=lambda: {"accuracy": 0.4, "completeness": 0.4, "efficiency": 0.2})
    pass_score: float = 0.7
    revise_score: float = 0.4


@dataclass(frozen=True)
class Scored:
    accuracy: float | None  # None: not measured (nothing verifiable); details say why
    completeness: float
    efficiency: float
    overall_score: float
    passed: bool
    action: str
    feedback: list[str]
    details: dict[str, Any]

    def scores(self) -> dict[str, float | None]:
        return {"accuracy": self.accuracy, "completeness": self.completeness, "efficiency": self.efficiency,
                "overall_score": self.overall_score}


def clamp(value: float) -> float:
    return max(0.0, min(1.0, value))


def _round(value: float) -> float:
    return round(clamp(value), 4)


def overall_of(scores: dict[str, float | None], policy: Policy) -> float:
    """The weighted mean of accuracy, completeness and efficiency, of those measured: a score
    not measured (None) is left out rather than counted as 0 or 1."""
    measured = {name: value for name in SCORES if (value := scores[name]) is not None}
    weights = {name: policy.weights[name] for name in measured}
    total = sum(weights.values())
    return sum(weights[name] * value for name, value in measured.items()) / total if total else 0.0


def decide(overall: float, policy: Policy, *, measured: bool = True, failed: bool = False) -> tuple[bool, str]:
    """Pass and action. Nothing passes on an accuracy nobody measured, and a run that failed
    is never approved: both are at best sent back for revision."""
    passed = overall >= policy.pass_score and measured and not failed
    return passed, "approve" if passed else "revise" if overall >= policy.revise_score else "reject"


def verdict_of(scores: dict[str, float | None], policy: Policy) -> dict[str, Any]:
    """What §7 derives from the three scores, for a person's evaluation as for a computed one:
    `overall_score` (as stored), `pass` and `action`."""
    overall = _round(overall_of(scores, policy))
    passed, action = decide(overall, policy, measured=scores["accuracy"] is not None)
    return {"overall_score": overall, "pass": passed, "action": action}


def score_run(*, expected: Iterable[str], runs: list[RunFact], checks: list[Check], verdict: Verdict | None = None,
              elapsed_seconds: float, wall_seconds: float, policy: Policy = Policy(),
              run_failed: bool = False) -> Scored:
    """Score the node runs of a run (or of one agent's part of it). `run_failed`: the run
    ended failed (a state machine past max_steps fails with every node it entered done).

    1. Completeness: of the expected nodes, those whose last run succeeded and whose
       contract checks on the final output passed.
    2. Accuracy, one rule whatever the topology: what failed — the run, or any expected
       node — is 0.0, never accurate; otherwise the share of checks that passed, averaged
       with the judge's score; with neither, not measured (None), and said so.
    3. Efficiency: tokens of every attempt against the expected nodes' budget, and
       elapsed time against the wall-time limit.
    4. Overall: the weighted mean of the scores measured. Pass from the policy's threshold,
       never on an accuracy not measured nor for what failed; the action follows.
    """
    expected = list(dict.fromkeys(expected))
    last: dict[str, RunFact] = {}
    for run in runs:
        last[run.node_id] = run
    broken = {check.node_id for check in checks if not check.passed and check.name.startswith("contract") and check.node_id}
    completed = [n for n in expected if n in last and last[n].status == "success" and n not in broken]
    incomplete = [n for n in expected if n not in completed]
    completeness = len(completed) / len(expected) if expected else 0.0

    passed_checks = sum(check.passed for check in checks)
    parts = []
    if checks:
        parts.append(passed_checks / len(checks))
    if verdict is not None:
        parts.append(clamp(verdict.score))
    failed = run_failed or bool(incomplete)
    accuracy: float | None
    if failed:
        accuracy = 0.0
    elif parts:
        accuracy = sum(parts) / len(parts)
    else:
        accuracy = None

    budgets: dict[str, int] = {}
    for run in runs:
        if run.node_id in expected:
            budgets.setdefault(run.node_id, run.token_budget)
    token_budget = sum(budgets.values())
    tokens_used = sum(run.tokens for run in runs)
    token_efficiency = clamp(1 - tokens_used / token_budget) if token_budget else 1.0
    time_efficiency = clamp(1 - elapsed_seconds / wall_seconds) if wall_seconds > 0 else 1.0
    efficiency = (token_efficiency + time_efficiency) / 2

    overall = overall_of({"accuracy": accuracy, "completeness": completeness, "efficiency": efficiency}, policy)
    passed, action = decide(overall, policy, measured=accuracy is not None, failed=failed)

    feedback = []
    if incomplete:
        feedback.append(f"completeness: {len(completed)} of {len(expected)} nodes completed; not completed: "
                        + ", ".join(incomplete))
    for check in checks:
        if not check.passed:
            where = f" ({check.node_id})" if check.node_id else ""
            feedback.append(f"accuracy: {check.name}{where} failed" + (f": {check.detail}" if check.detail else ""))
    if failed:
        feedback.append("accuracy: 0.0, since " + ("the run failed" if run_failed else "not every node completed")
                        + ": what failed is never scored as accurate nor approved")
    elif not parts:
        feedback.append("accuracy: not measured — nothing verifiable in this run (no contract, verified answer or "
                        "judge); the overall score is of what was measured, and the run does not pass on it")
    if verdict is not None:
        feedback.extend(f"judge {verdict.agent_id}: {line}" for line in verdict.feedback)
    if token_efficiency < 0.5:
        feedback.append(f"efficiency: {tokens_used} tokens used of a {token_budget}-token budget")
    if time_efficiency < 0.5:
        feedback.append(f"efficiency: {elapsed_seconds:.1f} s of a {wall_seconds:.0f} s limit")

    details = {
        "formulas": FORMULAS,
        "completeness": {"expected": expected, "completed": completed, "incomplete": incomplete},
        "accuracy": {"checks": [check.__dict__ for check in checks], "checks_passed": passed_checks,
                     "judge": verdict.__dict__ | {"feedback": list(verdict.feedback)} if verdict else None,
                     "unverified": not parts, "measured": accuracy is not None,
                     "failed": "the run failed" if run_failed else "not every node completed" if failed else None},
        "efficiency": {"tokens_used": tokens_used, "token_budget": token_budget,
                       "token_efficiency": _round(token_efficiency), "elapsed_seconds": round(elapsed_seconds, 3),
                       "wall_seconds": wall_seconds, "time_efficiency": _round(time_efficiency)},
        "policy": {"weights": policy.weights, "pass_score": policy.pass_score, "revise_score": policy.revise_score},
    }
    return Scored(_rounded(accuracy), _round(completeness), _round(efficiency), _round(overall), passed, action,
                  feedback, details)


def _rounded(value: float | None) -> float | None:
    return None if value is None else _round(value)


def aggregate(evaluations: list[dict[str, Any]], policy: Policy = Policy()) -> Scored:
    """The mean of each score over evaluations (dicts with accuracy, completeness,
    efficiency, overall_score and evaluation_id); pass and action from the mean overall."""
    if not evaluations:
        raise ValueError("nothing to aggregate")
    means: dict[str, float | None] = {}
    for name in (*SCORES, "overall_score"):
        measured = [e[name] for e in evaluations if e[name] is not None]
        means[name] = sum(measured) / len(measured) if measured else None
    passed, action = decide(means["overall_score"] or 0.0, policy, measured=means["accuracy"] is not None)
    feedback = [f"the mean of {len(evaluations)} evaluation(s), newest first: "
                + ", ".join(e["evaluation_id"] for e in evaluations)]
    unmeasured = [e["evaluation_id"] for e in evaluations if e["accuracy"] is None]
    if unmeasured:
        feedback.append(f"accuracy not measured in {len(unmeasured)} of {len(evaluations)}, left out of its mean"
                        + ("" if means["accuracy"] is not None else ": not measured in any, so none passes"))
    failing = [e["evaluation_id"] for e in evaluations if e["overall_score"] < policy.pass_score]
    if failing:
        feedback.append(f"{len(failing)} below the pass score {policy.pass_score}: " + ", ".join(failing))
    details = {"formulas": {name: f"mean of {name} over the evaluations" for name in (*SCORES, "overall_score")}
               | {"accuracy": "mean of accuracy over the evaluations that measured it"}
               | {"pass": FORMULAS["pass"], "action": FORMULAS["action"]},
               "evaluations": [e["evaluation_id"] for e in evaluations],
               "policy": {"pass_score": policy.pass_score, "revise_score": policy.revise_score}}
    return Scored(_rounded(means["accuracy"]), _round(means["completeness"] or 0.0),
                  _round(means["efficiency"] or 0.0), _round(means["overall_score"] or 0.0), passed, action,
                  feedback, details)


def gate_failures(scores: dict[str, float | None], gate: dict[str, float]) -> list[dict[str, Any]]:
    """The scores below the gate's minimums, in the gate's order. A score not measured
    (value None) fails its minimum: a gate is not passed on a score nobody measured."""
    return [{"score": name, "value": value, "minimum": minimum}
            for name, minimum in gate.items() if (value := scores[name]) is None or value < minimum]
