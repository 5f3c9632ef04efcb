"""Experiments on the same dataset compared item by item against a baseline.

`compare` gives one `Row` per item id found in any experiment (in the baseline's order, then
the items only others have), with each experiment's record, each other experiment's score
deltas against the baseline and the `regressed` / `improved` flags, and the summary: per
experiment and scorer, the paired bootstrap of the difference of means over the items both
scored. `filter_rows` narrows the rows, `row_diff` shows how one output differs from the
baseline's (computed for the rows shown only), `csv_rows` gives the export.
"""
from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.errors import EngineError
from engine.experiments.records import SUCCESS, ItemRecord
from engine.experiments.scorers import text_of
from engine.experiments.stats import DEFAULT_RESAMPLES, PairedDelta, paired_bootstrap

MAX_DIFF_LINES = 200
MAX_LINE = 1_000  # characters of one diff line shown


class ComparisonError(EngineError, ValueError):
    """Experiments that cannot be compared as asked; says which and why."""

    code = "COMPARISON_INVALID"


@dataclass(frozen=True)
class Row:
    item_id: str
    metadata: Mapping[str, Any]
    records: Mapping[str, ItemRecord | None]  # experiment → its record, None when it has no such item
    deltas: Mapping[str, Mapping[str, float | None]]  # other experiment → scorer → its score − the baseline's
    regressed: bool  # some delta below −threshold
    improved: bool  # some delta above +threshold


@dataclass(frozen=True)
class Comparison:
    baseline: str
    experiments: tuple[str, ...]  # the baseline first
    scorers: tuple[str, ...]
    threshold: float
    rows: list[Row]
    summary: dict[str, dict[str, PairedDelta]]  # other experiment → scorer → paired delta


def compare(experiments: Mapping[str, Sequence[ItemRecord]], *, baseline: str, scorers: Sequence[str],
            rng: np.random.Generator, threshold: float = 0.0, resamples: int = DEFAULT_RESAMPLES) -> Comparison:
    """Compare 2+ experiments' records against `baseline`. A delta exists where both scored
    the item; `threshold` (≥ 0) is how far a delta must go to flag the row."""
    if len(experiments) < 2:
        raise ComparisonError(f"a comparison takes 2 or more experiments, not {len(experiments)}")
    if baseline not in experiments:
        raise ComparisonError(f"the baseline {baseline!r} is not one of the experiments compared: "
                              + ", ".join(map(repr, experiments)))
    if threshold < 0:
        raise ComparisonError(f"the threshold is ≥ 0, not {threshold}")
    names = (baseline, *(name for name in experiments if name != baseline))
    by_id = {name: _by_item(name, experiments[name]) for name in names}
    others = names[1:]
    item_ids = list(dict.fromkeys(item_id for name in names for item_id in by_id[name]))

    rows = []
    for item_id in item_ids:
        records = {name: by_id[name].get(item_id) for name in names}
        base = records[baseline]
        deltas = {name: {scorer: _delta(base, records[name], scorer) for scorer in scorers} for name in others}
        found = [d for per_scorer in deltas.values() for d in per_scorer.values() if d is not None]
        metadata = next((r.metadata for r in records.values() if r is not None), {})
        rows.append(Row(item_id, metadata, records, deltas,
                        regressed=any(d < -threshold for d in found), improved=any(d > threshold for d in found)))

    summary = {name: {scorer: _paired(rows, baseline, name, scorer, rng, resamples) for scorer in scorers}
               for name in others}
    return Comparison(baseline, names, tuple(scorers), threshold, rows, summary)


def _by_item(name: str, records: Sequence[ItemRecord]) -> dict[str, ItemRecord]:
    by_id: dict[str, ItemRecord] = {}
    for record in records:
        if record.item_id in by_id:
            raise ComparisonError(f"item {record.item_id!r} appears twice in experiment {name!r}")
        by_id[record.item_id] = record
    return by_id


def _delta(base: ItemRecord | None, other: ItemRecord | None, scorer: str) -> float | None:
    if base is None or other is None:
        return None
    a, b = base.value(scorer), other.value(scorer)
    return None if a is None or b is None else b - a


def _paired(rows: Sequence[Row], baseline: str, other: str, scorer: str, rng: np.random.Generator,
            resamples: int) -> PairedDelta:
    pairs = [(base.value(scorer), cand.value(scorer)) for row in rows
             if (base := row.records[baseline]) is not None and (cand := row.records[other]) is not None]
    both = [(a, b) for a, b in pairs if a is not None and b is not None]
    return paired_bootstrap([a for a, _ in both], [b for _, b in both], rng=rng, resamples=resamples)


# -- filters -----------------------------------------------------------------------------------


def filter_rows(rows: Sequence[Row], *, regressed_only: bool = False, failed_only: bool = False,
                score_below: tuple[str, float] | None = None, metadata: tuple[str, Any] | None = None,
                experiment: str | None = None) -> list[Row]:
    """The rows that pass every filter given:
    - regressed_only: flagged regressed;
    - failed_only: some experiment's run did not succeed (failed or cancelled);
    - score_below (scorer, x): some experiment scored the item below x with that scorer;
    - metadata (key, value): the item's metadata has key equal to value (a value given as
      text, as from a query string, also matches the JSON value it spells: "3" matches 3).
    `experiment` restricts failed_only and score_below to that experiment's records."""
    kept = []
    for row in rows:
        records = [r for name, r in row.records.items() if r is not None and experiment in (None, name)]
        if regressed_only and not row.regressed:
            continue
        if failed_only and not any(r.status != SUCCESS for r in records):
            continue
        if score_below is not None:
            scorer, limit = score_below
            if not any((v := r.value(scorer)) is not None and v < limit for r in records):
                continue
        if metadata is not None and not _metadata_matches(row.metadata, *metadata):
            continue
        kept.append(row)
    return kept


def _metadata_matches(metadata: Mapping[str, Any], key: str, value: Any) -> bool:
    if key not in metadata:
        return False
    found = metadata[key]
    if found == value and isinstance(found, bool) == isinstance(value, bool):
        return True
    return isinstance(value, str) and not isinstance(found, str) and json.dumps(found) == value


# -- diffs -------------------------------------------------------------------------------------


def output_text(record: ItemRecord | None) -> str:
    """An output as a diff shows it: a string as its text, any other value as indented JSON
    with sorted keys; a run without output says why."""
    if record is None:
        return "(no such item in this experiment)\n"
    if not record.has_output:
        return f"(no output: the run {record.status}{', ' + record.error_code if record.error_code else ''})\n"
    value = record.output
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)
    return text if text.endswith("\n") else text + "\n"


def row_diff(row: Row, experiment: str, *, baseline: str, max_lines: int = MAX_DIFF_LINES) -> str:
    """The unified diff of the baseline's output and `experiment`'s for one row ("" when the
    same), cut after `max_lines` lines with a last line saying how many more there were."""
    return unified_diff(output_text(row.records[baseline]), output_text(row.records[experiment]),
                        from_name=baseline, to_name=experiment, max_lines=max_lines)


def unified_diff(a: str, b: str, *, from_name: str, to_name: str, max_lines: int = MAX_DIFF_LINES) -> str:
    lines = [_cut(line.rstrip("\n")) for line in difflib.unified_diff(
        a.splitlines(keepends=True), b.splitlines(keepends=True), fromfile=from_name, tofile=to_name)]
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], f"… {len(lines) - max_lines} more lines"]
    return "\n".join(lines)


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE else f"{line[:MAX_LINE]}… ({len(line) - MAX_LINE} more characters)"


# -- CSV ---------------------------------------------------------------------------------------


def csv_rows(comparison: Comparison, rows: Sequence[Row] | None = None) -> list[list[str]]:
    """The header and one line per row (all rows by default): per experiment its status,
    error code, cost, latency, each scorer's score ("" when not scored) and the output (a
    string as itself, anything else compact JSON); per other experiment each scorer's delta; the flags. A text cell that a spreadsheet
    would read as a formula (= + - @ first) is written with a leading apostrophe."""
    others = comparison.experiments[1:]
    header = ["item_id"]
    for name in comparison.experiments:
        header += [f"{name}:status", f"{name}:error_code", f"{name}:cost", f"{name}:latency_seconds"]
        header += [f"{name}:{scorer}" for scorer in comparison.scorers]
        header.append(f"{name}:output")
    header += [f"{name}:{scorer}:delta" for name in others for scorer in comparison.scorers]
    header += ["regressed", "improved"]
    lines = [[_text_cell(cell) for cell in header]]
    for row in comparison.rows if rows is None else rows:
        line = [_text_cell(row.item_id)]
        for name in comparison.experiments:
            record = row.records[name]
            if record is None:
                line += [""] * (5 + len(comparison.scorers))
                continue
            line += [record.status, _text_cell(record.error_code), _number(record.cost),
                     _number(record.latency_seconds)]
            line += [_number(record.value(scorer)) for scorer in comparison.scorers]
            line.append(_text_cell(text_of(record.output) if record.has_output else ""))
        line += [_number(row.deltas[name][scorer]) for name in others for scorer in comparison.scorers]
        line += [str(row.regressed).lower(), str(row.improved).lower()]
        lines.append(line)
    return lines


def _number(value: float | None) -> str:
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)


def _text_cell(text: str) -> str:
    return f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
