"""An experiment's figures: its ended items as the engine's records, and the aggregates
stored on the experiment (`summary`), refreshed as items end rather than per request."""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.db.models import Q
from django.utils import timezone

from engine.experiments.aggregates import aggregate_experiment
from engine.experiments.records import ItemRecord, NodeRecord
from engine.experiments.scorers import NotScored, Score, check_scorers
from experiments.models import Experiment, ExperimentItem

SUMMARY_EVERY_SECONDS = 5.0  # an experiment's aggregates are refreshed at most this often until it ends


def item_record(row: dict) -> ItemRecord:
    """An ended item's record (row: the item's values) for aggregates and comparisons."""
    scores: dict[str, Score | NotScored] = {}
    for name, result in (row["scores"] or {}).items():
        scores[name] = (Score(result["score"], result["reason"]) if "score" in result
                        else NotScored(result["not_scored"], result["reason"]))
    return ItemRecord(
        item_id=row["dataset_item__item_id"], status=row["status"], output=row.get("output"),
        error_code=row["error_code"], scores=scores, tokens=row["tokens"], cost=row["cost"],
        latency_seconds=row["latency_seconds"],
        nodes=[NodeRecord(n["node_id"], n["tokens"], n.get("context_record"), n.get("resolution_failures") or [])
               for n in row["nodes"] or []],
        metadata=row["dataset_item__metadata"] or {})


RECORD_FIELDS = ("dataset_item__item_id", "dataset_item__metadata", "status", "error_code", "scores", "tokens", "cost",
                 "latency_seconds", "nodes")


def ended_records(experiment_pk: int, *, with_output: bool = False) -> list[ItemRecord]:
    fields = RECORD_FIELDS + (("output",) if with_output else ())
    rows = (ExperimentItem.objects.filter(experiment_id=experiment_pk, status__in=ExperimentItem.ENDED)
            .order_by("position").values(*fields))
    return [item_record(row) for row in rows.iterator(chunk_size=1000)]


def summary_refresh(experiment_pk: int, *, force: bool = False) -> dict | None:
    """Recompute the experiment's aggregates from its ended items and store them: at most
    every SUMMARY_EVERY_SECONDS while it runs (each item's end would else read them all),
    always when `force`d (its end). Seeded by the experiment, so the figures reproduce."""
    experiment = Experiment.objects.filter(pk=experiment_pk).values("summary", "scorers").first()
    if experiment is None:
        return None
    refreshed = (experiment["summary"] or {}).get("refreshed_at")
    now = timezone.now()
    if not force and refreshed and now - _parse(refreshed) < timedelta(seconds=SUMMARY_EVERY_SECONDS):
        return None
    records = ended_records(experiment_pk)
    aggregates = aggregate_experiment(records, check_scorers(experiment["scorers"]),
                                      rng=np.random.default_rng(experiment_pk))
    summary = {"aggregates": _plain(aggregates.as_dict()), "items_ended": len(records), "refreshed_at": now.isoformat()}
    # Items only ever end: a summary of fewer ended items, computed by a slower refresh begun
    # earlier, never overwrites one of more.
    fresher = Q(summary__items_ended__lte=len(records)) | ~Q(summary__has_key="items_ended")
    Experiment.objects.filter(fresher, pk=experiment_pk).update(summary=summary)
    return summary


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _plain(value: Any) -> Any:
    """JSON-storable: numpy numbers as Python's, NaN as None."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value
