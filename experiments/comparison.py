"""Experiments over one dataset compared item by item: what `GET /api/experiments/compare`,
the page `/experiments/compare/` and the command `compare_experiments` show.

The comparison itself is the engine's (`engine.experiments.compare`: rows, deltas, flags,
the paired bootstrap per scorer, filters, diffs, CSV). This side reads what it needs, cheaply
enough for two experiments of 10,000 items: each experiment's items are one `.values_list()`
query without their outputs (the scores, status, cost, latency, the item's id, the run's
id), and the items' metadata one query per dataset version; the outputs are read afterwards only for the rows shown (one query per
experiment) or for an export, and diffs are made for the rows shown only.

Experiments compare only over one dataset. Over different versions of it, items are matched
by their item id, and the items that only one experiment has are named. An item still
pending or running has no record yet: its row shows that status where the others ended.
"""
from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from django.urls import reverse

from agents.backends.metering import usd
from core.errors import DocumentError, NotFound, echo
from engine.experiments.compare import Comparison, ComparisonError, Row, compare, csv_rows, filter_rows, row_diff
from engine.experiments.records import ItemRecord
from engine.experiments.stats import PairedDelta
from experiments.experiment_selectors import pins_named
from experiments.models import DatasetItem, Experiment, ExperimentItem
from experiments.summaries import item_record
from workflows.selectors import ID_PATTERN

MAX_EXPERIMENTS = 10
DEFAULT_THRESHOLD = 0.1
ONLY_IN_LISTED = 100  # item ids listed of those only one experiment has (all are counted)
ONLY = ("regressed", "improved", "failed")  # the `only` filter's choices

# An item's metadata is read once per dataset version (`metadata_of`), not once per experiment.
ITEM_FIELDS = ("dataset_item__item_id", "status", "error_code", "scores", "cost", "latency_seconds",
               "execution__execution_id")


# -- asking --------------------------------------------------------------------------------------


def experiment_ids(text: str | Sequence[str]) -> list[str]:
    """The experiments asked for: "A,B,C" (or a list of such), blanks dropped; refused
    (naming `ids`) when fewer than two, more than MAX_EXPERIMENTS, repeated or not ids."""
    parts = [text] if isinstance(text, str) else list(text)
    ids = [part.strip() for each in parts for part in each.split(",") if part.strip()]
    if len(ids) < 2:
        raise DocumentError(f"name 2 or more experiments to compare, separated by commas; got {len(ids)}",
                            where="ids")
    if len(ids) > MAX_EXPERIMENTS:
        raise DocumentError(f"compares at most {MAX_EXPERIMENTS} experiments at once, not {len(ids)}", where="ids")
    for experiment_id in ids:
        if not ID_PATTERN.match(experiment_id):
            raise DocumentError(f"'{echo(experiment_id)}' is not an experiment id", where="ids")
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise DocumentError(f"names {', '.join(repeated)} more than once", where="ids")
    return ids


@dataclass(frozen=True)
class RowFilters:
    """Which rows to show: `only` regressed, improved or failed (some run did not succeed);
    `scorer` with `below`: some experiment scored the item below that; `metadata` "KEY=VALUE":
    the item's metadata has KEY equal to VALUE (3 matches the text "3")."""

    only: str = ""
    scorer: str = ""
    below: float | None = None
    metadata: str = ""

    def check(self, scorers: Sequence[str]) -> RowFilters:
        if self.only and self.only not in ONLY:
            raise DocumentError(f"is one of {', '.join(ONLY)}, not '{echo(self.only)}'", where="only")
        if self.below is not None and not self.scorer:
            raise DocumentError("is needed with below: the scorer whose scores are below it", where="scorer")
        if self.scorer and self.below is None:
            raise DocumentError("is needed with scorer: the score its rows are below", where="below")
        if self.scorer and self.scorer not in scorers:
            raise DocumentError(f"'{echo(self.scorer)}' is not a scorer of these experiments "
                                f"({', '.join(scorers) or 'they have none'})", where="scorer")
        if self.metadata and not self.metadata_pair():
            raise DocumentError(f"is KEY=VALUE, not '{echo(self.metadata)}'", where="metadata")
        return self

    def metadata_pair(self) -> tuple[str, str] | None:
        key, sep, value = self.metadata.partition("=")
        return (key.strip(), value.strip()) if sep and key.strip() else None

    @property
    def active(self) -> bool:
        return bool(self.only or self.scorer or self.metadata)


# -- reading -------------------------------------------------------------------------------------


@dataclass
class Side:
    """One experiment's items as read: the ended ones as records (without outputs), the
    others' statuses, each item's run, and every item id it has."""

    experiment: Experiment
    records: list[ItemRecord] = field(default_factory=list)
    waiting: dict[str, str] = field(default_factory=dict)  # item id → pending | running
    runs: dict[str, str] = field(default_factory=dict)  # item id → its run's execution_id
    item_ids: list[str] = field(default_factory=list)


def metadata_of(version_id: int) -> dict[str, Any]:
    """One query: the metadata of each item of a dataset version, by item id."""
    return dict(DatasetItem.objects.filter(version_id=version_id).values_list("item_id", "metadata"))


def read_side(experiment: Experiment, metadata: dict[str, Any]) -> Side:
    """One query: the experiment's items in the dataset's order, their light fields only
    (`metadata`: its dataset version's, by item id). Read whole: the rows are small."""
    side = Side(experiment)
    rows = ExperimentItem.objects.filter(experiment=experiment).order_by("position").values_list(*ITEM_FIELDS)
    for item_id, status, error_code, scores, cost, latency, execution_id in rows:
        side.item_ids.append(item_id)
        if execution_id:
            side.runs[item_id] = execution_id
        if status in ExperimentItem.ENDED:
            side.records.append(item_record({
                "dataset_item__item_id": item_id, "dataset_item__metadata": metadata.get(item_id), "status": status,
                "error_code": error_code, "scores": scores, "tokens": 0, "cost": cost, "latency_seconds": latency,
                "nodes": None}))
        else:
            side.waiting[item_id] = status
    return side


def outputs_of(experiment: Experiment, item_ids: Iterable[str] | None = None) -> dict[str, Any]:
    """The outputs of the experiment's succeeded items (of `item_ids` only, when given): one query."""
    items = ExperimentItem.objects.filter(experiment=experiment, status=ExperimentItem.Status.SUCCESS)
    if item_ids is not None:
        items = items.filter(dataset_item__item_id__in=list(item_ids))
    return dict(items.values_list("dataset_item__item_id", "output").iterator(chunk_size=500))


# -- comparing -----------------------------------------------------------------------------------


@dataclass
class ExperimentsCompared:
    experiments: list[Experiment]  # the baseline first, then the others as asked
    sides: dict[str, Side]
    comparison: Comparison
    only_in: dict[str, list[str]]  # experiment → the item ids no other experiment has
    versions_differ: bool
    scorers_differ: list[str]  # scorers of one name defined differently: not compared

    @property
    def baseline(self) -> Experiment:
        return self.experiments[0]

    @property
    def scorers(self) -> tuple[str, ...]:
        return self.comparison.scorers

    def rows(self, filters: RowFilters = RowFilters()) -> list[Row]:
        """The rows the filters keep, in the baseline's order."""
        rows = self.comparison.rows
        if not filters.active:
            return list(rows)
        if filters.only == "improved":
            rows = [row for row in rows if row.improved]
        below = (filters.scorer, float(filters.below)) if filters.scorer and filters.below is not None else None
        return filter_rows(rows, regressed_only=filters.only == "regressed", failed_only=filters.only == "failed",
                           score_below=below, metadata=filters.metadata_pair())

    def with_outputs(self, rows: Sequence[Row]) -> list[Row]:
        """The rows with their outputs, read for these rows only (one query per experiment)."""
        ids = [row.item_id for row in rows]
        outputs = {e.experiment_id: outputs_of(e, ids) if ids else {} for e in self.experiments}
        return [_with_outputs(row, outputs) for row in rows]

    def all_with_outputs(self, rows: Sequence[Row]) -> list[Row]:
        """The rows with their outputs, each experiment's read whole (for an export)."""
        outputs = {e.experiment_id: outputs_of(e) for e in self.experiments}
        return [_with_outputs(row, outputs) for row in rows]


def _with_outputs(row: Row, outputs: dict[str, dict[str, Any]]) -> Row:
    records = {name: replace(record, output=outputs[name].get(row.item_id)) if record is not None and
               record.has_output else record for name, record in row.records.items()}
    return replace(row, records=records)


def experiments_compared(ids: Sequence[str], *, baseline: str | None = None,
                         threshold: float = DEFAULT_THRESHOLD) -> ExperimentsCompared:
    """Compare the experiments named (ids checked by `experiment_ids`) against `baseline`
    (default: the oldest). Refused, naming what is wrong, when one is unknown, when they are
    over different datasets or when the baseline is not one of them."""
    if not 0 <= threshold <= 1:
        raise DocumentError(f"is a score difference from 0 to 1, not {threshold}", where="threshold")
    experiments = _experiments(ids)
    if baseline:
        if baseline not in ids:
            raise DocumentError(f"'{echo(baseline)}' is not one of the experiments compared ({', '.join(ids)})",
                                where="baseline")
    else:
        baseline = min(experiments, key=lambda e: (e.created_at, e.pk)).experiment_id
    experiments.sort(key=lambda e: e.experiment_id != baseline)  # stable: the baseline first, the others as asked
    metadata = {version_id: metadata_of(version_id) for version_id in {e.dataset_version_id for e in experiments}}
    sides = {e.experiment_id: read_side(e, metadata[e.dataset_version_id]) for e in experiments}
    scorers, differ = scorers_compared(experiments)
    # Seeded by the experiments compared, so that the page, the API and the command agree.
    rng = np.random.default_rng([e.pk for e in experiments])
    try:
        comparison = compare({name: side.records for name, side in sides.items()}, baseline=baseline,
                             scorers=scorers, rng=rng, threshold=threshold)
    except ComparisonError as error:
        raise DocumentError(str(error), where="ids") from None
    holders = Counter(item_id for side in sides.values() for item_id in side.item_ids)  # ids are unique in one
    only_in = {name: [i for i in side.item_ids if holders[i] == 1] for name, side in sides.items()}
    versions_differ = len({e.dataset_version_id for e in experiments}) > 1
    return ExperimentsCompared(experiments, sides, comparison, only_in, versions_differ, differ)


def scorers_compared(experiments: Sequence[Experiment]) -> tuple[list[str], list[str]]:
    """The scorers whose scores are compared — those every experiment that has one defines
    alike (its pass mark aside) — and, apart, the names some define differently: a regex on
    another path scores something else, and its "change" would be no change of the workflow."""
    definitions: dict[str, set[str]] = {}
    for experiment in experiments:
        for scorer in experiment.scorers:
            if isinstance(scorer, dict):
                name = scorer.get("name") or scorer.get("type", "")
                shape = {key: value for key, value in scorer.items() if key not in ("name", "pass", "pass_at")}
                definitions.setdefault(name, set()).add(json.dumps(shape, sort_keys=True))
    return ([name for name, shapes in definitions.items() if len(shapes) == 1],
            [name for name, shapes in definitions.items() if len(shapes) > 1])


def _experiments(ids: Sequence[str]) -> list[Experiment]:
    found = {e.experiment_id: e for e in Experiment.objects.select_related(
        "workflow", "workflow_version", "dataset_version__dataset").filter(experiment_id__in=list(ids))}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFound(f"no experiment {', '.join(repr(i) for i in missing)}", details={"experiment_ids": missing})
    experiments = [found[i] for i in ids]
    by_dataset: dict[str, list[str]] = {}
    for experiment in experiments:
        by_dataset.setdefault(experiment.dataset_version.dataset.name, []).append(experiment.experiment_id)
    if len(by_dataset) > 1:
        over = "; ".join(f"{', '.join(names)} over '{dataset}'" for dataset, names in by_dataset.items())
        raise DocumentError(f"experiments compare only over one dataset: {over}", where="ids",
                            details={"datasets": by_dataset})
    return experiments


# -- showing -------------------------------------------------------------------------------------


def experiment_out(compared: ExperimentsCompared, experiment: Experiment) -> dict:
    side = compared.sides[experiment.experiment_id]
    return {"experiment_id": experiment.experiment_id, "name": experiment.name, "status": experiment.status,
            "workflow_id": experiment.workflow.workflow_id, "workflow_version": experiment.workflow_version.number,
            "dataset": experiment.dataset_version.dataset.name, "dataset_version": experiment.dataset_version.number,
            "created_at": experiment.created_at, "items": len(side.item_ids), "ended": len(side.records),
            "baseline": experiment.experiment_id == compared.comparison.baseline,
            # What made it differ from the others, when the workflow's version does not say.
            "pins": pins_named(experiment.agent_versions),
            "overrides": {node: sorted(parts) for node, parts in sorted(experiment.agent_overrides.items())}}


def delta_out(paired: PairedDelta) -> dict:
    interval = paired.interval
    return {"count": paired.count, "baseline_mean": paired.baseline_mean, "candidate_mean": paired.candidate_mean,
            "delta": paired.delta, "verdict": paired.verdict,
            "interval": None if interval is None else {"low": interval.low, "high": interval.high,
                                                       "level": interval.level}}


def summary_out(compared: ExperimentsCompared, rows: Sequence[Row] | None = None) -> dict:
    """Everything but the rows: the experiments, the scorers, each other experiment's paired
    delta per scorer, the counts of rows (all, regressed, improved, failed; `matching` the
    filters when `rows` are the filtered ones) and the items only one experiment has."""
    comparison = compared.comparison
    all_rows = comparison.rows
    return {
        "baseline": comparison.baseline, "threshold": comparison.threshold, "scorers": list(comparison.scorers),
        "experiments": [experiment_out(compared, e) for e in compared.experiments],
        "versions_differ": compared.versions_differ,
        "scorers_differ": compared.scorers_differ,
        "summary": {name: {scorer: delta_out(paired) for scorer, paired in per_scorer.items()}
                    for name, per_scorer in comparison.summary.items()},
        "counts": {"rows": len(all_rows), "regressed": sum(r.regressed for r in all_rows),
                   "improved": sum(r.improved for r in all_rows),
                   "failed": len(filter_rows(all_rows, failed_only=True)),
                   "matching": len(all_rows if rows is None else rows)},
        "only_in": {name: {"count": len(ids), "item_ids": ids[:ONLY_IN_LISTED]}
                    for name, ids in compared.only_in.items() if ids},
    }


def runs_compare_url(compared: ExperimentsCompared, row: Row, other: str) -> str | None:
    """The node-by-node comparison of the baseline's run of this item and `other`'s."""
    a = compared.sides[compared.comparison.baseline].runs.get(row.item_id)
    b = compared.sides[other].runs.get(row.item_id)
    if not (a and b):
        return None
    return f"{reverse('executions:compare')}?a={a}&b={b}"


def row_out(compared: ExperimentsCompared, row: Row, *, diffs: bool = True) -> dict:
    """A row as JSON: per experiment its status (pending or running while it has no record;
    absent: the experiment has no such item), run, scores, cost in USD, latency, and (with
    `diffs`, the row's outputs read) the output; per other experiment the deltas, the diff of
    its output against the baseline's and the link to compare the two runs."""
    baseline = compared.comparison.baseline
    cells = {}
    for name, record in row.records.items():
        side = compared.sides[name]
        cell: dict[str, Any] = {"status": _status(side, row.item_id, record), "execution_id": side.runs.get(row.item_id)}
        if record is not None:
            cell.update({"error_code": record.error_code, "cost": usd(int(record.cost)),
                         "latency_seconds": record.latency_seconds,
                         "scores": {scorer: record.value(scorer) for scorer in compared.scorers}})
            if diffs:
                cell["output"] = record.output
        if name != baseline:
            cell["deltas"] = dict(row.deltas[name])
            cell["compare_runs_url"] = runs_compare_url(compared, row, name)
            if diffs:
                cell["diff"] = row_diff(row, name, baseline=baseline)
        cells[name] = cell
    return {"item_id": row.item_id, "metadata": dict(row.metadata), "regressed": row.regressed,
            "improved": row.improved, "experiments": cells}


def _status(side: Side, item_id: str, record: ItemRecord | None) -> str:
    if record is not None:
        return record.status
    return side.waiting.get(item_id, "absent")


def csv_text(compared: ExperimentsCompared, rows: Sequence[Row]) -> str:
    """The rows as CSV (the engine's columns), their outputs read, costs in USD."""
    lines = csv_rows(compared.comparison, compared.all_with_outputs(rows))
    header = lines[0]
    costs = [n for n, name in enumerate(header) if name.endswith(":cost")]
    for n in costs:
        header[n] = f"{header[n]}_usd"
    for line in lines[1:]:
        for n in costs:
            line[n] = usd(int(float(line[n]))) or "" if line[n] else ""
    out = io.StringIO()
    csv.writer(out).writerows(lines)
    return out.getvalue()


def csv_filename(compared: ExperimentsCompared) -> str:
    return f"compare_{'_'.join(e.experiment_id for e in compared.experiments)}.csv"[:150]
