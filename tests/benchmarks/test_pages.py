"""The page benchmark at toy sizes: every answer measured in a scratch database that is gone
afterwards, with figures that make sense (timings are not judged here)."""
import io
import json
import re
import tempfile

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from benchmarks import pages as benchmark_pages
from benchmarks.pages import (
    LIST_ANSWERS,
    OPTIONAL,
    RUN_ANSWERS,
    TARGETS,
    WRITE_ANSWERS,
)
from executions.models import Execution, NodeRun

# The command creates and drops a database beside the test database: no transaction around it.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def scratch_place(monkeypatch, tmp_path):
    """Where the scratch database goes: a SQLite one in tmp_path, so that the test can see it
    gone; the name of the test database, which must be the connection's again afterwards."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path, connection.settings_dict["NAME"]


def scratch_left_behind(scratch_place) -> list[str]:
    folder, test_database = scratch_place
    assert connection.settings_dict["NAME"] == test_database
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", [f"{test_database}_pages_%"])
            return [name for (name,) in cursor.fetchall()]
    return [path.name for path in folder.iterdir()]


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("benchmark_pages", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_it_measures_every_answer_of_each_run_and_of_the_list(scratch_place):
    report = json.loads(run("--sizes", "50,200", "--executions", "300", "--repeat", "2", "--json"))

    assert report["database"].startswith(connection.vendor) and report["sizes"] == [50, 200]
    expected = [(key, size) for size in (50, 200) for key, _, _ in RUN_ANSWERS] + [
        (key, 300) for key, _, _ in LIST_ANSWERS] + [(key, size) for size in (50, 200) for key, *_ in WRITE_ANSWERS]
    assert [(a["key"], a["size"]) for a in report["answers"]] == expected
    for answer in report["answers"]:
        if answer["key"] in OPTIONAL and answer["note"]:  # not on this branch yet
            assert answer["note"] == "skipped: not on this branch (404)" and answer["http_status"] == 404
            continue
        written = answer["key"] in {key for key, *_ in WRITE_ANSWERS}
        assert answer["http_status"] == (201 if written else 200) and answer["error"] is None, answer
        assert (answer["peak_mb"] > 0) if written else answer["peak_mb"] is None, answer
        assert answer["queries"] > 0 and answer["bytes"] > 0 and answer["ms"] > 0, answer
        assert 1 <= answer["samples"] <= 2
        assert answer["missed"] == [] or answer["key"] in TARGETS
    run_200 = {a["key"]: a for a in report["answers"] if a["size"] == 200 and a["of"] == "node runs"}
    assert run_200["node_runs_last"]["url"].endswith("offset=150")
    # A page of node runs is 50 of them whatever the run's size; one node's page, 20.
    assert run_200["node_runs_first"]["bytes"] > run_200["node_runs_of_node"]["bytes"] > run_200["node_run"]["bytes"]
    assert report["missed"] == [f"{a['label']} at {a['size']:,} {a['of']}: {'; '.join(a['missed'])}"
                                for a in report["answers"] if a["missed"]]
    assert report["targets"]["api_detail"] == {"max_ms": 1000, "max_queries": 20, "max_bytes": 1_000_000}
    rerun_50 = next(a for a in report["answers"] if a["key"] == "rerun" and a["size"] == 50)
    assert rerun_50["url"] == "/api/executions/bench_loop_50/rerun" and rerun_50["queries"] > 0
    assert report["targets"]["rerun"] == {"max_ms": 1000, "max_queries": 20, "max_bytes": None}

    # Nothing was written to the test database; the scratch database is gone.
    assert (Execution.objects.count(), NodeRun.objects.count()) == (0, 0)
    assert scratch_left_behind(scratch_place) == []


def test_it_prints_a_table_with_a_row_per_answer_and_the_targets_verdict(scratch_place):
    text = run("--sizes", "20", "--executions", "10", "--repeat", "1")

    assert re.search(rf"^database: {connection.vendor}", text, re.MULTILINE), text
    for key, label, _ in RUN_ANSWERS:
        if key not in OPTIONAL:
            verdict = r" +(ok|MISSED: .+)" if key in TARGETS else ""
            assert re.search(rf"^{label} +20 node runs +\d+\.\d +\d+ +[\d,]+{verdict}$", text, re.MULTILINE), text
    for _, label, _ in LIST_ANSWERS:
        assert re.search(rf"^{label} +10 executions +\d+\.\d +\d+ +[\d,]+$", text, re.MULTILINE), text
    assert re.search(r"^pages-at-scale targets: (all met|MISSED \d+:)$", text, re.MULTILINE), text
    assert scratch_left_behind(scratch_place) == []


def test_it_stops_an_answer_past_the_timeout_reports_it_missed_and_goes_on(scratch_place, monkeypatch):
    import time

    from executions import selectors

    def slow_detail(execution):
        time.sleep(5)  # past the timeout of 2 s, which every other answer, some 50 ms, is well within

    monkeypatch.setattr(selectors, "execution_detail", slow_detail)
    report = json.loads(run("--sizes", "10", "--executions", "0", "--repeat", "1", "--timeout", "2", "--json"))

    detail = next(a for a in report["answers"] if a["key"] == "api_detail")
    assert detail["error"] == "stopped after 2 s" and detail["ms"] is None
    assert detail["missed"] == ["stopped after 2 s"]
    # The answers stopped (a re-run answers with the new run's record); on a busy machine
    # another answer may miss its time target as well, which is not what this test is about.
    assert [missed for missed in report["missed"] if "stopped after" in missed] == [
        "API record of the run at 10 node runs: stopped after 2 s",
        "API re-run from the last step at 10 node runs: stopped after 2 s"]
    after = [a for a in report["answers"] if a["key"] == "node_runs_first"]
    assert after[0]["http_status"] == 200 and after[0]["error"] is None
    assert scratch_left_behind(scratch_place) == []


def test_it_destroys_the_scratch_database_after_an_error(scratch_place, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(benchmark_pages, "large_run_create", broken)
    with pytest.raises(RuntimeError, match="the disk is full"):
        run("--sizes", "10", "--executions", "0")
    assert scratch_left_behind(scratch_place) == []


@pytest.mark.parametrize("args", [("--sizes", "ten"), ("--sizes", "0"), ("--executions", "-1"), ("--repeat", "0")])
def test_it_refuses_arguments_it_cannot_measure(args):
    with pytest.raises(CommandError):
        run(*args)


def test_it_times_the_copies_of_a_rerun_made_on_a_worker(scratch_place, settings):
    settings.RERUN_COPY_INLINE_MAX, settings.RERUN_COPY_CHUNK = 20, 30

    report = json.loads(run("--sizes", "10,100", "--executions", "0", "--repeat", "1", "--json"))

    copies = [a for a in report["answers"] if a["key"] == "rerun_copy"]
    assert [a["size"] for a in copies] == [100]  # the 10-node run's re-run is copied as it is answered
    assert copies[0]["ms"] > 0 and copies[0]["queries"] > 4 and copies[0]["error"] is None, copies
    assert re.fullmatch(r"\d+ copies", copies[0]["note"]) and copies[0]["missed"] == []
    rerun_100 = next(a for a in report["answers"] if a["key"] == "rerun" and a["size"] == 100)
    assert rerun_100["http_status"] == 201 and rerun_100["error"] is None
    assert scratch_left_behind(scratch_place) == []
