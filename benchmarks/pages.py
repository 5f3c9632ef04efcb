"""Benchmark of the pages and API answers that show one run, and the list of runs, at scale.

A run of 100,000 node runs should open in under a second. This command writes
runs of 1,000, 20,000 and 100,000 node runs (`benchmarks/large_runs.py`) and
100,000 light runs for the list into a scratch database, then requests each answer the
inspection of a run needs, as a signed-in viewer through Django's test Client, with DEBUG
off, and prints for each:

- the server's time: the median of a few requests (after one that warms the caches), so
  it is Django's and the database's work without the network or the browser;
- the queries the answer made (the most of the timed requests): a number that grows with
  the run's size is the first sign of a query per row;
- the bytes of the answer (a streamed one is read to its end): what the browser downloads.

A re-run of each run, from its last step, is measured last (as an author, so that the runs
it adds change no other answer): the new run's copies of the past run's node runs are made
by the database, and what the web process holds for it at once is reported as well (the peak
of Python's allocations during the request that warms up, which is not timed). A re-run that
reuses more than RERUN_COPY_INLINE_MAX node runs is answered before its copies are made: the
last one's copies are then made here as a worker makes them, and timed ("re-run's copies").

The answers that have a target are marked "ok" or "MISSED" (TARGETS, checked at
every size measured: a target for 100,000 node runs holds for fewer). The command exits 0
either way: the figures are for a person to judge.

The scratch database is made the way the test runner makes its own (beside the configured
database on PostgreSQL, a temporary file on SQLite), migrated, analysed once the rows are in
(as PostgreSQL's autovacuum soon would be), and destroyed at the end, also after an error,
Ctrl-C or SIGTERM: the configured database is never written. An answer that runs past
`--timeout` is stopped (a statement timeout on PostgreSQL, a progress handler on SQLite and
an alarm for the Python side) and reported as missed, so that one slow answer does not hold
up the others.
"""
from __future__ import annotations

import json
import logging
import secrets
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from celery import current_app
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import Error, connection
from django.http import StreamingHttpResponse
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from benchmarks.execution import database_label
from benchmarks.large_runs import LOOP, large_run_create, light_executions_create, loop_workflow_create
from core.roles import AUTHOR
from engine.errors import EngineError
from executions.models import Execution
from executions.services import rerun_copy


@dataclass(frozen=True)
class Target:
    """The target of one answer: at most this many milliseconds, queries and bytes."""

    max_ms: float | None = None
    max_queries: int | None = None
    max_bytes: int | None = None

    def misses(self, figures: dict[str, Any]) -> list[str]:
        """What the figures miss of the target, in words; [] when every figure is within it."""
        if figures["error"]:
            return [figures["error"]]
        missed = []
        for limit, key, unit in ((self.max_ms, "ms", "ms"), (self.max_queries, "queries", "queries"),
                                 (self.max_bytes, "bytes", "bytes")):
            if limit is not None and figures[key] > limit:
                missed.append(f"{figures[key]:,.0f} {unit} > {limit:,.0f}")
        return missed


# The pages-at-scale targets, by answer (keys of RUN_ANSWERS): the run page and the API's record of a
# run in at most a second, 20 queries (and 1 MB for the API), one page of node runs in 200 ms.
TARGETS = {
    "run_page": Target(max_ms=1000, max_queries=20),
    "api_detail": Target(max_ms=1000, max_queries=20, max_bytes=1_000_000),
    "node_runs_first": Target(max_ms=200),
    "node_runs_last": Target(max_ms=200),
    "node_runs_of_node": Target(max_ms=200),
    # A re-run of any of those runs is answered within the bounds of its page.
    "rerun": Target(max_ms=1000, max_queries=20),
}
# What is requested of each run: key, label, and the path (execution_id, the run's size, a
# node and the pk of one of its node runs filled in).
RUN_ANSWERS = (
    ("run_page", "run page", "/executions/{id}/"),
    ("api_detail", "API record of the run", "/api/executions/{id}"),
    ("node_runs_first", "API node runs, first page", "/api/executions/{id}/node-runs?limit=50"),
    ("node_runs_last", "API node runs, last page", "/api/executions/{id}/node-runs?limit=50&offset={last}"),
    ("node_runs_of_node", "API node runs of one node", "/api/executions/{id}/node-runs?node={node}&limit=20"),
    ("node_run", "API one node run", "/api/executions/{id}/node-runs/{pk}"),
    ("timeline", "API timeline", "/api/executions/{id}/timeline"),
)
# What is requested of the list of runs (a workflow and a status filled in).
LIST_ANSWERS = (
    ("list_page", "list page", "/executions/"),
    ("list_page_filtered", "list page, filtered", "/executions/?workflow={workflow}&status={status}"),
    ("api_list", "API list, first page", "/api/executions"),
    ("api_list_filtered", "API list, filtered", "/api/executions?workflow={workflow}&status={status}"),
)
# What is asked of each run as an author, last: key, label, path, and the body POSTed (the node
# of the run's last step filled in).
WRITE_ANSWERS = (
    ("rerun", "API re-run from the last step", "/api/executions/{id}/rerun", {"from_node": "{last_node}"}),
)
# Answers that may not exist yet on the branch measured: a 404 is reported, not missed.
OPTIONAL = {"timeline"}
DEFAULT_SIZES = "1000,20000,100000"
DEFAULT_EXECUTIONS = 100_000
REPEAT = 5  # timed requests per answer, at most
REPEAT_BUDGET_S = 15.0  # and no more once they took this long together (at least one)
TIMEOUT_S = 60.0


class AnswerTimedOut(EngineError):
    """An answer ran past --timeout: the alarm stops it wherever Python is."""

    code = "ANSWER_TIMED_OUT"


class Command(BaseCommand):
    help = ("Write runs of many node runs and many light runs into a scratch database, then measure the run page, "
            "the API's answers about a run and the list of runs: server time, queries, bytes; print which of "
            "of the pages-at-scale targets are met.")

    def add_arguments(self, parser):
        parser.add_argument("--sizes", default=DEFAULT_SIZES,
                            help=f"node runs of each measured run, comma-separated (default {DEFAULT_SIZES})")
        parser.add_argument("--executions", type=int, default=DEFAULT_EXECUTIONS,
                            help=f"light runs for the list (default {DEFAULT_EXECUTIONS:,}); 0 skips the list")
        parser.add_argument("--repeat", type=int, default=REPEAT,
                            help=f"timed requests per answer, whose median is reported (default {REPEAT})")
        parser.add_argument("--timeout", type=float, default=TIMEOUT_S,
                            help=f"seconds an answer may take before it is stopped and missed (default {TIMEOUT_S:g})")
        parser.add_argument("--json", dest="as_json", action="store_true", help="print the figures as JSON")

    def handle(self, *args, sizes, executions, repeat, timeout, as_json, **options):
        try:
            node_run_counts = [int(size.replace("_", "")) for size in sizes.split(",") if size.strip()]
        except ValueError:
            raise CommandError(f"--sizes takes whole numbers separated by commas, not {sizes!r}") from None
        if not node_run_counts or min(node_run_counts) < 1 or executions < 0 or repeat < 1 or timeout <= 0:
            raise CommandError("--sizes need at least one node run each; --executions cannot be negative; "
                               "--repeat and --timeout must be positive")

        report = {"database": database_label(), "sizes": node_run_counts, "executions": executions,
                  "repeat": repeat, "timeout_s": timeout,
                  "targets": {key: asdict(target) for key, target in TARGETS.items()}, "answers": []}
        with stopped_by_sigterm(), scratch_database(), quiet("django.request", "axes"), private_queue(), \
                override_settings(DEBUG=False, ALLOWED_HOSTS=["testserver"]):
            client = Client()
            client.force_login(get_user_model().objects.create_user("benchmark-viewer"))  # a viewer: no role
            author_user = get_user_model().objects.create_user("benchmark-author")  # re-runs need an author
            author_user.groups.add(Group.objects.get_or_create(name=AUTHOR)[0])
            author = Client()
            author.force_login(author_user)
            workflow = loop_workflow_create(workflow_id="bench_loop", actor="benchmark_pages")
            runs = []
            for count in node_run_counts:
                with self.progress(f"writing a run of {count:,} node runs"):
                    runs.append(large_run_create(workflow=workflow, node_runs=count,
                                                 execution_id=f"bench_loop_{count}"))
            if executions:
                other = loop_workflow_create(workflow_id="bench_other", actor="benchmark_pages")
                with self.progress(f"writing {executions:,} light runs for the list"):
                    # Older than the large runs, which the list's first page then shows with their counts.
                    light_executions_create(workflows=[workflow, other], count=executions,
                                            ending=min(run.created_at for run in runs) - timedelta(minutes=1))
            with self.progress("analysing the tables"):
                analyse()

            for execution in runs:
                size = execution.node_runs.count()
                values = {"id": execution.execution_id, "last": max(0, size - 50), "node": LOOP[1],
                          "pk": execution.node_runs.order_by("sequence").values_list("pk", flat=True)[size // 2]}
                for key, label, path in RUN_ANSWERS:
                    with self.progress(f"{label} ({size:,} node runs)"):
                        report["answers"].append(self.answer(client, key, label, path.format(**values), size,
                                                             "node runs", repeat, timeout))
            if executions:
                values = {"workflow": "bench_other", "status": Execution.Status.FAILED}
                for key, label, path in LIST_ANSWERS:
                    with self.progress(label):
                        report["answers"].append(self.answer(client, key, label, path.format(**values), executions,
                                                             "executions", repeat, timeout))
            for execution in runs:
                size = execution.node_runs.count()
                values = {"id": execution.execution_id,
                          "last_node": execution.node_runs.order_by("-sequence", "-id").values_list("node_id",
                                                                                                   flat=True)[0]}
                for key, label, path, body in WRITE_ANSWERS:
                    with self.progress(f"{label} ({size:,} node runs)"):
                        report["answers"].append(self.answer(
                            author, key, label, path.format(**values), size, "node runs", repeat, timeout,
                            body={name: value.format(**values) for name, value in body.items()}))
                rerun = Execution.objects.filter(rerun_of=execution).order_by("-created_at", "-id").first()
                if rerun is not None and rerun.copy_progress:
                    with self.progress(f"the last re-run's copies, as a worker makes them ({size:,} node runs)"):
                        report["answers"].append(self.copy(rerun, size))
        report["missed"] = [f"{a['label']} at {a['size']:,} {a['of']}: {'; '.join(a['missed'])}"
                            for a in report["answers"] if a["missed"]]
        self.print_report(report, as_json)

    # ---------------------------------------------------------------- measuring

    def answer(self, client: Client, key: str, label: str, url: str, size: int, of: str, repeat: int,
               timeout: float, body: dict | None = None) -> dict[str, Any]:
        """One answer's figures, and what it misses of its target (if it has one). With a
        `body`, it is POSTed, and the peak of Python's allocations while the request that
        warms up is answered is reported too (`peak_mb`)."""
        figures: dict[str, Any] = {"key": key, "label": label, "url": url, "size": size, "of": of, "http_status": None, "ms": None,
                   "samples": 0, "queries": None, "bytes": None, "error": None, "note": None, "missed": [],
                   "peak_mb": None}
        answered = 201 if body is not None else 200
        try:
            if body is not None:
                tracemalloc.start()
                try:
                    request(client, url, timeout, body=body)  # warms the caches: not counted
                    figures["peak_mb"] = tracemalloc.get_traced_memory()[1] / 1e6
                finally:
                    tracemalloc.stop()
            else:
                request(client, url, timeout)  # warms the caches: not counted
            times: list[float] = []
            while len(times) < repeat and sum(times) < REPEAT_BUDGET_S:
                with CaptureQueriesContext(connection) as captured:
                    response, size_in_bytes, seconds = request(client, url, timeout, body=body)
                times.append(seconds)
                figures.update(http_status=response.status_code, queries=max(len(captured), figures["queries"] or 0),
                               bytes=size_in_bytes)
                if response.status_code != answered:
                    break
            if response.status_code == 404 and key in OPTIONAL:
                figures.update(note="skipped: not on this branch (404)", queries=None, bytes=None)
                return figures
            if response.status_code != answered:
                figures["error"] = f"answered {response.status_code}"
            else:
                figures.update(ms=statistics.median(times) * 1000, samples=len(times))
        except AnswerTimedOut:
            connection.close()  # whatever it was doing in the database is abandoned
            figures["error"] = f"stopped after {timeout:g} s"
        except Exception as error:  # noqa: BLE001 - an answer that fails is a finding, not the end
            connection.close()
            figures["error"] = f"failed: {error!r}"[:300]
        if key in TARGETS:
            figures["missed"] = TARGETS[key].misses(figures)
        return figures

    def copy(self, rerun: Execution, size: int) -> dict[str, Any]:
        """The figures of a re-run's copies made as a worker makes them (`rerun_copy`, in this
        process): after the answer, so no target; its time is how long the run stays pending."""
        progress = rerun.copy_progress
        assert progress is not None, "a large re-run answers before its copies are made"
        figures: dict[str, Any] = {"key": "rerun_copy", "label": "re-run's copies, on a worker", "url": "", "size": size,
                   "of": "node runs", "http_status": None, "ms": None, "samples": 1, "queries": None, "bytes": None,
                   "error": None, "note": f"{progress['of']:,} copies", "missed": [], "peak_mb": None}
        try:
            started = time.perf_counter()
            with CaptureQueriesContext(connection) as captured:
                rerun_copy(execution_pk=rerun.pk)
            figures.update(ms=(time.perf_counter() - started) * 1000, queries=len(captured))
        except Exception as error:  # noqa: BLE001 - reported, as an answer's failure is
            connection.close()
            figures["error"] = f"failed: {error!r}"[:300]
        return figures

    @contextmanager
    def progress(self, what: str) -> Iterator[None]:
        """Say on stderr what is being done and how long it took: writing 100,000 node runs
        takes a while."""
        self.stderr.write(f"{what} …", ending="")
        self.stderr.flush()
        started = time.perf_counter()
        try:
            yield
        except BaseException:
            self.stderr.write(" stopped")
            raise
        self.stderr.write(f" {time.perf_counter() - started:.1f} s")

    # ---------------------------------------------------------------- reporting

    def print_report(self, report: dict[str, Any], as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps(report, indent=2))
            return
        self.stdout.write(f"database: {report['database']}; ms: the median server time of the timed requests (up to "
                          f"{report['repeat']} each) through Django's test Client, signed in as a viewer, DEBUG off")
        rows = [("answer", "size", "ms", "queries", "bytes", "target")]
        for a in report["answers"]:
            if a["missed"]:
                verdict = "MISSED: " + "; ".join(a["missed"])
            elif a["note"] or a["error"]:
                verdict = a["note"] or a["error"]
            else:
                verdict = "ok" if a["key"] in TARGETS else ""
            if a.get("peak_mb") is not None:
                verdict += f" (peak {a['peak_mb']:,.1f} MB of Python objects)"
            rows.append((a["label"], f"{a['size']:,} {a['of']}", "" if a["ms"] is None else f"{a['ms']:.1f}",
                         "" if a["queries"] is None else str(a["queries"]),
                         "" if a["bytes"] is None else f"{a['bytes']:,}", verdict))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
        for row in rows:
            # Not strict: the last cell (the verdict) has no width, and is written unpadded.
            cells = [cell.rjust(width) if 0 < i < len(widths) else cell.ljust(width)
                     for i, (cell, width) in enumerate(zip(row, widths, strict=False))]
            self.stdout.write("  ".join([*cells, row[-1]]).rstrip())
        if report["missed"]:
            self.stdout.write(f"pages-at-scale targets: MISSED {len(report['missed'])}:")
            for line in report["missed"]:
                self.stdout.write(f"  MISSED {line}")
        else:
            self.stdout.write("pages-at-scale targets: all met")


def request(client: Client, url: str, timeout: float, body: dict | None = None) -> tuple[Any, int, float]:
    """GET `url` (POST `body` as JSON, when given): the response, its size in bytes (a
    streamed answer read to its end) and the seconds it took; AnswerTimedOut once it has
    taken `timeout` seconds."""
    started = time.perf_counter()
    try:
        with time_limit(timeout):
            response = (client.get(url) if body is None
                        else client.post(url, data=json.dumps(body), content_type="application/json"))
            # A streamed answer (response.streaming) is a StreamingHttpResponse: read to its end.
            size = (sum(len(chunk) for chunk in response.streaming_content)
                    if isinstance(response, StreamingHttpResponse) else len(response.content))
    except Exception as error:
        if isinstance(error, AnswerTimedOut) or time.perf_counter() - started < timeout:
            raise
        raise AnswerTimedOut(f"no answer within {timeout:g} s") from error  # the database's limit stopped it
    return response, size, time.perf_counter() - started


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Stop what runs inside after `seconds`: the database's side with a statement timeout
    (PostgreSQL; the connection's own is put back afterwards) or a progress handler
    (SQLite), Python's with an alarm that rings again each second until it is heard (a broad
    `except` might swallow the first)."""
    deadline = time.monotonic() + seconds
    connection.ensure_connection()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('statement_timeout'), "
                           "set_config('statement_timeout', %s, false)", [str(int(seconds * 1000))])
            previous_timeout = cursor.fetchone()[0]
    elif connection.vendor == "sqlite":
        connection.connection.set_progress_handler(lambda: time.monotonic() > deadline, 10_000)
    alarm = threading.current_thread() is threading.main_thread()
    if alarm:
        def ring(signum, frame):
            raise AnswerTimedOut(f"no answer within {seconds:g} s")

        previous_handler = signal.signal(signal.SIGALRM, ring)
        signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous_handler)
        if connection.vendor == "postgresql":
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT set_config('statement_timeout', %s, false)", [previous_timeout])
            except Error:  # left unusable by what the alarm stopped: the next query reconnects
                connection.close()
        elif connection.vendor == "sqlite" and connection.connection is not None:
            connection.connection.set_progress_handler(None, 0)


def analyse() -> None:
    """Give the planner the tables' statistics (and PostgreSQL its visibility map), as a
    database that has been running a while has them."""
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")


@contextmanager
def scratch_database() -> Iterator[None]:
    """Point the default connection at a new, migrated database for the time inside, and
    destroy it afterwards, whatever happens: on PostgreSQL one beside the configured
    database, named after it; on SQLite a file in a temporary folder."""
    config = connection.settings_dict
    test_settings = dict(config.get("TEST") or {})
    configured_name = config["NAME"]
    folder = None
    if connection.vendor == "sqlite":
        folder = Path(tempfile.mkdtemp(prefix="switchyard-benchmark-pages-"))
        scratch_name = str(folder / "scratch.sqlite3")
    else:
        scratch_name = f"{configured_name}_pages_{secrets.token_hex(4)}"[-63:]  # PostgreSQL's limit on names
    config["TEST"] = {**test_settings, "NAME": scratch_name}
    try:
        connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False, keepdb=False)
        yield
    finally:
        if config["NAME"] != configured_name:  # created (perhaps only in part): destroyed
            connection.creation.destroy_test_db(configured_name, verbosity=0, keepdb=False)
        config["TEST"] = test_settings
        if folder:
            shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def private_queue() -> Iterator[None]:
    """Send what the answers send to workers (a re-run's first node) to a queue of its own,
    which no worker reads, and delete it afterwards: the node runs named are the scratch
    database's, not the configured one's."""
    queue = f"switchyard-benchmark-pages-{secrets.token_hex(4)}"
    try:
        with override_settings(CELERY_TASK_DEFAULT_QUEUE=queue):
            yield
    finally:
        try:
            with current_app.connection_for_write() as broker:
                broker.default_channel.queue_delete(queue)
        except Exception:  # noqa: BLE001 - best effort: a broker away has nothing to delete
            pass


@contextmanager
def quiet(*loggers: str) -> Iterator[None]:
    """Keep these loggers' warnings off stderr while inside: a 404 of an answer not on the
    branch, the sign-in of the benchmark's viewer. Errors of the answers are reported."""
    levels = {name: logging.getLogger(name).level for name in loggers}
    for name in loggers:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


@contextmanager
def stopped_by_sigterm() -> Iterator[None]:
    """Turn SIGTERM into SystemExit while inside, so that `finally` blocks (the scratch
    database's removal) run as they do on Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
