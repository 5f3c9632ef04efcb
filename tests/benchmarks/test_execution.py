"""The execution benchmark, at toy sizes, on a real worker against the test database."""
import io
import json
import re

import pytest
from django.core.management import call_command
from django.db import connection

from agents.models import Agent
from executions.models import Evaluation, Execution, NodeRun
from tests.executions.conftest import database_url
from workflows.models import Workflow

pytestmark = pytest.mark.integration

NUMBER = r"\d+(?:\.\d+)?"


@pytest.fixture
def bench_env(transactional_db, monkeypatch, settings):
    # The worker the command starts opens the database this process uses: the test database.
    monkeypatch.setenv("DATABASE_URL", database_url(connection))
    return settings


def left_behind():
    return (Workflow.objects.filter(workflow_id__startswith="bench_").count(),
            Agent.objects.filter(agent_id__startswith="bench_noop").count(), Execution.objects.count(),
            NodeRun.objects.count(), Evaluation.objects.count())


def test_it_prints_per_node_ratios_and_deletes_what_it_made(bench_env):
    queue = bench_env.CELERY_TASK_DEFAULT_QUEUE
    out = io.StringIO()
    call_command("benchmark_execution", "--chain", "3", "--wide", "3", "--layer", "6", "--loop", "8", "--repeat", "2",
                 "--timeout", "60", stdout=out)
    text = out.getvalue()
    assert re.search(rf"^database: {connection.vendor}", text, re.MULTILINE), text
    assert re.search(rf"^baseline: 3 sequential core\.tasks\.ping .* {NUMBER} and {NUMBER} ms each", text,
                     re.MULTILINE), text
    assert re.search(rf"^bare layer: 3 core\.tasks\.ping messages published at once .*, {NUMBER} ms each "
                     rf"\({NUMBER} round trips\)", text, re.MULTILINE), text
    for label, target in (("chain of 3 nodes", "1.5"), ("wide dag of 3 nodes", "2"), ("wide dag of 6 nodes", "2")):
        assert re.search(rf"^{label} \((?:dag, independent nodes \(no edges\)|seq)\): {NUMBER} ms per node vs "
                         rf"bare Celery round trip {NUMBER} ms → {NUMBER}× \(median of 2 runs: {NUMBER}×, {NUMBER}×; "
                         rf"target ≤ {target}× on PostgreSQL.*; "
                         rf"evaluated {NUMBER} ms after it ended", text, re.MULTILINE), text
    assert re.search(rf"^wide dag of 6 nodes .*; {NUMBER}× the per-node time of the smaller dag \(target ≤ 1.1×", text,
                     re.MULTILINE), text
    assert re.search(rf"^state machine loop of 8 steps: {NUMBER} ms per step over its first 4, {NUMBER} ms over its "
                     rf"last 4 → {NUMBER}× \(target ≤ 1.25×, (ok|OVER TARGET)\) — {NUMBER} s wall$", text,
                     re.MULTILINE), text
    assert left_behind() == (0, 0, 0, 0, 0)
    assert bench_env.CELERY_TASK_DEFAULT_QUEUE == queue


def test_it_prints_json(bench_env):
    out = io.StringIO()
    call_command("benchmark_execution", "--chain", "2", "--wide", "2", "--layer", "0", "--wide-shape", "fanout",
                 "--loop", "6", "--repeat", "3", "--json", stdout=out)
    report = json.loads(out.getvalue())
    loop = report["loop"]
    assert (loop["steps"], loop["window"]) == (6, 3) and loop["first_per_step_s"] > 0 and loop["last_per_step_s"] > 0
    assert loop["growth"] == pytest.approx(loop["last_per_step_s"] / loop["first_per_step_s"])
    assert report["error"] is None and len(report["baseline"]["per_task_s"]) == 6  # before each run
    assert report["drain"]["messages"] == 2 and report["drain"]["per_message_s"] > 0
    assert all(f["evaluated_s"] > 0 for f in report["figures"])
    assert [(f["name"], f["nodes"], f["shape"]) for f in report["figures"]] == [
        ("chain", 2, "seq"), ("wide", 2, "dag, one root fanning out")]
    chain, wide = report["figures"]
    # The shapes in turn, each run after a baseline of its own; a shape's figures are medians.
    assert [s["baseline_s"] for s in chain["samples"]] == report["baseline"]["per_task_s"][0::2]
    assert [s["baseline_s"] for s in wide["samples"]] == report["baseline"]["per_task_s"][1::2]
    for figure in (chain, wide):
        assert len(figure["samples"]) == 3 and len({s["execution_id"] for s in figure["samples"]}) == 3
        assert all(s["ratio"] > 0 and s["ratio"] == pytest.approx(s["per_node_s"] / s["baseline_s"])
                   for s in figure["samples"])
        assert figure["ratio"] == sorted(s["ratio"] for s in figure["samples"])[1]
        assert figure["per_node_s"] == sorted(s["per_node_s"] for s in figure["samples"])[1]
    assert left_behind() == (0, 0, 0, 0, 0)


def test_it_tells_a_workers_exit_code_and_refuses_to_ask_before_it_started():
    import subprocess
    import sys

    from benchmarks.execution import BenchmarkFailed, Worker

    worker = Worker(None, "bench-q-1", {})
    try:
        with pytest.raises(BenchmarkFailed, match="before it was started"):
            worker.exited()
        worker.process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
        worker.process.wait(timeout=30)
        assert worker.exited() == 3
    finally:
        worker.log_path.unlink(missing_ok=True)
