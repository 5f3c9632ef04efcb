"""An experiment's figures from a few hand-made records."""
import numpy as np
import pytest

from engine.experiments.aggregates import aggregate_experiment
from engine.experiments.records import ItemRecord, NodeRecord
from engine.experiments.scorers import NO_EXPECTED, NO_OUTPUT, NotScored, Score, check_scorers

SCORERS = check_scorers([{"type": "exact"}, {"type": "llm_judge", "rubric": "good", "name": "judge"}])


def trimmed_record():
    return {"resolution": {"strategy": "priority_based_trimming", "actions": [
        {"data": "notes", "action": "summarize", "stage": "trimming"}]}}


def summary_record():
    return {"resolution": {"strategy": "transfer_modes", "actions": [
        {"data": "paper", "action": "summarize", "stage": "transfer"}]}}


RECORDS = [
    ItemRecord("a", "success", output=1, scores={"exact": Score(1.0, "="), "judge": Score(0.9, "j")}, tokens=100,
               cost=2.0, latency_seconds=1.0,
               nodes=[NodeRecord("draft", 60, trimmed_record()), NodeRecord("review", 40, None)]),
    ItemRecord("b", "success", output=2, scores={"exact": Score(0.0, "≠"), "judge": Score(0.4, "j")}, tokens=200,
               cost=4.0, latency_seconds=2.0,
               nodes=[NodeRecord("draft", 120, summary_record(),
                                 [{"error_code": "REF_NOT_FOUND"}, {"error_code": "REF_TIMEOUT"}]),
                      NodeRecord("review", 80, {"resolution": {"strategy": "none", "actions": []}})]),
    ItemRecord("c", "success", output=3, scores={"exact": NotScored(NO_EXPECTED, "none"), "judge": Score(0.5, "j")},
               tokens=100, cost=3.0, latency_seconds=4.0, nodes=[NodeRecord("draft", 90, None)]),
    ItemRecord("d", "failed", error_code="NODE_TIMEOUT", scores={"exact": NotScored(NO_OUTPUT, "failed")},
               tokens=50, cost=1.0, latency_seconds=10.0,
               nodes=[NodeRecord("draft", 50, None, [{"error_code": "REF_NOT_FOUND"}])]),
    ItemRecord("e", "failed", tokens=0, cost=0.0, latency_seconds=None),
    ItemRecord("f", "cancelled"),
]


def test_it_counts_statuses_failures_tokens_cost_and_latency():
    figures = aggregate_experiment(RECORDS, SCORERS, rng=np.random.default_rng(0), resamples=200)
    assert figures.items == 6
    assert figures.statuses == {"success": 3, "failed": 2, "cancelled": 1}
    assert figures.failures_by_code == {"NODE_TIMEOUT": 1, "UNSPECIFIED": 1}
    assert (figures.tokens_total, figures.tokens_mean) == (450, 75.0)
    assert (figures.cost_total, figures.cost_mean) == (10.0, 10.0 / 6)
    # latencies 1, 2, 4, 10: p50 at h = 1.5 → 3.0; p95 at h = 2.85 → 4 + 0.85 × 6 = 9.1
    assert figures.latency_p50 == 3.0
    assert figures.latency_p95 == pytest.approx(9.1)


def test_it_summarises_each_scorer_over_the_items_it_scored():
    figures = aggregate_experiment(RECORDS, SCORERS, rng=np.random.default_rng(0), resamples=200)
    exact, judge = figures.scorers["exact"], figures.scorers["judge"]
    assert (exact.summary.count, exact.summary.mean, exact.summary.pass_rate) == (2, 0.5, 0.5)
    assert exact.not_scored == {"NO_EXPECTED": 1, "NO_OUTPUT": 1, "MISSING": 2}
    assert (judge.summary.count, judge.summary.mean, judge.threshold) == (3, pytest.approx(0.6), 0.5)
    assert judge.summary.pass_rate == pytest.approx(2 / 3)  # 0.9 and 0.5 are ≥ 0.5
    assert judge.summary.interval.low <= 0.6 <= judge.summary.interval.high
    assert judge.not_scored == {"MISSING": 3}


def test_it_tells_how_each_nodes_context_was_managed():
    nodes = aggregate_experiment(RECORDS, SCORERS, rng=np.random.default_rng(0)).nodes
    assert list(nodes) == ["draft", "review"]
    draft = nodes["draft"]
    assert (draft.runs, draft.mean_tokens) == (4, 80.0)  # (60 + 120 + 90 + 50) / 4
    assert (draft.trimmed, draft.summarised, draft.trimmed_rate, draft.summarised_rate) == (1, 2, 0.25, 0.5)
    assert (draft.resolution_failures, draft.runs_with_resolution_failures) == (3, 2)
    assert draft.resolution_failures_by_code == {"REF_NOT_FOUND": 2, "REF_TIMEOUT": 1}
    review = nodes["review"]
    assert (review.runs, review.mean_tokens, review.trimmed, review.summarised) == (2, 60.0, 0, 0)


def test_it_reproduces_from_the_seed_and_serialises():
    first = aggregate_experiment(RECORDS, SCORERS, rng=np.random.default_rng(3))
    assert aggregate_experiment(RECORDS, SCORERS, rng=np.random.default_rng(3)) == first
    as_dict = first.as_dict()
    assert as_dict["scorers"]["exact"]["summary"]["interval"]["level"] == 0.95


def test_it_aggregates_an_empty_experiment():
    figures = aggregate_experiment([], SCORERS, rng=np.random.default_rng(0))
    assert (figures.items, figures.tokens_mean, figures.latency_p50, figures.nodes) == (0, None, None, {})
    assert figures.scorers["exact"].summary.mean is None


def test_it_refuses_an_unknown_status():
    with pytest.raises(ValueError, match="status is one of success, failed, cancelled"):
        ItemRecord("x", "done")
