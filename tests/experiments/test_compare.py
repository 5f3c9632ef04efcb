"""Experiments compared: against hand-made items (deltas, flags, the summary's verdicts,
filters, items only one has), through the API (roles, refusals naming what is wrong, paging,
CSV) and the command."""
from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command

from experiments import comparison
from experiments.comparison import RowFilters, experiments_compared, summary_out
from tests.experiments.compare_support import dataset, experiment

pytestmark = pytest.mark.django_db

ITEMS = [
    {"id": "q1", "expected": "Paris", "metadata": {"level": 1, "topic": "europe"}},
    {"id": "q2", "expected": "Rome", "metadata": {"level": 3, "topic": "europe"}},
    {"id": "q3", "expected": "Lisbon", "metadata": {"level": 3, "topic": "iberia"}},
    {"id": "q4", "metadata": {"level": 2}},
]
BASELINE = {
    "q1": {"scores": {"exact": 1.0, "mentions": 1.0}, "output": "Paris", "cost": 2_000_000_000, "latency": 1.5},
    "q2": {"scores": {"exact": 1.0, "mentions": 0.5}, "output": "Rome"},
    "q3": {"scores": {"exact": 0.0, "mentions": 0.0}, "output": "Madrid"},
    "q4": {"status": "failed", "error_code": "TIMEOUT"},
}
CANDIDATE = {
    "q1": {"scores": {"exact": 1.0, "mentions": 1.0}, "output": "Paris"},
    "q2": {"scores": {"exact": 0.0, "mentions": 0.45}, "output": "Milan"},  # exact fell by 1: regressed
    "q3": {"scores": {"exact": 1.0, "mentions": 0.05}, "output": "Lisbon"},  # exact rose by 1: improved
    "q4": {"scores": {"exact": None, "mentions": 1.0}, "output": {"city": "none"}},
}


@pytest.fixture
def pair(db):
    version = dataset(ITEMS)
    return (experiment("exp_a", version, BASELINE, age=10, runs=True),
            experiment("exp_b", version, CANDIDATE, age=5, runs=True))


def by_item(rows):
    return {row.item_id: row for row in rows}


def test_deltas_flags_and_the_summary_match_the_items(pair):
    compared = experiments_compared(["exp_b", "exp_a"])  # the oldest is the baseline whatever the order
    assert compared.comparison.baseline == "exp_a" and [e.experiment_id for e in compared.experiments] == ["exp_a",
                                                                                                            "exp_b"]
    assert compared.scorers == ("exact", "mentions")
    rows = by_item(compared.rows())
    assert list(rows) == ["q1", "q2", "q3", "q4"]
    assert rows["q1"].deltas["exp_b"] == {"exact": 0.0, "mentions": 0.0}
    assert rows["q2"].deltas["exp_b"]["exact"] == -1.0
    assert rows["q2"].deltas["exp_b"]["mentions"] == pytest.approx(-0.05)
    assert rows["q3"].deltas["exp_b"]["exact"] == 1.0
    assert rows["q4"].deltas["exp_b"] == {"exact": None, "mentions": None}  # the baseline's run failed
    flags = {item_id: (row.regressed, row.improved) for item_id, row in rows.items()}
    assert flags == {"q1": (False, False), "q2": (True, False), "q3": (False, True), "q4": (False, False)}
    exact = compared.comparison.summary["exp_b"]["exact"]
    assert exact.count == 3 and exact.baseline_mean == pytest.approx(2 / 3) and exact.candidate_mean == pytest.approx(2 / 3)
    assert exact.delta == pytest.approx(0.0) and exact.verdict == "no clear change"
    assert exact.interval is not None and exact.interval.low < 0 < exact.interval.high
    # A threshold the regression does not pass flags nothing; the baseline can be either.
    assert not any(r.regressed or r.improved for r in experiments_compared(["exp_a", "exp_b"], threshold=1).rows())
    swapped = by_item(experiments_compared(["exp_a", "exp_b"], baseline="exp_b").rows())
    assert swapped["q2"].improved and swapped["q3"].regressed and swapped["q2"].deltas["exp_a"]["exact"] == 1.0


def test_the_verdict_follows_a_clear_change(db):
    items = [{"id": f"i{n}"} for n in range(40)]
    version = dataset(items)
    experiment("low", version, {f"i{n}": {"scores": {"exact": 0.2 + n % 3 * 0.1}} for n in range(40)}, age=3,
               scorers=[{"type": "exact"}])
    experiment("high", version, {f"i{n}": {"scores": {"exact": 0.8 - n % 2 * 0.1}} for n in range(40)}, age=2,
               scorers=[{"type": "exact"}])
    up = experiments_compared(["low", "high"]).comparison.summary["high"]["exact"]
    down = experiments_compared(["low", "high"], baseline="high").comparison.summary["low"]["exact"]
    assert up.verdict == "improved" and up.interval.low > 0
    assert down.verdict == "regressed" and down.interval.high < 0
    assert up.delta == pytest.approx(-down.delta)
    # Seeded by the experiments: the same interval every time.
    assert experiments_compared(["low", "high"]).comparison.summary["high"]["exact"] == up


def test_filters_keep_the_rows_they_name(pair):
    compared = experiments_compared(["exp_a", "exp_b"])

    def kept(**filters):
        return [row.item_id for row in compared.rows(RowFilters(**filters).check(compared.scorers))]

    assert kept(only="regressed") == ["q2"]
    assert kept(only="improved") == ["q3"]
    assert kept(only="failed") == ["q4"]
    assert kept(scorer="exact", below=0.5) == ["q2", "q3"]
    assert kept(scorer="mentions", below=0.01) == ["q3"]
    assert kept(metadata="level=3") == ["q2", "q3"]
    assert kept(metadata="topic=europe", only="regressed") == ["q2"]
    assert kept(metadata="topic=asia") == []


def test_different_versions_are_matched_by_item_id_and_items_only_in_one_are_named(pair):
    newer = dataset([{"id": "q1"}, {"id": "q2"}, {"id": "q5"}])
    experiment("exp_c", newer, {"q1": {"scores": {"exact": 0.0}}, "q5": {"scores": {"exact": 1.0}}}, age=1)
    compared = experiments_compared(["exp_a", "exp_c"])
    assert compared.versions_differ
    assert compared.only_in == {"exp_a": ["q3", "q4"], "exp_c": ["q5"]}
    rows = by_item(compared.rows())
    assert list(rows) == ["q1", "q2", "q3", "q4", "q5"]
    assert rows["q1"].deltas["exp_c"]["exact"] == -1.0 and rows["q1"].regressed
    assert rows["q5"].records["exp_a"] is None
    out = comparison.row_out(compared, compared.with_outputs([rows["q2"]])[0])
    assert out["experiments"]["exp_c"]["status"] == "pending"  # in exp_c, not ended
    assert comparison.row_out(compared, rows["q5"], diffs=False)["experiments"]["exp_a"]["status"] == "absent"


def test_outputs_are_read_for_the_rows_shown_and_diffed(pair):
    compared = experiments_compared(["exp_a", "exp_b"])
    light = by_item(compared.rows())["q2"]
    assert light.records["exp_b"].output is None  # the page reads outputs for its rows only
    out = comparison.row_out(compared, compared.with_outputs([light])[0])
    cell = out["experiments"]["exp_b"]
    assert cell["output"] == "Milan" and "-Rome" in cell["diff"] and "+Milan" in cell["diff"]
    assert cell["compare_runs_url"] == "/executions/compare/?a=exp_a_1&b=exp_b_1"
    same = comparison.row_out(compared, compared.with_outputs([by_item(compared.rows())["q1"]])[0])
    assert same["experiments"]["exp_b"]["diff"] == ""
    assert out["experiments"]["exp_a"]["cost"] == "0.000000000000" and "diff" not in out["experiments"]["exp_a"]


# -- the API -------------------------------------------------------------------------------------


def test_viewers_read_a_page_of_rows_and_the_summary(pair, api):
    assert api.anonymous.get("/api/experiments/compare?ids=exp_a,exp_b").status_code == 401
    response = api.viewer.get("/api/experiments/compare", ids="exp_a,exp_b", limit=2, offset=1)
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["baseline"] == "exp_a" and body["threshold"] == 0.1 and body["scorers"] == ["exact", "mentions"]
    assert body["counts"] == {"rows": 4, "regressed": 1, "improved": 1, "failed": 1, "matching": 4}
    assert [row["item_id"] for row in body["rows"]] == ["q2", "q3"] and body["offset"] == 1 and body["limit"] == 2
    q2 = body["rows"][0]
    assert q2["regressed"] and not q2["improved"] and q2["metadata"] == {"level": 3, "topic": "europe"}
    assert q2["experiments"]["exp_b"]["deltas"]["exact"] == -1.0 and "+Milan" in q2["experiments"]["exp_b"]["diff"]
    assert q2["experiments"]["exp_b"]["scores"] == {"exact": 0.0, "mentions": 0.45}
    delta = body["summary"]["exp_b"]["exact"]
    assert delta["verdict"] == "no clear change" and delta["count"] == 3 and set(delta["interval"]) == {"low", "high",
                                                                                                        "level"}
    assert [e["experiment_id"] for e in body["experiments"]] == ["exp_a", "exp_b"] and body["experiments"][0]["baseline"]
    filtered = api.viewer.get("/api/experiments/compare", ids="exp_a,exp_b", only="failed").json()
    assert [row["item_id"] for row in filtered["rows"]] == ["q4"] and filtered["counts"]["matching"] == 1
    assert filtered["rows"][0]["experiments"]["exp_a"]["error_code"] == "TIMEOUT"
    below = api.viewer.get("/api/experiments/compare", ids="exp_a,exp_b", scorer="exact", below=0.5,
                           metadata="topic=iberia", threshold=0.5, baseline="exp_b").json()
    assert [row["item_id"] for row in below["rows"]] == ["q3"] and below["baseline"] == "exp_b"
    assert below["rows"][0]["regressed"] and below["threshold"] == 0.5


@pytest.mark.parametrize(("query", "status", "words"), [
    ({"ids": "exp_a"}, 422, "ids: name 2 or more experiments"),
    ({"ids": "exp_a,exp_a"}, 422, "ids: names exp_a more than once"),
    ({"ids": "exp_a,exp_nope"}, 404, "no experiment 'exp_nope'"),
    ({"ids": "exp_a,exp_b", "baseline": "exp_c"}, 422, "baseline: 'exp_c' is not one of the experiments compared"),
    ({"ids": "exp_a,exp_b", "threshold": 2}, 422, "threshold"),
    ({"ids": "exp_a,exp_b", "only": "bogus"}, 422, "only"),
    ({"ids": "exp_a,exp_b", "scorer": "judge", "below": 0.5}, 422, "scorer: 'judge' is not a scorer"),
    ({"ids": "exp_a,exp_b", "below": 0.5}, 422, "scorer: is needed with below"),
    ({"ids": "exp_a,exp_b", "scorer": "exact"}, 422, "below: is needed with scorer"),
    ({"ids": "exp_a,exp_b", "metadata": "level"}, 422, "metadata: is KEY=VALUE"),
    ({"ids": "exp_a,exp_b", "limit": 1000}, 422, "limit"),
])
def test_a_refusal_names_what_is_wrong(pair, api, query, status, words):
    response = api.viewer.get("/api/experiments/compare", **query)
    assert response.status_code == status, response.json()
    assert words in response.json()["message"]


def test_experiments_over_different_datasets_are_refused_naming_them(pair, api):
    other = dataset([{"id": "x1"}], name="rivers")
    experiment("exp_r", other, {"x1": {"scores": {"exact": 1.0}}})
    response = api.viewer.get("/api/experiments/compare", ids="exp_a,exp_b,exp_r")
    assert response.status_code == 422
    message = response.json()["message"]
    assert "one dataset" in message and "exp_a, exp_b over 'capitals'" in message and "exp_r over 'rivers'" in message


def test_the_csv_holds_every_row_the_filters_keep(pair, api):
    response = api.viewer.get("/api/experiments/compare", ids="exp_a,exp_b", format="csv", limit=1)
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert 'filename="compare_exp_a_exp_b.csv"' in response["Content-Disposition"]
    lines = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [line["item_id"] for line in lines] == ["q1", "q2", "q3", "q4"]  # not paged
    assert lines[0]["exp_a:cost_usd"] == "0.002000000000" and lines[0]["exp_a:latency_seconds"] == "1.5"
    assert lines[1]["exp_b:output"] == "Milan" and lines[1]["exp_b:exact:delta"] == "-1.0"
    assert lines[1]["regressed"] == "true" and json.loads(lines[3]["exp_b:output"]) == {"city": "none"}
    regressed = api.viewer.get("/api/experiments/compare", ids="exp_a,exp_b", format="csv", only="regressed")
    assert [line["item_id"] for line in csv.DictReader(io.StringIO(regressed.content.decode()))] == ["q2"]


# -- the command ---------------------------------------------------------------------------------


def test_the_command_prints_the_summary_counts_and_rows(pair, tmp_path):
    out = io.StringIO()
    target = tmp_path / "rows.csv"
    call_command("compare_experiments", "exp_b", "exp_a", "--rows", "2", "--csv", str(target), stdout=out)
    printed = json.loads(out.getvalue())
    assert printed["baseline"] == "exp_a" and printed["counts"]["regressed"] == 1 and printed["counts"]["improved"] == 1
    assert printed["summary"]["exp_b"]["mentions"]["verdict"] == "no clear change"
    assert [row["item_id"] for row in printed["rows"]] == ["q1", "q2"]
    assert printed["rows"][1]["experiments"]["exp_b"]["deltas"]["exact"] == -1.0
    assert len(list(csv.reader(io.StringIO(target.read_text())))) == 5  # the header and every row
    out = io.StringIO()
    call_command("compare_experiments", "exp_a", "exp_b", "--baseline", "exp_b", "--threshold", "0.02",
                 "--only", "regressed", stdout=out)
    printed = json.loads(out.getvalue())
    assert printed["baseline"] == "exp_b" and [row["item_id"] for row in printed["rows"]] == ["q3"]


@pytest.mark.parametrize(("args", "words"), [
    (["exp_a"], "name 2 or more"),
    (["exp_a", "exp_nope"], "no experiment 'exp_nope'"),
    (["exp_a", "exp_b", "--baseline", "exp_x"], "baseline"),
    (["exp_a", "exp_b", "--threshold", "-1"], "threshold"),
])
def test_the_command_refuses_naming_what_is_wrong(pair, args, words):
    with pytest.raises(CommandError, match=words):
        call_command("compare_experiments", *args, stdout=io.StringIO())


def test_three_experiments_each_against_the_baseline(pair, api):
    version = pair[0].dataset_version
    experiment("exp_c", version, {"q1": {"scores": {"exact": 0.0, "mentions": 1.0}, "output": "Lyon"}}, age=1)
    body = api.viewer.get("/api/experiments/compare", ids="exp_c,exp_b,exp_a").json()
    assert body["baseline"] == "exp_a" and [e["experiment_id"] for e in body["experiments"]] == ["exp_a", "exp_c",
                                                                                                  "exp_b"]
    assert set(body["summary"]) == {"exp_b", "exp_c"} and body["summary"]["exp_c"]["exact"]["count"] == 1
    q1, q2 = body["rows"][0], body["rows"][1]
    assert q1["regressed"] and q1["experiments"]["exp_c"]["deltas"]["exact"] == -1.0  # exp_c fell on q1
    assert q2["experiments"]["exp_c"]["status"] == "pending" and q2["experiments"]["exp_c"]["deltas"]["exact"] is None
    assert q1["experiments"]["exp_c"]["compare_runs_url"] is None  # exp_c's items have no runs here
    assert body["experiments"][1]["ended"] == 1 and body["experiments"][1]["items"] == 4


def test_a_scorer_defined_differently_is_not_compared_and_the_answer_says_so(db):
    version = dataset(ITEMS)
    regex_on = lambda path: [{"type": "exact"}, {"type": "regex", "pattern": "R", "path": path}]  # noqa: E731
    experiment("exp_a", version, {"q1": {"scores": {"exact": 1, "regex": 0}}}, age=10, scorers=regex_on("$.state.a"))
    experiment("exp_b", version, {"q1": {"scores": {"exact": 1, "regex": 1}}}, age=5, scorers=regex_on("$.state.b"))
    compared = experiments_compared(["exp_a", "exp_b"])
    assert compared.scorers == ("exact",) and compared.scorers_differ == ["regex"]
    summary = summary_out(compared)
    assert list(summary["summary"]["exp_b"]) == ["exact"] and summary["scorers_differ"] == ["regex"]
    assert all("regex" not in row.deltas.get("exp_b", {}) for row in compared.rows())
