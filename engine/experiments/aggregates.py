"""An experiment in figures, from its items' records: per scorer the mean score with its 95 %
bootstrap interval and the pass rate, failures by error code, tokens, cost, latency p50/p95,
and per node how its context was managed.

Means and pass rates are over the items a scorer scored: an item not scored (no output, no
expected value) is counted under `not_scored` by its reason's code, never as a 0.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from engine.experiments.records import FAILED, ItemRecord, NodeRecord
from engine.experiments.scorers import NotScored, Score, Scorer
from engine.experiments.stats import DEFAULT_RESAMPLES, Summary, percentile, summarise

MISSING = "MISSING"  # not_scored code of an item that has no result for the scorer at all
UNSPECIFIED = "UNSPECIFIED"  # failures_by_code key of a failed item without an error code


@dataclass(frozen=True)
class ScorerAggregate:
    name: str
    type: str
    threshold: float
    summary: Summary  # of the scored items: count, mean, interval, pass_rate, p50, p95
    not_scored: dict[str, int]  # code → items


@dataclass(frozen=True)
class NodeAggregate:
    """A node over the experiment's node runs of it (retries and rounds each count as a run)."""

    node_id: str
    runs: int
    mean_tokens: float
    trimmed: int  # runs whose context was trimmed by priority
    summarised: int  # runs where an input was summarised
    trimmed_rate: float
    summarised_rate: float
    resolution_failures: int  # failures over all runs
    runs_with_resolution_failures: int
    resolution_failures_by_code: dict[str, int]


@dataclass(frozen=True)
class ExperimentAggregate:
    items: int
    statuses: dict[str, int]
    failures_by_code: dict[str, int]
    tokens_total: int
    tokens_mean: float | None
    cost_total: float
    cost_mean: float | None
    latency_p50: float | None  # seconds, over the items with a latency, whatever their status
    latency_p95: float | None
    scorers: dict[str, ScorerAggregate]
    nodes: dict[str, NodeAggregate]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def aggregate_experiment(records: Sequence[ItemRecord], scorers: Sequence[Scorer], *, rng: np.random.Generator,
                         resamples: int = DEFAULT_RESAMPLES) -> ExperimentAggregate:
    """The figures of one experiment. The scorers' intervals draw from `rng` in the scorers'
    order, so the same records, scorers and seed give the same figures."""
    count = len(records)
    latencies = [r.latency_seconds for r in records if r.latency_seconds is not None]
    tokens = sum(r.tokens for r in records)
    cost = float(sum(r.cost for r in records))
    return ExperimentAggregate(
        items=count,
        statuses=dict(Counter(r.status for r in records)),
        failures_by_code=dict(Counter(r.error_code or UNSPECIFIED for r in records if r.status == FAILED)),
        tokens_total=tokens,
        tokens_mean=tokens / count if count else None,
        cost_total=cost,
        cost_mean=cost / count if count else None,
        latency_p50=percentile(latencies, 50),
        latency_p95=percentile(latencies, 95),
        scorers={s.name: aggregate_scorer(records, s, rng=rng, resamples=resamples) for s in scorers},
        nodes=aggregate_nodes([node for r in records for node in r.nodes]),
    )


def aggregate_scorer(records: Sequence[ItemRecord], scorer: Scorer, *, rng: np.random.Generator,
                     resamples: int = DEFAULT_RESAMPLES) -> ScorerAggregate:
    values: list[float] = []
    not_scored: Counter[str] = Counter()
    for record in records:
        result = record.scores.get(scorer.name)
        if isinstance(result, Score):
            values.append(result.value)
        else:
            not_scored[result.code if isinstance(result, NotScored) else MISSING] += 1
    summary = summarise(values, rng=rng, threshold=scorer.threshold, resamples=resamples)
    return ScorerAggregate(scorer.name, scorer.type, scorer.threshold, summary, dict(not_scored))


def aggregate_nodes(runs: Sequence[NodeRecord]) -> dict[str, NodeAggregate]:
    """Per node, in the order nodes first appear."""
    by_node: dict[str, list[NodeRecord]] = {}
    for run in runs:
        by_node.setdefault(run.node_id, []).append(run)
    aggregates = {}
    for node_id, node_runs in by_node.items():
        n = len(node_runs)
        trimmed = sum(run.trimmed for run in node_runs)
        summarised = sum(run.summarised for run in node_runs)
        codes = Counter(str(failure.get("error_code") or UNSPECIFIED)
                        for run in node_runs for failure in run.resolution_failures)
        aggregates[node_id] = NodeAggregate(
            node_id=node_id, runs=n, mean_tokens=sum(run.tokens for run in node_runs) / n,
            trimmed=trimmed, summarised=summarised, trimmed_rate=trimmed / n, summarised_rate=summarised / n,
            resolution_failures=sum(codes.values()),
            runs_with_resolution_failures=sum(bool(run.resolution_failures) for run in node_runs),
            resolution_failures_by_code=dict(codes),
        )
    return aggregates
