"""`benchmark_retention`: deleting most of a large table of node runs while runs go on.

In a scratch database (`benchmarks.pages.scratch_database`; the tests' own with `--in-place`),
it writes `--node-runs` node runs in light runs of `--per-run` each, one created a minute
(`large_runs.light_executions_create`), the oldest `--share` of them ended and past the line
`purge_runs` is given, plus one large kept run for the pages. Then, in turn:

1. the orchestration benchmark (`benchmark_execution`'s chain and wide DAG of no-op nodes on
   one real worker, started once for both measurements, against a bare Celery round trip:
   `orchestration`) and the pages (the large run's page and API record, the
   list of runs: `benchmark_pages`' targets), with nothing else going on;
2. `purge_runs --before LINE` started in a process of its own (the code the sweep runs), and
   the same measurements, round after round, for as long as it deletes (each figure the
   median of the rounds);
3. the disk the tables and their indexes take (`pg_total_relation_size`) before, after the
   deletion, and after a plain `VACUUM ANALYZE` (which frees the space for reuse inside the
   files; only `VACUUM FULL`, which locks the table, gives it back to the system).

It prints each orchestration ratio with and without the deletion, and the ratio between them
(the target: within 1.2×), the pages' times against their targets, the deletion's figures and
the disk."""
from __future__ import annotations

import io
import json
import os
import secrets
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.test import Client, override_settings
from django.utils import timezone

from benchmarks.execution import (
    WARMUP_NODES,
    WARMUP_PINGS,
    BenchmarkFailed,
    Worker,
    agent_document,
    database_label,
    worker_database_url,
    workflow_document,
)
from benchmarks.execution import Command as ExecutionBenchmark
from benchmarks.large_runs import large_run_create, light_executions_create, loop_workflow_create
from benchmarks.pages import TARGETS, analyse, quiet, request, scratch_database
from core.documents import import_documents
from core.status_writes import transition_all
from core.tasks import ping
from executions.models import Execution, NodeRun

ROOT = Path(__file__).resolve().parents[1]
TARGET = 1.2  # the orchestration's ratio while deleting, over its ratio without
PAGES = (("run_page", "run page", "/executions/{id}/"), ("api_detail", "API record of the run", "/api/executions/{id}"),
         ("list_page", "list page", "/executions/"), ("api_list", "API list, first page", "/api/executions"))
TABLES = ("executions_noderun", "executions_execution")


class Command(BaseCommand):
    help = ("Measure the orchestration overhead and the pages while purge_runs deletes most of a large table of "
            "node runs, against the same without it; print the ratios and the disk before and after.")

    def add_arguments(self, parser):
        parser.add_argument("--node-runs", type=int, default=1_000_000, help="node runs written (default 1,000,000)")
        parser.add_argument("--per-run", type=int, default=100, help="node runs of each light run (default 100)")
        parser.add_argument("--share", type=float, default=0.9, help="the share of them deleted (default 0.9)")
        parser.add_argument("--kept-run", type=int, default=20_000,
                            help="node runs of the large run whose pages are timed (default 20,000)")
        parser.add_argument("--chain", type=int, default=200, help="benchmark_execution --chain (default 200)")
        parser.add_argument("--wide", type=int, default=500, help="benchmark_execution --wide (default 500)")
        parser.add_argument("--repeat", type=int, default=3, help="benchmark_execution --repeat (default 3)")
        parser.add_argument("--batch", type=int, default=settings.RETENTION_BATCH,
                            help=f"purge_runs --batch (default RETENTION_BATCH, {settings.RETENTION_BATCH})")
        parser.add_argument("--pause", type=float, default=settings.RETENTION_PAUSE,
                            help=f"purge_runs --pause (default RETENTION_PAUSE, {settings.RETENTION_PAUSE:g})")
        parser.add_argument("--json", dest="as_json", action="store_true", help="print the figures as JSON")
        parser.add_argument("--in-place", action="store_true",
                            help="write into the configured database instead of a scratch one (for the tests, "
                                 "whose database is a scratch one already; only workflow bench_retention's runs "
                                 "are deleted, and its runs are left behind)")

    def handle(self, *args, node_runs, per_run, share, kept_run, chain, wide, repeat, batch, pause, as_json,
               in_place, **options):
        if node_runs < 1 or per_run < 1 or not 0 < share < 1 or kept_run < 1 or batch < 1:
            raise CommandError("--node-runs, --per-run, --kept-run and --batch must be at least 1, --share between "
                               "0 and 1")
        runs = max(1, node_runs // per_run)
        report: dict[str, Any] = {"database": database_label(), "node_runs": runs * per_run, "runs": runs,
                                  "per_run": per_run, "share": share, "batch": batch, "pause": pause, "target": TARGET}
        with nullcontext() if in_place else scratch_database(), quiet("django.request", "axes", "retention.sweep"), \
                override_settings(DEBUG=False, ALLOWED_HOSTS=["testserver"]):
            line = self.write(runs, per_run, share, kept_run, report)
            client = Client()
            client.force_login(get_user_model().objects.create_user("benchmark-viewer"))
            report["disk_before"] = disk()
            with orchestration(chain, wide) as orchestrate:
                measure = partial(orchestrate, repeat)
                report["without"] = self.measure(client, measure)
                deleting = self.purge(line, batch, pause)
                report["with"], report["rounds_while_deleting"] = self.measure_while(
                    deleting["process"], client, partial(orchestrate, 1))
                report["measured_while_deleting_s"] = time.monotonic() - deleting["started"]
            report["purge"] = self.finish(deleting)
            report["disk_after_delete"] = disk()
            analyse()  # VACUUM ANALYZE on PostgreSQL: the space freed for reuse, the statistics new
            report["disk_after_vacuum"] = disk()
        report["ratios"] = {label: report["with"]["orchestration"][label] / report["without"]["orchestration"][label]
                            for label in report["without"]["orchestration"]}
        report["missed"] = [f"{label}: {ratio:.2f}× > {TARGET}×" for label, ratio in report["ratios"].items()
                            if ratio > TARGET] + [f"{key} while deleting: {ms:.0f} ms > {TARGETS[key].max_ms:.0f} ms"
                                                  for key, ms in report["with"]["pages"].items()
                                                  if key in TARGETS and ms > (TARGETS[key].max_ms or ms)]
        self.print_report(report, as_json)

    def write(self, runs: int, per_run: int, share: float, kept_run: int, report: dict[str, Any]):
        """The light runs (the oldest `share` ended) and the large kept run; the line before
        which purge_runs deletes."""
        started = time.monotonic()
        workflow = loop_workflow_create(workflow_id="bench_retention", actor="benchmark_retention")
        ending = timezone.now() - timedelta(days=1)
        light_executions_create(workflows=[workflow], count=runs, node_runs_each=per_run, ending=ending)
        line = ending - timedelta(minutes=runs - 1) + timedelta(minutes=round(runs * share))
        # The runs to delete all ended (the light runs include some still running, kept back otherwise).
        transition_all(Execution.objects.filter(created_at__lt=line), Execution.Status.RUNNING,
                       Execution.Status.SUCCESS)
        kept = large_run_create(workflow=workflow, node_runs=kept_run, execution_id="bench_retention_kept")
        report["kept_run"] = {"execution_id": kept.execution_id, "node_runs": kept_run}
        report["to_delete"] = {"runs": Execution.objects.filter(created_at__lt=line).count(),
                               "node_runs": NodeRun.objects.filter(execution__created_at__lt=line).count()}
        analyse()
        report["written_s"] = time.monotonic() - started
        return line

    def measure(self, client: Client, orchestrate: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The orchestration's median ratios (chain, wide DAG) and the pages' median milliseconds."""
        orchestration = orchestrate()
        pages: dict[str, float] = {}
        for key, _label, path in PAGES:
            times = []
            for _ in range(3):
                response, _size, seconds = request(client, path.format(id="bench_retention_kept"), 60.0)
                if response.status_code != 200:
                    raise CommandError(f"{path}: answered {response.status_code}")
                times.append(seconds * 1000)
            pages[key] = statistics.median(times)
        return {"orchestration": {label: figure["ratio"] for label, figure in orchestration.items()},
                "per_node_ms": {label: figure["per_node_s"] * 1000 for label, figure in orchestration.items()},
                "pages": pages}

    def measure_while(self, process: subprocess.Popen, client: Client,
                      orchestrate: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], int]:
        """`measure` one round after another for as long as the deletion goes on (at least
        once), so that its whole length is measured: each figure's median over the rounds,
        and how many there were."""
        rounds = [self.measure(client, orchestrate)]
        while process.poll() is None:
            rounds.append(self.measure(client, orchestrate))
        return {part: {key: statistics.median(figures[part][key] for figures in rounds) for key in rounds[0][part]}
                for part in rounds[0]}, len(rounds)

    def purge(self, line, batch: int, pause: float) -> dict[str, Any]:
        """purge_runs started in a process of its own, on this database."""
        env = dict(os.environ, DATABASE_URL=worker_database_url(), DEBUG="0")
        process = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "purge_runs", "--before", line.isoformat(), "--workflow",
             "bench_retention", "--batch", str(batch), "--pause", str(pause), "--json"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return {"process": process, "started": time.monotonic()}

    def finish(self, deleting: dict[str, Any]) -> dict[str, Any]:
        """Wait for purge_runs to end: its report and how long it took."""
        out, err = deleting["process"].communicate()
        if deleting["process"].returncode:
            raise CommandError(f"purge_runs failed: {err[-2000:]}")
        return {**json.loads(out), "seconds": time.monotonic() - deleting["started"]}

    def print_report(self, report: dict[str, Any], as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps(report, indent=2, default=str))
            return
        write = self.stdout.write
        write(f"database: {report['database']}; {report['node_runs']:,} node runs in {report['runs']:,} runs, "
              f"{report['to_delete']['node_runs']:,} of them to delete ({report['to_delete']['runs']:,} runs), "
              f"batches of {report['batch']:,}, resting {report['pause']:g}× each; written in {report['written_s']:.0f} s")
        for label, ratio in report["ratios"].items():
            write(f"orchestration, {label}: {report['without']['orchestration'][label]:.2f}× a bare round trip "
                  f"without the deletion, {report['with']['orchestration'][label]:.2f}× while deleting → "
                  f"{ratio:.2f}× (target ≤ {TARGET}×)")
        for key, label, _path in PAGES:
            target = TARGETS.get(key)
            write(f"{label}: {report['without']['pages'][key]:.0f} ms, {report['with']['pages'][key]:.0f} ms while "
                  f"deleting" + (f" (target ≤ {target.max_ms:.0f} ms)" if target and target.max_ms else ""))
        purge = report["purge"]
        write(f"purge_runs: {purge['runs_deleted']:,} runs and {purge['node_runs']:,} node runs in "
              f"{purge['batches']:,} transactions, {purge['seconds']:.0f} s (measured while it ran: "
              f"{report['rounds_while_deleting']} rounds in {report['measured_while_deleting_s']:.0f} s); "
              f"kept back: {purge['kept']}")
        for name in ("disk_before", "disk_after_delete", "disk_after_vacuum"):
            sizes = report[name]
            write(f"{name.replace('_', ' ')}: " + (", ".join(f"{table} {size / 2**20:,.0f} MB" for table, size
                                                             in sizes.items()) or "not measured (not PostgreSQL)"))
        write("missed: " + ("; ".join(report["missed"]) or "none"))


@contextmanager
def orchestration(chain: int, wide: int, timeout: float = 60.0) -> Iterator[Callable[[int], dict[str, Any]]]:
    """benchmark_execution's chain and wide DAG of no-op nodes on one real worker, started
    once for both measurements (a worker's start is most of a small benchmark's time): yields
    `measure(repeat)`, which runs each shape `repeat` times, each run right after a bare
    Celery round trip's baseline of its own, and gives each shape's median ratio and
    per-node time. Everything it made is deleted afterwards."""
    bench = ExecutionBenchmark(stdout=io.StringIO(), stderr=io.StringIO())
    token = secrets.token_hex(4)
    queue, agent_id = f"switchyard-bench-{token}", f"bench_noop_{token}"
    workflows = {name: f"bench_{name}_{token}" for name in ("warmup", "chain", "wide")}
    env = dict(os.environ, DJANGO_SETTINGS_MODULE=os.environ.get("DJANGO_SETTINGS_MODULE", "project.settings"),
               DEBUG="0", CELERY_QUEUE=queue, DATABASE_URL=worker_database_url(), REDIS_URL=settings.REDIS_URL,
               CELERY_BROKER_URL=settings.CELERY_BROKER_URL, CELERY_RESULT_BACKEND=settings.CELERY_RESULT_BACKEND)
    worker = Worker(current_app, queue, env)
    previous_queue = settings.CELERY_TASK_DEFAULT_QUEUE

    def measure(repeat: int) -> dict[str, Any]:
        samples: dict[str, list[dict[str, float]]] = {"chain": [], "wide": []}
        for _ in range(repeat):
            for label, nodes in (("chain", chain), ("wide", wide)):
                baseline = bench.round_trips(ping, queue, chain, timeout)
                per_node = bench.run_workflow(workflows[label], nodes, timeout, worker)["wall_s"] / nodes
                samples[label].append({"per_node_s": per_node, "ratio": per_node / baseline})
        return {label: {key: statistics.median(sample[key] for sample in runs) for key in ("per_node_s", "ratio")}
                for label, runs in samples.items()}

    try:
        import_documents([agent_document(agent_id),
                          workflow_document(workflows["warmup"], agent_id, topology="seq", nodes=WARMUP_NODES),
                          workflow_document(workflows["chain"], agent_id, topology="seq", nodes=chain),
                          workflow_document(workflows["wide"], agent_id, topology="dag", nodes=wide)],
                         actor="benchmark_retention")
        worker.start()
        settings.CELERY_TASK_DEFAULT_QUEUE = queue  # what dispatch_after_commit sends node runs to
        bench.round_trips(ping, queue, WARMUP_PINGS, timeout)  # imports, connections, the worker's caches
        bench.run_workflow(workflows["warmup"], WARMUP_NODES, timeout, worker)
        yield measure
    except BenchmarkFailed as failure:
        raise CommandError(f"the orchestration benchmark: {failure}") from None
    finally:
        settings.CELERY_TASK_DEFAULT_QUEUE = previous_queue
        worker.stop()
        bench.clean_up(agent_id, list(workflows.values()))


def disk() -> dict[str, int]:
    """Bytes each table takes with its indexes and TOAST (PostgreSQL; {} elsewhere)."""
    if connection.vendor != "postgresql":
        return {}
    with connection.cursor() as cursor:
        return {table: _size(cursor, table) for table in TABLES}


def _size(cursor, table: str) -> int:
    cursor.execute("SELECT pg_total_relation_size(%s::regclass)", [table])
    return cursor.fetchone()[0]
