"""Statistics of experiments: means with bootstrap intervals, pass rates, percentiles, and the
paired bootstrap that says whether a candidate improved on a baseline.

Every random draw comes from a `numpy.random.Generator` the caller passes in, so a result
reproduces from its seed. The bootstrap is vectorised: a (B, n) matrix of indices whose row
b is the b-th resample, drawn as `rng.integers(0, n, size=(B, n))` draws it, in blocks of
rows so that memory stays small (a block of rows is the same draws as those rows of the
whole matrix: each index is one draw of the generator, in row order).

Percentiles (p50, p95, and the interval's ends) are numpy's default "linear" method
(Hyndman and Fan's type 7): the q-th percentile of n sorted values v₀ ≤ … ≤ vₙ₋₁ sits at
position h = (n − 1)·q/100, and is v⌊h⌋ + (h − ⌊h⌋)·(v⌊h⌋₊₁ − v⌊h⌋).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

DEFAULT_RESAMPLES = 1000
BLOCK_INDICES = 1_000_000  # indices drawn at once: 8 MB, reused rather than one matrix of B × n
LEVEL = 0.95

IMPROVED = "improved"
REGRESSED = "regressed"
NO_CLEAR_CHANGE = "no clear change"

Values = Sequence[float] | npt.NDArray[np.float64]


@dataclass(frozen=True)
class Interval:
    """A percentile bootstrap interval of a mean, at `level` (0.95: from the 2.5th to the
    97.5th percentile of the resampled means)."""

    low: float
    high: float
    level: float = LEVEL

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


@dataclass(frozen=True)
class Summary:
    """Scores (or any values) summarised: None where there is nothing to summarise."""

    count: int
    mean: float | None
    interval: Interval | None
    pass_rate: float | None  # the share at or above the threshold; None without a threshold
    p50: float | None
    p95: float | None


@dataclass(frozen=True)
class PairedDelta:
    """Candidate − baseline over the items both scored: the difference of means, its paired
    bootstrap interval and the verdict it supports."""

    count: int
    baseline_mean: float | None
    candidate_mean: float | None
    delta: float | None
    interval: Interval | None
    verdict: str


def as_array(values: Values) -> npt.NDArray[np.float64]:
    return np.asarray(values, dtype=np.float64)


def percentile(values: Values, q: float) -> float | None:
    """The q-th percentile (0–100) by the linear method (see the module); None of no values."""
    array = as_array(values)
    if array.size == 0:
        return None
    return float(np.percentile(array, q, method="linear"))


def bootstrap_means(values: Values, *, rng: np.random.Generator, resamples: int = DEFAULT_RESAMPLES
                    ) -> npt.NDArray[np.float64]:
    """The mean of each of `resamples` resamples (n values drawn with replacement)."""
    array = as_array(values)
    if array.size == 0:
        raise ValueError("no values to resample")
    if resamples < 1:
        raise ValueError(f"resamples is at least 1, not {resamples}")
    means = np.empty(resamples, dtype=np.float64)
    block = max(1, BLOCK_INDICES // array.size)
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        indices = rng.integers(0, array.size, size=(rows, array.size))
        means[start:start + rows] = array[indices].mean(axis=1)
    return means


def bootstrap_interval(values: Values, *, rng: np.random.Generator, resamples: int = DEFAULT_RESAMPLES,
                       level: float = LEVEL) -> Interval | None:
    """The percentile bootstrap interval of the mean; None of no values."""
    array = as_array(values)
    if array.size == 0:
        return None
    means = bootstrap_means(array, rng=rng, resamples=resamples)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail], method="linear")
    return Interval(float(low), float(high), level)


def summarise(values: Values, *, rng: np.random.Generator, threshold: float | None = None,
              resamples: int = DEFAULT_RESAMPLES) -> Summary:
    """Count, mean with its 95 % bootstrap interval, pass rate (values ≥ threshold), p50, p95."""
    array = as_array(values)
    if array.size == 0:
        return Summary(0, None, None, None, None, None)
    pass_rate = float(np.mean(array >= threshold)) if threshold is not None else None
    return Summary(int(array.size), float(array.mean()), bootstrap_interval(array, rng=rng, resamples=resamples),
                   pass_rate, percentile(array, 50), percentile(array, 95))


def paired_bootstrap(baseline: Values, candidate: Values, *, rng: np.random.Generator,
                     resamples: int = DEFAULT_RESAMPLES) -> PairedDelta:
    """The difference of means, candidate − baseline, of paired scores (position i of both is
    one item): the items are resampled together, so what varies from item to item is not
    mistaken for a change. Improved when the whole interval is above 0, regressed when below,
    no clear change when it holds 0."""
    base, cand = as_array(baseline), as_array(candidate)
    if base.shape != cand.shape:
        raise ValueError(f"paired scores come in pairs: {base.size} baseline, {cand.size} candidate")
    if base.size == 0:
        return PairedDelta(0, None, None, None, None, NO_CLEAR_CHANGE)
    differences = cand - base
    interval = bootstrap_interval(differences, rng=rng, resamples=resamples)
    assert interval is not None
    return PairedDelta(int(base.size), float(base.mean()), float(cand.mean()), float(differences.mean()), interval,
                       verdict_of(interval))


def verdict_of(interval: Interval) -> str:
    if interval.low > 0:
        return IMPROVED
    if interval.high < 0:
        return REGRESSED
    return NO_CLEAR_CHANGE
