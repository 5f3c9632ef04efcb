"""The page `/experiments/compare/?ids=A,B[,…]`: experiments over one dataset side by side
against a baseline — each scorer's delta with its interval and verdict, then one row per
item (each experiment's status, scores, cost, latency and output, the others' deltas and
diffs against the baseline's output, a link to compare the two runs node by node), rows
that moved past the threshold highlighted, filtered and paged; and its CSV export
(`/experiments/compare/csv/`, the same query). What it reads is `experiments/comparison.py`:
only the page's rows have their outputs read and diffed."""
from __future__ import annotations

import json
import math
from typing import Any

from django.http import HttpResponse
from django.shortcuts import render

from core.errors import DocumentError, NotFound
from core.pages import paginate
from engine.experiments.compare import Row
from experiments import comparison
from experiments.comparison import ExperimentsCompared, RowFilters

PER_PAGE = 25
SHOWN_MAX = 2000  # characters of an output the page shows (the CSV has all)
TEMPLATE = "experiments/compare.html"


def _number(request, key: str, default: float | None) -> float | None:
    text = request.GET.get(key, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise DocumentError(f"is a number, not '{text[:40]}'", where=key) from None
    if not math.isfinite(value):
        raise DocumentError(f"is a number, not '{text[:40]}'", where=key)
    return value


def _asked(request) -> tuple[ExperimentsCompared, RowFilters]:
    """The comparison and filters the query string asks for; DocumentError or NotFound naming
    what is wrong."""
    ids = comparison.experiment_ids(_ids(request))
    threshold = _number(request, "threshold", comparison.DEFAULT_THRESHOLD)
    assert threshold is not None
    compared = comparison.experiments_compared(ids, baseline=request.GET.get("baseline", "").strip() or None,
                                               threshold=threshold)
    filters = RowFilters(only=request.GET.get("only", "").strip(), scorer=request.GET.get("scorer", "").strip(),
                         below=_number(request, "below", None),
                         metadata=request.GET.get("metadata", "").strip()[:400])
    return compared, filters.check(compared.scorers)


def _ids(request) -> str:
    """`?ids=A,B`, or `?ids=A&ids=B` as the experiments list's boxes and the experiment page's
    "Compare with" send them."""
    return ",".join(part for part in request.GET.getlist("ids") if part.strip())


def _problem(request, message: str, status: int):
    return render(request, TEMPLATE, {"problem": message, "ids": _ids(request)[:1100]}, status=status)


def experiment_compare(request):
    if not _ids(request):
        return _problem(request, "Name two or more experiments over one dataset to compare: ?ids=A,B.", 400)
    try:
        compared, filters = _asked(request)
    except (NotFound, DocumentError) as error:
        return _problem(request, str(error), 404 if isinstance(error, NotFound) else 422)
    rows = compared.rows(filters)
    context = paginate(request, rows, per_page=PER_PAGE)
    shown = compared.with_outputs(list(context["page"]))
    summary = comparison.summary_out(compared, rows)
    return render(request, TEMPLATE, {
        **context,
        "compared": compared,
        "summary": summary,
        "deltas": _deltas(summary),
        "filters": filters,
        "only_choices": comparison.ONLY,
        "rows": [_row(compared, row) for row in shown],
        "query_string": request.GET.urlencode(),
        "ids": ",".join(e.experiment_id for e in compared.experiments),
        "threshold": compared.comparison.threshold,
    })


def experiment_compare_csv(request):
    try:
        compared, filters = _asked(request)
    except (NotFound, DocumentError) as error:
        return _problem(request, str(error), 404 if isinstance(error, NotFound) else 422)
    response = HttpResponse(comparison.csv_text(compared, compared.rows(filters)), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{comparison.csv_filename(compared)}"'
    return response


def _deltas(summary: dict) -> list[dict]:
    """The summary table: one line per other experiment and scorer."""
    return [{"experiment_id": name, "scorer": scorer, **delta} for name, per_scorer in summary["summary"].items()
            for scorer, delta in per_scorer.items()]


def _row(compared: ExperimentsCompared, row: Row) -> dict:
    out = comparison.row_out(compared, row)
    cells = []
    for name, cell in out["experiments"].items():
        record = row.records[name]
        scores = [_score(scorer, cell, compared.comparison.threshold) for scorer in compared.scorers]
        cells.append({**cell, "experiment_id": name, "is_baseline": name == compared.comparison.baseline,
                      "score_list": scores, "ended": record is not None,
                      "output_text": _shown(cell.get("output")) if record is not None and record.has_output else "",
                      "diff_lines": _diff_lines(cell.get("diff") or "")})
    return {**out, "cells": cells, "metadata_text": json.dumps(out["metadata"], ensure_ascii=False)
            if out["metadata"] else ""}


def _score(scorer: str, cell: dict, threshold: float) -> dict:
    """One scorer's cell: the score, and for another experiment its delta with `moved` up or
    down when past the threshold."""
    delta = (cell.get("deltas") or {}).get(scorer)
    moved = "" if delta is None else "up" if delta > threshold else "down" if delta < -threshold else ""
    return {"scorer": scorer, "value": (cell.get("scores") or {}).get(scorer), "delta": delta, "moved": moved}


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True)
    return text if len(text) <= SHOWN_MAX else f"{text[:SHOWN_MAX]}… ({len(text)} characters; the CSV has all)"


def _diff_lines(diff: str) -> list[tuple[str, str]]:
    """Each line of a unified diff with its kind, for the page to colour: added, removed, hunk, or context."""
    lines = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "added"
        elif line.startswith("-"):
            kind = "removed"
        else:
            kind = "same"
        lines.append((kind, line))
    return lines
