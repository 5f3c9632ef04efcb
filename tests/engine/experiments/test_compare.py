"""Experiments compared item by item, on small hand-made records."""

import numpy as np
import pytest

from engine.experiments.compare import ComparisonError, compare, csv_rows, filter_rows, row_diff, unified_diff
from engine.experiments.records import ItemRecord
from engine.experiments.scorers import NotScored, Score


def item(item_id, status="success", output=None, exact=None, judge=None, **extra):
    scores = extra.pop("scores", {})
    if exact is not None:
        scores["exact"] = Score(exact, "")
    if judge is not None:
        scores["judge"] = Score(judge, "")
    return ItemRecord(item_id, status, output=output, scores=scores, **extra)


BASE = [
    item("q1", output={"answer": 24}, exact=1.0, judge=0.8, cost=2.0, latency_seconds=1.5, metadata={"level": "easy"}),
    item("q2", output="four", exact=0.0, judge=0.5, metadata={"level": "hard", "n": 3}),
    item("q3", output={"answer": 7}, exact=1.0, judge=0.9, metadata={"level": "hard"}),
]
CANDIDATE = [
    item("q1", output={"answer": 24}, exact=1.0, judge=0.9, metadata={"level": "easy"}),
    item("q2", output="4", exact=1.0, judge=0.6, metadata={"level": "hard", "n": 3}),
    item("q3", "failed", error_code="NODE_TIMEOUT", metadata={"level": "hard"},
         scores={"exact": NotScored("NO_OUTPUT", "failed")}),
    item("q4", output="=1+1", exact=0.0, judge=0.2, metadata={"level": "easy"}),
]


def comparison(threshold=0.0):
    return compare({"cand": CANDIDATE, "base": BASE}, baseline="base", scorers=["exact", "judge"],
                   rng=np.random.default_rng(0), threshold=threshold, resamples=200)


def test_it_gives_one_row_per_item_with_deltas_and_flags():
    result = comparison()
    assert result.experiments == ("base", "cand")
    assert [row.item_id for row in result.rows] == ["q1", "q2", "q3", "q4"]
    q1, q2, q3, q4 = result.rows
    assert q1.deltas == {"cand": {"exact": 0.0, "judge": pytest.approx(0.1)}}
    assert (q1.improved, q1.regressed) == (True, False)
    assert q2.deltas["cand"]["exact"] == 1.0 and q2.improved
    assert q3.deltas == {"cand": {"exact": None, "judge": None}}  # not scored is not a drop to 0
    assert (q3.improved, q3.regressed) == (False, False)
    assert q4.records["base"] is None and q4.deltas["cand"] == {"exact": None, "judge": None}
    assert q4.metadata == {"level": "easy"}


def test_it_flags_only_beyond_the_threshold():
    q1, q2, *_ = comparison(threshold=0.2).rows
    assert not q1.improved  # +0.1 on the judge is within 0.2
    assert q2.improved  # +1.0 on exact


def test_it_summarises_each_scorer_over_the_items_both_scored():
    summary = comparison().summary["cand"]
    assert summary["exact"].count == 2  # q1 and q2: q3 not scored by cand, q4 not in base
    assert summary["exact"].delta == 0.5
    assert summary["judge"].count == 2
    assert summary["judge"].delta == pytest.approx(0.1)
    assert summary["judge"].verdict == "improved"  # both +0.1: the interval is [0.1, 0.1]


def test_it_filters_rows():
    rows = comparison().rows
    ids = lambda found: [row.item_id for row in found]  # noqa: E731
    assert ids(filter_rows(rows, regressed_only=True)) == []
    assert ids(filter_rows(rows, failed_only=True)) == ["q3"]
    assert ids(filter_rows(rows, failed_only=True, experiment="base")) == []
    assert ids(filter_rows(rows, score_below=("judge", 0.6))) == ["q2", "q4"]  # base's 0.5, cand's 0.2
    assert ids(filter_rows(rows, score_below=("judge", 0.6), experiment="cand")) == ["q4"]
    assert ids(filter_rows(rows, metadata=("level", "hard"))) == ["q2", "q3"]
    assert ids(filter_rows(rows, metadata=("n", "3"))) == ["q2"]  # text as from a query string
    assert ids(filter_rows(rows, metadata=("n", 3))) == ["q2"]
    assert ids(filter_rows(rows, metadata=("level", "hard"), failed_only=True)) == ["q3"]
    regressed = compare({"a": CANDIDATE, "b": BASE}, baseline="a", scorers=["judge"], rng=np.random.default_rng(0))
    assert ids(filter_rows(regressed.rows, regressed_only=True)) == ["q1", "q2"]


def test_it_diffs_outputs_as_pretty_json_or_text():
    q1, q2, q3, _ = comparison().rows
    assert row_diff(q1, "cand", baseline="base") == ""
    assert row_diff(q2, "cand", baseline="base") == "--- base\n+++ cand\n@@ -1 +1 @@\n-four\n+4"
    assert row_diff(q3, "cand", baseline="base").splitlines()[3:] == [
        "-{", '-  "answer": 7', "-}", "+(no output: the run failed, NODE_TIMEOUT)"]


def test_it_caps_a_long_diff_with_a_visible_marker():
    a = "".join(f"line {i}\n" for i in range(100))
    b = "".join(f"other {i}\n" for i in range(100))
    lines = unified_diff(a, b, from_name="a", to_name="b", max_lines=10).splitlines()
    assert len(lines) == 11
    assert lines[-1] == "… 193 more lines"  # 3 header lines + 200 changed lines, 10 shown


def test_it_writes_csv_rows_with_formulas_defused():
    header, q1, _, q3, q4 = csv_rows(comparison())
    assert header == ["item_id",
                      "base:status", "base:error_code", "base:cost", "base:latency_seconds", "base:exact", "base:judge",
                      "base:output",
                      "cand:status", "cand:error_code", "cand:cost", "cand:latency_seconds", "cand:exact", "cand:judge",
                      "cand:output", "cand:exact:delta", "cand:judge:delta", "regressed", "improved"]
    assert q1[:8] == ["q1", "success", "", "2.0", "1.5", "1.0", "0.8", '{"answer": 24}']
    assert q3[8:15] == ["failed", "NODE_TIMEOUT", "0.0", "", "", "", ""]
    assert q4[1:8] == [""] * 7
    assert q4[14] == "'=1+1"
    assert q4[-2:] == ["false", "false"]


@pytest.mark.parametrize(("experiments", "baseline", "words"), [
    ({"a": BASE}, "a", "2 or more experiments"),
    ({"a": BASE, "b": CANDIDATE}, "c", "the baseline 'c' is not one"),
    ({"a": BASE, "b": [*CANDIDATE, CANDIDATE[0]]}, "a", "item 'q1' appears twice in experiment 'b'"),
])
def test_it_refuses_what_cannot_be_compared(experiments, baseline, words):
    with pytest.raises(ComparisonError, match=words):
        compare(experiments, baseline=baseline, scorers=["exact"], rng=np.random.default_rng(0))


def test_it_compares_ten_thousand_items():  # how fast: benchmark_experiments, not a timed test
    rng = np.random.default_rng(1)
    a = [item(f"i{i}", output=i, exact=float(v), metadata={"k": i % 3}) for i, v in enumerate(rng.random(10_000) < 0.5)]
    b = [item(f"i{i}", output=i, exact=float(v)) for i, v in enumerate(rng.random(10_000) < 0.6)]
    result = compare({"a": a, "b": b}, baseline="a", scorers=["exact"], rng=rng)
    assert len(result.rows) == 10_000 and filter_rows(result.rows, regressed_only=True)
    assert result.summary["b"]["exact"].verdict == "improved"
