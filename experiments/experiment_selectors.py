"""Reads for experiments: lists, one experiment, its progress, its items a page at a time.
Cheap at 10,000 items: counts by status are one grouped query on an index, and the
aggregates are read from the stored `summary` (experiments/summaries.py)."""
from __future__ import annotations

from django.db.models import F, QuerySet
from django.utils import timezone

from agents.models import AgentVersion
from core.errors import DocumentError, NotFound, echo
from experiments.experiment_services import status_counts
from experiments.models import Experiment, ExperimentItem
from workflows.selectors import ID_PATTERN


def experiment_list(*, status: str = "", workflow_id: str = "") -> QuerySet[Experiment]:
    experiments = Experiment.objects.select_related("workflow", "workflow_version", "dataset_version__dataset")
    if status:
        experiments = experiments.filter(status=status)
    if workflow_id:
        experiments = experiments.filter(workflow__workflow_id=workflow_id)
    return experiments.order_by("-created_at", "-id")


def experiment_get(experiment_id: str) -> Experiment:
    found = (experiment_list().filter(experiment_id=experiment_id).first()
             if isinstance(experiment_id, str) and ID_PATTERN.match(experiment_id) else None)
    if found is None:
        raise NotFound(f"no experiment '{echo(str(experiment_id))}'", details={"experiment_id": experiment_id})
    return found


def experiment_items(experiment: Experiment, *, status: str = "") -> QuerySet[ExperimentItem]:
    """Its items in the dataset's order; with `status`, those in it."""
    # The item's id and its run's id, not their rows (a run's state and a dataset item's input can be large).
    items = (ExperimentItem.objects.filter(experiment=experiment)
             .annotate(item_key=F("dataset_item__item_id"), run_id=F("execution__execution_id")))
    if status:
        if status not in ExperimentItem.Status.values:
            raise DocumentError(f"is one of {', '.join(ExperimentItem.Status.values)}", where="status")
        items = items.filter(status=status)
    return items.order_by("position")


def experiment_progress(experiment: Experiment) -> dict:
    """Counts by status, elapsed seconds, and an estimate of the seconds left (from the pace
    of the items ended so far; None before one has)."""
    counts = status_counts(experiment)
    total = sum(counts.values())
    ended = counts["success"] + counts["failed"] + counts["cancelled"]
    start = experiment.started_at
    end = experiment.completed_at or timezone.now()
    elapsed = (end - start).total_seconds() if start else 0.0
    left = total - ended
    estimate = None
    if experiment.completed_at:
        estimate = 0.0
    elif ended and start:
        estimate = round(elapsed / ended * left, 1)
    return {"total": total, "counts": counts, "ended": ended, "elapsed_seconds": round(elapsed, 1),
            "estimate_seconds": estimate}


def pins_named(pins: dict[str, int]) -> dict[str, str]:
    """node id → "agent@version" for an experiment's pins (node id → AgentVersion pk), in one query."""
    versions = AgentVersion.objects.select_related("agent").in_bulk(list(pins.values()))
    return {node: str(versions[pk]) if pk in versions else f"version #{pk}" for node, pk in sorted(pins.items())}
