"""Benchmark of experiments: what an item costs over a run started through the API, and the
experiment's answers at 10,000 items.

1. Overhead per item. On real workers (`--workers` solo-pool Celery workers on a private
   queue), a one-node workflow whose builtin agent runs the `noop` skill is run `--items`
   times two ways, through the API as a signed-in author (Django's test Client):
   - one by one: `POST /api/executions` once per item, in a loop, until every run ended;
   - as an experiment: `POST /api/experiments` over a dataset of as many items (with a
     regex scorer, at a concurrency of EXPERIMENT_MAX_RUNNING_ITEMS), until it ended, every
     item scored.
   The per-item time of each is its wall time over the items; their ratio (the experiment's
   over the runs') is what an item costs more as part of an experiment: its scoring task,
   its advance under the experiment's lock, against a run's evaluation (RATIO_TARGET).
2. Answers at scale. An experiment of `--page-items` items, written with bulk_create (not
   run: ended items with scores, output and node records), its aggregates refreshed once
   (timed), then the server time of its detail API, the first page of its items API and its
   page when the project has one (`reverse` finds it; else said so), then a second such
   experiment compared with it through the comparison API and page: the median of a few
   requests after one that warms up, as a viewer, DEBUG off (ANSWER_TARGET_MS each, and
   COMPARE_TARGET_MS for a comparison).

Everything happens in a scratch database (benchmarks.pages.scratch_database), destroyed at
the end; the configured database is never written. It prints JSON: the figures, the ratio
and which targets were missed; it exits 0 either way (the figures are for a person).
"""
from __future__ import annotations

import json
import os
import secrets
import statistics
import time
from typing import Any

from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from benchmarks.execution import (
    BenchmarkFailed,
    Worker,
    agent_document,
    database_label,
    worker_database_url,
    workflow_document,
)
from benchmarks.pages import analyse, quiet, request, scratch_database, stopped_by_sigterm
from core.documents import import_documents
from core.roles import AUTHOR
from executions.models import Evaluation, Execution
from experiments.dataset_services import dataset_import
from experiments.experiment_services import status_counts
from experiments.models import DatasetItem, DatasetVersion, Experiment, ExperimentItem
from experiments.summaries import summary_refresh
from workflows.models import Workflow

RATIO_TARGET = 1.2  # an experiment's time per item over a run's started through the API
ANSWER_TARGET_MS = 1000.0  # server time of each answer about an experiment of 10,000 items
COMPARE_TARGET_MS = 2000.0  # server time of comparing two experiments of 10,000 items
ITEMS = 1000
PAGE_ITEMS = 10_000
WORKERS = 2
REPEAT = 5
TIMEOUT_S = 1800.0
POLL_SECONDS = 0.05
BATCH = 1000
SCORERS = [{"type": "regex", "pattern": ".", "name": "answered"}]
# Names the experiment's page may have (built elsewhere): the first `reverse` finds is measured.
PAGE_ROUTES = ("experiments:detail", "experiments:experiment", "experiment_detail", "experiments:experiment_detail")
ENDED = (Execution.Status.SUCCESS, Execution.Status.FAILED, Execution.Status.CANCELLED)


class Command(BaseCommand):
    help = ("Measure an experiment's time per item against runs started one by one through the API, on real "
            "workers, and the server time of an experiment's answers at 10,000 items; print JSON.")

    def add_arguments(self, parser):
        parser.add_argument("--items", type=int, default=ITEMS,
                            help=f"items of the experiment, and runs started through the API (default {ITEMS:,})")
        parser.add_argument("--page-items", type=int, default=PAGE_ITEMS,
                            help=f"items of the experiment whose answers are timed (default {PAGE_ITEMS:,}; 0 skips)")
        parser.add_argument("--workers", type=int, default=WORKERS, help=f"solo-pool workers (default {WORKERS})")
        parser.add_argument("--repeat", type=int, default=REPEAT,
                            help=f"timed requests per answer, whose median is reported (default {REPEAT})")
        parser.add_argument("--timeout", type=float, default=TIMEOUT_S,
                            help=f"seconds each side of the comparison may take (default {TIMEOUT_S:g})")

    def handle(self, *args, items, page_items, workers, repeat, timeout, **options):
        if items < 1 or page_items < 0 or workers < 1 or repeat < 1 or timeout <= 0:
            raise CommandError("--items and --workers must be at least 1, --page-items 0 or more, --repeat and "
                               "--timeout positive")
        report: dict[str, Any] = {"database": database_label(), "overhead": None, "answers": None, "missed": [],
                                  "error": None}
        with stopped_by_sigterm(), scratch_database(), quiet("django.request", "axes"), \
                override_settings(DEBUG=False, ALLOWED_HOSTS=["testserver"]):
            author, viewer = clients()
            try:
                report["overhead"] = self.overhead(author, items, workers, timeout)
            except BenchmarkFailed as failed:
                report["error"] = str(failed)
            if page_items:
                report["answers"] = self.answers(viewer, page_items, repeat)
        overhead = report["overhead"]
        if overhead and overhead["ratio"] > RATIO_TARGET:
            report["missed"].append(f"an experiment's item costs {overhead['ratio']:.2f}× a run's (target ≤ "
                                    f"{RATIO_TARGET:g}×)")
        for answer in (report["answers"] or {}).get("timed", []):
            if answer["ms"] is None or answer["ms"] > answer["target_ms"]:
                took = answer["error"] or f"{answer['ms']:.0f} ms"
                report["missed"].append(f"{answer['label']}: {took} (target ≤ {answer['target_ms']:g} ms)")
        self.stdout.write(json.dumps(report, indent=2))

    # ------------------------------------------------------------ 1. overhead per item

    def overhead(self, author: Client, items: int, count: int, timeout: float) -> dict:
        """Runs one by one through the API, then an experiment of as many items, on the same workers."""
        token = secrets.token_hex(4)
        agent_id, workflow_id, queue = f"bench_noop_{token}", f"bench_item_{token}", f"switchyard-bench-{token}"
        import_documents([agent_document(agent_id), workflow_document(workflow_id, agent_id, topology="seq", nodes=1)],
                         actor="benchmark_experiments")
        lines = "\n".join(json.dumps({"id": f"i{n}", "input": {"n": n}}) for n in range(items))
        dataset_import(name=f"bench_items_{token}", data=lines.encode(), fmt="jsonl")
        concurrency = min(settings.EXPERIMENT_MAX_RUNNING_ITEMS, items)
        env = dict(os.environ, DJANGO_SETTINGS_MODULE=os.environ.get("DJANGO_SETTINGS_MODULE", "project.settings"),
                   DEBUG="0", CELERY_QUEUE=queue, DATABASE_URL=worker_database_url(), REDIS_URL=settings.REDIS_URL,
                   CELERY_BROKER_URL=settings.CELERY_BROKER_URL, CELERY_RESULT_BACKEND=settings.CELERY_RESULT_BACKEND,
                   EXPERIMENT_MAX_RUNNING_ITEMS=str(settings.EXPERIMENT_MAX_RUNNING_ITEMS))
        workers = [Worker(current_app, queue, {**env}) for _ in range(count)]
        for index, worker in enumerate(workers):  # distinct names on the same queue
            worker.hostname = f"bench-{token}-{index}@switchyard"
        with override_settings(CELERY_TASK_DEFAULT_QUEUE=queue):
            try:
                for worker in workers:
                    worker.start()
                self.runs_via_api(author, workflow_id, 3, timeout, workers)  # warm up: imports, connections, caches
                runs = self.runs_via_api(author, workflow_id, items, timeout, workers)
                experiment = self.experiment_via_api(author, workflow_id, f"bench_items_{token}", concurrency,
                                                     timeout, workers)
            finally:
                for worker in workers:
                    worker.stop()
        per_run, per_item = runs["wall_s"] / items, experiment["wall_s"] / items
        return {"items": items, "workers": count, "concurrency": concurrency, "runs": runs,
                "experiment": experiment, "per_run_s": per_run, "per_item_s": per_item,
                "ratio": per_item / per_run, "target": RATIO_TARGET}

    def runs_via_api(self, author: Client, workflow_id: str, items: int, timeout: float,
                     workers: list[Worker]) -> dict:
        """`items` runs started one after another with POST /api/executions; the wall time until
        every one ended, and (not in it) until the workers had evaluated them all."""
        started = time.perf_counter()
        ids = []
        for n in range(items):
            response = author.post("/api/executions", data=json.dumps({"workflow_id": workflow_id, "input": {"n": n}}),
                                   content_type="application/json")
            if response.status_code != 201:
                raise BenchmarkFailed(f"POST /api/executions answered {response.status_code}: {response.content[:300]!r}")
            ids.append(response.json()["execution_id"])
        posted = time.perf_counter() - started
        runs = Execution.objects.filter(execution_id__in=ids)
        wait(lambda: runs.filter(status__in=ENDED).count() == items, started + timeout, "the runs to end", workers)
        wall = time.perf_counter() - started
        if (failed := runs.exclude(status=Execution.Status.SUCCESS).count()):
            raise BenchmarkFailed(f"{failed} of the {items} runs started through the API did not succeed")
        evaluated = settled(Evaluation.objects.filter(execution__in=runs, target_type="execution"), items,
                            started + timeout)
        return {"wall_s": wall, "posted_s": posted, "evaluated_s": time.perf_counter() - started,
                "evaluations": evaluated}

    def experiment_via_api(self, author: Client, workflow_id: str, dataset: str, concurrency: int, timeout: float,
                           workers: list[Worker]) -> dict:
        """An experiment over the dataset, created and started with POST /api/experiments;
        the wall time until it ended, its items scored."""
        started = time.perf_counter()
        response = author.post("/api/experiments", content_type="application/json", data=json.dumps(
            {"workflow_id": workflow_id, "dataset": dataset, "concurrency": concurrency, "scorers": SCORERS}))
        if response.status_code != 201:
            raise BenchmarkFailed(f"POST /api/experiments answered {response.status_code}: {response.content[:300]!r}")
        created = time.perf_counter() - started
        experiment = Experiment.objects.get(experiment_id=response.json()["experiment_id"])
        rows = Experiment.objects.filter(pk=experiment.pk)
        wait(lambda: rows.filter(status__in=(Experiment.Status.SUCCESS, Experiment.Status.CANCELLED)).exists(),
             started + timeout, "the experiment to end", workers)
        wall = time.perf_counter() - started
        counts = status_counts(experiment)
        if counts["success"] != sum(counts.values()):
            raise BenchmarkFailed(f"the experiment's items ended {counts}, not every one a success")
        return {"experiment_id": experiment.experiment_id, "wall_s": wall, "created_s": created}

    # ------------------------------------------------------------ 2. answers at scale

    def answers(self, viewer: Client, items: int, repeat: int) -> dict:
        experiment = experiment_written(items)
        started = time.perf_counter()
        summary_refresh(experiment.pk, force=True)
        refreshed = time.perf_counter() - started
        other = experiment_written(items, version=experiment.dataset_version, shift=1)
        summary_refresh(other.pk, force=True)
        analyse()
        urls = [("detail API", f"/api/experiments/{experiment.experiment_id}", ANSWER_TARGET_MS),
                ("items API, first page", f"/api/experiments/{experiment.experiment_id}/items", ANSWER_TARGET_MS)]
        page = page_url(experiment.experiment_id)
        if page:
            urls.append(("experiment page", page, ANSWER_TARGET_MS))
        pair = f"ids={experiment.experiment_id},{other.experiment_id}"
        urls += [("comparison API, two experiments", f"/api/experiments/compare?{pair}", COMPARE_TARGET_MS),
                 ("comparison page, two experiments", f"{reverse('experiment_compare:page')}?{pair}",
                  COMPARE_TARGET_MS)]
        timed = [timed_answer(viewer, label, url, repeat, target) for label, url, target in urls]
        return {"items": items, "summary_refresh_s": refreshed, "timed": timed,
                "page": None if page else f"not measured: no route of {', '.join(PAGE_ROUTES)} on this branch",
                "target_ms": ANSWER_TARGET_MS}


def clients() -> tuple[Client, Client]:
    """An author (who may start runs and experiments) and a viewer, signed in."""
    users = get_user_model().objects
    author_user = users.create_user("benchmark-author")
    author_user.groups.add(Group.objects.get_or_create(name=AUTHOR)[0])
    author, viewer = Client(), Client()
    author.force_login(author_user)
    viewer.force_login(users.create_user("benchmark-viewer"))
    return author, viewer


def wait(done, deadline: float, what: str, workers: list[Worker]) -> None:
    while not done():
        exited = [worker.exited() for worker in workers if worker.exited() is not None]
        if exited or time.perf_counter() > deadline:
            why = f"a worker exited with code {exited[0]}" if exited else "the time ran out"
            raise BenchmarkFailed(f"waiting for {what}: {why}\n{workers[0].log_tail()}")
        time.sleep(POLL_SECONDS)


def settled(rows, expected: int, deadline: float, quiet_s: float = 5.0) -> int:
    """How many `rows` there are once they number `expected`, or once none was added for
    `quiet_s` (what the workers had queued is done: a missing one is the executions' sweep's
    to send again, which does not run here), so that the next side does not queue behind."""
    count, since = rows.count(), time.perf_counter()
    while count < expected and time.perf_counter() - since < quiet_s and time.perf_counter() < deadline:
        time.sleep(POLL_SECONDS * 4)
        now = rows.count()
        if now != count:
            count, since = now, time.perf_counter()
    return count


def experiment_written(items: int, *, version: DatasetVersion | None = None, shift: int = 0) -> Experiment:
    """An ended experiment of `items` items over a dataset version of as many (`version`, or
    one written first), written with bulk_create a batch at a time: each item with a run's
    figures, output and scores; `shift` moves its scores and outputs from another's."""
    agent_id, workflow_id = "bench_page_noop", "bench_page"
    if version is None:
        import_documents([agent_document(agent_id), workflow_document(workflow_id, agent_id, topology="seq", nodes=1)],
                         actor="benchmark_experiments")
        dataset = dataset_import(name="bench_page_items", data=b'{"id": "seed", "input": {}}', fmt="jsonl").dataset
        version = DatasetVersion.objects.create(dataset=dataset, number=2, change=DatasetVersion.Change.APPEND,
                                                item_count=items)
        for first in range(0, items, BATCH):
            DatasetItem.objects.bulk_create([DatasetItem(
                version=version, position=n, item_id=f"item-{n:05d}", input={"question": f"question {n}"},
                has_expected=True, expected=f"answer {n}", metadata={"group": f"g{n % 7}"},
                search_text=f"item-{n:05d} question {n}") for n in range(first, min(first + BATCH, items))])
    workflow = Workflow.objects.get(workflow_id=workflow_id)
    now = timezone.now()
    experiment = Experiment.objects.create(
        experiment_id=f"bench_exp_{secrets.token_hex(4)}", workflow=workflow,
        workflow_version=workflow.versions.order_by("-number")[0], dataset_version=version,
        scorers=[{"type": "contains", "name": "contains"}, *SCORERS], status=Experiment.Status.SUCCESS,
        started_at=now, completed_at=now)
    dataset_items = DatasetItem.objects.filter(version=version).order_by("position").values_list("pk", "position")
    batch: list[ExperimentItem] = []
    for pk, position in dataset_items.iterator(chunk_size=BATCH):
        failed = position % 50 == 49
        batch.append(ExperimentItem(
            experiment=experiment, dataset_item_id=pk, position=position,
            status=ExperimentItem.Status.FAILED if failed else ExperimentItem.Status.SUCCESS,
            output=None if failed else {"state": {}, "nodes": {"n0000": {"answer": f"answer {position + shift}"}}},
            scores={} if failed else {"contains": {"score": float((position + shift) % 3 != 0), "reason": "benchmark"},
                                      "answered": {"score": 1.0, "reason": "benchmark"}},
            error_code="NODE_FAILED" if failed else "", tokens=100 + position % 40, cost=0,
            latency_seconds=0.2 + (position % 10) / 10, started_at=now, completed_at=now,
            nodes=[{"node_id": "n0000", "tokens": 100 + position % 40, "context_record": None,
                    "resolution_failures": []}]))
        if len(batch) == BATCH:
            ExperimentItem.objects.bulk_create(batch)
            batch = []
    ExperimentItem.objects.bulk_create(batch)
    return experiment


def page_url(experiment_id: str) -> str | None:
    for name in PAGE_ROUTES:
        try:
            return reverse(name, args=[experiment_id])
        except NoReverseMatch:
            continue
    return None


def timed_answer(client: Client, label: str, url: str, repeat: int, target_ms: float) -> dict:
    """The server time of one answer: the median of `repeat` requests after one that warms up."""
    figures: dict[str, Any] = {"label": label, "url": url, "ms": None, "queries": None, "bytes": None, "error": None,
                               "target_ms": target_ms}
    try:
        request(client, url, target_ms * 10 / 1000)
        times = []
        for _ in range(repeat):
            with CaptureQueriesContext(connection) as captured:
                response, size, seconds = request(client, url, target_ms * 10 / 1000)
            if response.status_code != 200:
                figures["error"] = f"answered {response.status_code}"
                return figures
            times.append(seconds)
            figures.update(queries=len(captured), bytes=size)
        figures["ms"] = statistics.median(times) * 1000
    except Exception as error:  # noqa: BLE001 - an answer that fails is a finding, not the end
        connection.close()
        figures["error"] = f"failed: {error!r}"[:300]
    return figures
