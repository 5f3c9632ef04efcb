"""The benchmark_tot command, on the first puzzles of its enumeration."""
import io
import json

import pytest
from django.core.management import CommandError, call_command

from benchmarks import tot as benchmark_tot


def run(*args):
    out = io.StringIO()
    call_command("benchmark_tot", *args, stdout=out)
    return out.getvalue()


def test_it_enumerates_every_multiset_of_four_numbers_from_1_to_13():
    hands = benchmark_tot.puzzles()
    assert len(hands) == len(set(hands)) == 1820
    assert hands[0] == (1, 1, 1, 1) and hands[-1] == (13, 13, 13, 13)


def test_it_reports_each_search_with_no_wrong_answer():
    figures = json.loads(run("--limit", "60", "--branching", "5", "--json"))
    assert figures["puzzles"] == 60 and figures["enumerated"] == 1820
    rows = figures["tables"][0]["rows"]
    assert [row["search"] for row in rows] == ["BFS b=1", "BFS b=3", "BFS b=5", "DFS"]
    for row in rows:
        assert row["wrong_answers"] == 0 and row["solvable"] == figures["solvable"] > 0
        assert 0 < row["success_rate"] <= 1 and row["mean_evaluator_calls"] > 0
    assert rows[0]["solved"] <= rows[2]["solved"] <= figures["tables"][0]["reachable"]
    text = run("--limit", "20", "--branching", "5")
    assert "BFS b=5" in text and "not GPT-4" in text


def test_it_fails_on_a_wrong_answer(monkeypatch):
    monkeypatch.setattr(benchmark_tot, "verify", lambda answer, numbers: ["makes 23, not 24"])
    with pytest.raises(CommandError, match="wrong answer"):
        run("--limit", "40", "--branching", "5")


def test_it_refuses_a_bad_limit():
    with pytest.raises(CommandError, match="--limit must be at least 1"):
        run("--limit", "0")
