"""The statistics against numbers worked independently: percentiles by hand, the bootstrap
against a plain loop over the same generator draws, and the interval's coverage."""
import math

import numpy as np
import pytest

from engine.experiments.stats import (
    IMPROVED,
    NO_CLEAR_CHANGE,
    REGRESSED,
    Interval,
    bootstrap_interval,
    paired_bootstrap,
    percentile,
    summarise,
)


def by_hand(sorted_values, q):
    """The linear (type 7) percentile, written out."""
    h = (len(sorted_values) - 1) * q / 100
    low = math.floor(h)
    if low + 1 >= len(sorted_values):
        return sorted_values[low]
    return sorted_values[low] + (h - low) * (sorted_values[low + 1] - sorted_values[low])


def reference_interval(values, seed, resamples):
    """The bootstrap, a resample at a time: row b of the same (B, n) draws is resample b."""
    n = len(values)
    indices = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    means = sorted(sum(values[int(j)] for j in row) / n for row in indices)
    return by_hand(means, 2.5), by_hand(means, 97.5)


def test_it_takes_percentiles_by_the_linear_method():
    assert percentile([4, 1, 3, 2], 50) == 2.5
    assert percentile([1, 2, 3, 4], 95) == pytest.approx(3.85)  # h = 3 × 0.95 = 2.85: 3 + 0.85 × (4 − 3)
    assert percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95) == pytest.approx(9.55)  # h = 8.55
    assert percentile([7], 95) == 7
    assert percentile([], 50) is None


def test_it_matches_a_plain_loop_over_the_same_draws():
    values = [0.0, 1.0, 1.0, 0.5, 0.25, 1.0, 0.0, 0.75, 1.0, 0.9, 0.1]
    interval = bootstrap_interval(values, rng=np.random.default_rng(42), resamples=300)
    low, high = reference_interval(values, 42, 300)
    assert (interval.low, interval.high) == (pytest.approx(low), pytest.approx(high))
    assert interval.low < sum(values) / len(values) < interval.high


def test_it_draws_large_samples_in_blocks_that_equal_the_whole_matrix(monkeypatch):
    from engine.experiments import stats
    values = np.random.default_rng(3).random(50)
    whole = bootstrap_interval(values, rng=np.random.default_rng(9), resamples=200)
    monkeypatch.setattr(stats, "BLOCK_INDICES", 120)  # 2 rows of 50 at a time
    assert bootstrap_interval(values, rng=np.random.default_rng(9), resamples=200) == whole
    assert (whole.low, whole.high) == tuple(pytest.approx(v) for v in reference_interval(list(values), 9, 200))


def test_it_gives_a_point_interval_for_one_value_or_equal_values():
    assert bootstrap_interval([0.4], rng=np.random.default_rng(0)) == Interval(0.4, 0.4)
    assert bootstrap_interval([1.0] * 5, rng=np.random.default_rng(0)) == Interval(1.0, 1.0)
    assert bootstrap_interval([], rng=np.random.default_rng(0)) is None


def test_it_reproduces_from_the_seed():
    values = np.random.default_rng(1).random(100)
    first = bootstrap_interval(values, rng=np.random.default_rng(5))
    assert bootstrap_interval(values, rng=np.random.default_rng(5)) == first
    assert bootstrap_interval(values, rng=np.random.default_rng(6)) != first


def test_it_covers_the_true_mean_about_95_times_in_100():
    rng = np.random.default_rng(2024)
    true_mean, trials, covered = 0.7, 300, 0
    for _ in range(trials):
        sample = (rng.random(60) < true_mean).astype(float)
        interval = bootstrap_interval(sample, rng=rng, resamples=500)
        covered += interval.low <= true_mean <= interval.high
    assert 0.88 <= covered / trials <= 0.99


def test_it_summarises_count_mean_pass_rate_and_percentiles():
    summary = summarise([0.0, 0.5, 1.0, 1.0], rng=np.random.default_rng(0), threshold=1.0, resamples=100)
    assert (summary.count, summary.mean, summary.pass_rate, summary.p50) == (4, 0.625, 0.5, 0.75)
    assert summary.p95 == pytest.approx(1.0)
    assert summary.interval.low <= 0.625 <= summary.interval.high
    assert summarise([0.2], rng=np.random.default_rng(0), threshold=0.5).pass_rate == 0.0
    assert summarise([0.2], rng=np.random.default_rng(0)).pass_rate is None
    empty = summarise([], rng=np.random.default_rng(0), threshold=1.0)
    assert (empty.count, empty.mean, empty.interval, empty.pass_rate, empty.p50) == (0, None, None, None, None)


def test_it_bootstraps_paired_differences_against_a_loop():
    baseline = [0.2, 0.5, 0.9, 0.4, 0.6, 0.1, 0.8]
    candidate = [0.3, 0.5, 1.0, 0.2, 0.9, 0.4, 0.8]
    delta = paired_bootstrap(baseline, candidate, rng=np.random.default_rng(11), resamples=400)
    differences = [c - b for b, c in zip(baseline, candidate, strict=True)]
    low, high = reference_interval(differences, 11, 400)
    assert (delta.interval.low, delta.interval.high) == (pytest.approx(low), pytest.approx(high))
    assert delta.count == 7
    assert delta.delta == pytest.approx(sum(differences) / 7)
    assert (delta.baseline_mean, delta.candidate_mean) == (pytest.approx(3.5 / 7), pytest.approx(4.1 / 7))


def test_it_says_improved_regressed_or_no_clear_change():
    rng = np.random.default_rng(0)
    base = [0.2, 0.4, 0.6, 0.8]
    improved = paired_bootstrap(base, [v + 0.1 for v in base], rng=rng)
    assert improved.verdict == IMPROVED and improved.interval.low == pytest.approx(0.1)
    assert paired_bootstrap(base, [v - 0.2 for v in base], rng=rng).verdict == REGRESSED
    assert paired_bootstrap(base, [0.4, 0.2, 0.8, 0.6], rng=rng).verdict == NO_CLEAR_CHANGE
    nothing = paired_bootstrap([], [], rng=rng)
    assert (nothing.count, nothing.interval, nothing.verdict) == (0, None, NO_CLEAR_CHANGE)
    with pytest.raises(ValueError, match="in pairs"):
        paired_bootstrap([1.0], [1.0, 0.0], rng=rng)
