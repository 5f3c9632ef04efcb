"""Benchmark of the orchestration around a node run against a bare Celery round trip.

Every node of the measured workflows runs the builtin `noop` skill, so what is timed is
Switchyard's own work per node: claiming the run, reading the workflow, assembling the
(empty) context, storing the result, deciding what comes next and dispatching it. The
baseline is a bare no-op Celery task (`core.tasks.ping`) sent and waited for on the same
queue, worker and Redis, in the same run. Ratios, not absolute times: a busy machine
slows both sides alike.

Measured: a chain, a wide DAG and a larger layer of the same shape (independent nodes, or
one root fanning out), to show that a node's cost does not grow with its layer; and, as
Celery's own share of a DAG's node, a bare layer: as many no-op messages as the DAG has
nodes, published at once and taken by the worker one after another.

Then, once, a state machine of two no-op nodes that loops until it reaches its `max_steps`
(`--loop` steps, 10,000 by default): its time per step over its first and its last 200
steps, from the node runs' own start times, shows whether a step costs more the longer the
run has gone on (LOOP_GROWTH_TARGET: the end's over the start's).

Each workflow is run `--repeat` times, the shapes taken in turn, each run right after a
baseline of its own; a shape's figures are the medians of its runs. The speed of a small
virtual machine drifts from one second to the next (the round trip alone moved by a
third between two measurements ten seconds apart), and one sample of each side of a
ratio can land on either side of such a change.

Node tasks store no result (ignore_result=True); the baseline's round trip goes through
the result backend as well, which a node hop does not need, so the baseline is, if
anything, a little slower than a bare dispatch hop.
"""
from __future__ import annotations

import json
import os
import secrets
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, cast
from urllib.parse import quote

import dj_database_url
from celery import current_app
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.db.models import Q

from agents.models import Agent
from core.documents import import_documents
from core.tasks import ping
from engine.errors import EngineError
from executions.models import Evaluation, Execution, NodeRun
from executions.services import execution_cancel, execution_start
from workflows.models import Workflow

if TYPE_CHECKING:
    from django.db.backends.postgresql.base import DatabaseWrapper as PostgreSQLWrapper

ROOT = Path(__file__).resolve().parents[1]
# Per-node time over the bare round trip, on PostgreSQL; the large layer must also cost no
# more per node than the 500-node DAG (GROWTH_TARGET: its per-node time over the DAG's).
TARGETS = {"chain": 1.5, "wide": 2.0, "layer": 2.0}
GROWTH_TARGET = 1.1
LOOP_WINDOW = 200  # steps at the start and at the end of the loop whose time per step is reported
LOOP_GROWTH_TARGET = 1.25  # the time per step at the loop's end over that at its start
LOOP_SECONDS_PER_STEP = 0.05  # the loop may take this long per step (or --timeout, if longer)
POLL_SECONDS = 0.02
TERMINAL = {Execution.Status.SUCCESS, Execution.Status.FAILED, Execution.Status.CANCELLED,
            Execution.Status.ESCALATED}
WARMUP_NODES = 3
WARMUP_PINGS = 5


class BenchmarkFailed(EngineError):
    """A run that did not finish, or did not succeed: reported, then exit 1."""

    code = "BENCHMARK_FAILED"


def worker_database_url() -> str:
    """The URL of the database this process uses, for the worker to open.

    DATABASE_URL from the environment when it names that database (it may carry options);
    otherwise one built from the connection's settings (e.g. pytest's test database)."""
    config = connection.settings_dict
    given = os.environ.get("DATABASE_URL")
    if given:
        parsed = dj_database_url.parse(given)
        if all(str(parsed.get(key) or "") == str(config.get(key) or "") for key in ("ENGINE", "NAME", "HOST", "PORT")):
            return given
    if connection.vendor == "sqlite":
        return f"sqlite:///{config['NAME']}"
    if connection.vendor != "postgresql":
        raise CommandError(f"benchmark_execution knows SQLite and PostgreSQL, not {connection.vendor}")
    auth = quote(config["USER"] or "", safe="")
    if config.get("PASSWORD"):
        auth += f":{quote(config['PASSWORD'], safe='')}"
    host = config["HOST"] or "127.0.0.1"
    return f"postgres://{auth}@{host}:{config['PORT'] or 5432}/{quote(config['NAME'], safe='')}"


def database_label() -> str:
    if connection.vendor == "postgresql":
        number = cast("PostgreSQLWrapper", connection).pg_version  # e.g. 150020
        return f"postgresql {number // 10000}.{number % 10000}"
    if connection.vendor == "sqlite":
        return f"sqlite {sqlite3.sqlite_version}"
    return connection.vendor


def agent_document(agent_id: str) -> dict:
    return {
        "agent_id": agent_id,
        "name": "Benchmark no-op",
        "version": "1.0.0",
        "type": "business",
        "status": "active",
        "prompt_config": {"system_prompt": "Do nothing."},
        "capabilities": {"skills": ["noop"], "tools": [], "knowledge_domains": []},
        "metadata": {"created_by": "benchmark_execution"},
        "runtime": {"backend": "builtin", "model": "", "encoding": "cl100k_base", "role": ""},
    }


def loop_document(workflow_id: str, agent_id: str, *, steps: int) -> dict:
    """A state machine of two no-op nodes, each going to the other, ended by its max_steps."""
    return {
        "workflow_id": workflow_id,
        "name": f"benchmark loop of {steps} no-op steps",
        "topology": "state_machine",
        "nodes": [{"id": "ping", "agent_ref": agent_id}, {"id": "pong", "agent_ref": agent_id}],
        "transitions": [{"from": "ping", "to": "pong"}, {"from": "pong", "to": "ping"}],
        "error_handling": {"retry_count": 0},
        "limits": {"max_steps": steps, "max_wall_seconds": 86_400},
    }


def workflow_document(workflow_id: str, agent_id: str, *, topology: str, nodes: int, fan_out: bool = False) -> dict:
    ids = [f"n{i:04d}" for i in range(nodes)]
    document = {
        "workflow_id": workflow_id,
        "name": f"benchmark {topology} of {nodes} no-op nodes",
        "topology": topology,
        "nodes": [{"id": node_id, "agent_ref": agent_id} for node_id in ids],
        "error_handling": {"retry_count": 0},
        "limits": {"max_wall_seconds": 3600},
    }
    if fan_out:
        document["transitions"] = [{"from": ids[0], "to": node_id} for node_id in ids[1:]]
    return document


class Worker:
    """One `celery worker --pool solo` subprocess on a private queue."""

    def __init__(self, app, queue: str, env: dict, profile: str | None = None):
        self.app = app
        self.queue = queue
        self.hostname = f"bench-{queue.rsplit('-', 1)[-1]}@switchyard"
        self.env = env
        self.profile = profile
        self.process: subprocess.Popen | None = None
        descriptor, name = tempfile.mkstemp(prefix="switchyard-bench-worker-", suffix=".log")
        os.close(descriptor)
        self.log_path = Path(name)

    def start(self, timeout: float = 60) -> None:
        profiler = ["-m", "cProfile", "-o", self.profile] if self.profile else []
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, *profiler, "-m", "celery", "-A", "project", "worker", "--pool", "solo",
                 "--queues", self.queue, "--hostname", self.hostname, "--loglevel", "info",
                 "--without-gossip", "--without-mingle"],
                cwd=ROOT, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while not self.app.control.ping(destination=[self.hostname], timeout=0.5):
            if self.process.poll() is not None:
                raise BenchmarkFailed(f"the worker exited with code {self.process.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise BenchmarkFailed(f"the worker did not answer a ping within {timeout:.0f} s:\n{self.log_tail()}")

    def exited(self) -> int | None:
        """The started worker's exit code, or None while it runs."""
        if self.process is None:
            raise BenchmarkFailed("the worker was asked whether it exited before it was started")
        return self.process.poll()

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        try:
            with self.app.connection_for_write() as broker:
                channel = broker.default_channel
                channel.queue_delete(self.queue)
                # queue_delete leaves kombu's binding sets behind on Redis; they name only this queue.
                channel.client.delete(self.queue, f"_kombu.binding.{self.queue}",
                                      f"_kombu.binding_permanent.{self.queue}")
        except Exception:  # noqa: BLE001 - best-effort cleanup of a shared Redis
            pass
        self.log_path.unlink(missing_ok=True)


class Command(BaseCommand):
    help = ("Measure per-node orchestration time of no-op workflows on one real worker against a bare Celery "
            "round trip on the same queue and Redis; print ratios.")

    def add_arguments(self, parser):
        parser.add_argument("--chain", type=int, default=200, help="nodes of the seq chain (default 200)")
        parser.add_argument("--wide", type=int, default=500, help="nodes of the wide dag (default 500)")
        parser.add_argument("--layer", type=int, default=2000,
                            help="nodes of a second, larger wide dag of the same shape, to show per-node time does "
                                 "not grow with the layer (default 2000; 0: skip it)")
        parser.add_argument("--wide-shape", choices=["independent", "fanout"], default="independent",
                            help="independent: no edges, all nodes start at once (default); "
                                 "fanout: one root node, then all the others")
        parser.add_argument("--loop", type=int, default=10_000,
                            help="steps of the state machine loop, run once after the others (default 10000; 0: skip "
                                 "it); it may take --timeout or 50 ms per step, whichever is longer")
        parser.add_argument("--repeat", type=int, default=3,
                            help="runs of each workflow, the shapes taken in turn, each after its own baseline; the "
                                 "figures are their medians (default 3)")
        parser.add_argument("--timeout", type=float, default=60.0,
                            help="seconds each run may take before the benchmark gives up (exit 1)")
        parser.add_argument("--worker-profile", metavar="PATH",
                            help="run the worker under cProfile and write its stats here (slows it down)")
        parser.add_argument("--json", dest="as_json", action="store_true", help="print the figures as JSON")

    def handle(self, *args, chain, wide, layer, loop, wide_shape, repeat, timeout, worker_profile, as_json,
               **options):
        if chain < 1 or wide < 1 or layer < 0:
            raise CommandError("--chain and --wide need at least one node, --layer none or more")
        if loop and loop < 2:
            raise CommandError("--loop needs at least two steps (or 0 to skip it)")
        if repeat < 1:
            raise CommandError("--repeat must be at least 1")

        token = secrets.token_hex(4)
        queue = f"switchyard-bench-{token}"
        agent_id = f"bench_noop_{token}"
        workflows = {"warmup": f"bench_warmup_{token}", "chain": f"bench_chain_{token}", "wide": f"bench_wide_{token}",
                     "layer": f"bench_layer_{token}", "loop": f"bench_loop_{token}"}
        # The worker runs as deployed workers do, with DEBUG off: with it on, Django keeps and
        # logs every query, which a deployment does not pay for.
        env = dict(os.environ, DJANGO_SETTINGS_MODULE=os.environ.get("DJANGO_SETTINGS_MODULE", "project.settings"),
                   DEBUG="0", CELERY_QUEUE=queue, DATABASE_URL=worker_database_url(), REDIS_URL=settings.REDIS_URL,
                   CELERY_BROKER_URL=settings.CELERY_BROKER_URL, CELERY_RESULT_BACKEND=settings.CELERY_RESULT_BACKEND)
        worker = Worker(current_app, queue, env, profile=worker_profile)
        previous_queue = settings.CELERY_TASK_DEFAULT_QUEUE
        report = {"database": database_label(), "queue": queue, "baseline": None, "drain": None, "figures": [],
                  "loop": None, "error": None}
        try:
            import_documents([
                agent_document(agent_id),
                workflow_document(workflows["warmup"], agent_id, topology="seq", nodes=WARMUP_NODES),
                workflow_document(workflows["chain"], agent_id, topology="seq", nodes=chain),
                *(workflow_document(workflows[name], agent_id, topology="dag", nodes=count,
                                    fan_out=wide_shape == "fanout")
                  for name, count in (("wide", wide), ("layer", layer)) if count),
                *([loop_document(workflows["loop"], agent_id, steps=loop)] if loop else []),
            ], actor="benchmark_execution")
            worker.start()
            settings.CELERY_TASK_DEFAULT_QUEUE = queue  # what dispatch_after_commit sends node runs to

            # Warm up: imports, connections, the result backend's subscription, the worker's caches.
            self.round_trips(ping, queue, WARMUP_PINGS, timeout)
            self.run_workflow(workflows["warmup"], WARMUP_NODES, timeout, worker)

            report["baseline"] = {"name": "bare Celery round trip", "task": ping.name, "round_trips": chain,
                                  "per_task_s": []}
            dag = "dag, " + ("independent nodes (no edges)" if wide_shape == "independent" else "one root fanning out")
            runs = [("chain", workflows["chain"], chain, "seq"), ("wide", workflows["wide"], wide, dag)]
            if layer:
                runs.append(("layer", workflows["layer"], layer, dag))
            # Celery's own share of a node of a wide DAG: a layer of bare no-op messages, published at
            # once and taken by the worker one after another.
            report["drain"] = {"task": ping.name, "messages": wide,
                               "per_message_s": self.drain(ping, queue, wide, timeout)}
            samples = {label: [] for label, *_ in runs}
            for _ in range(repeat):
                for label, workflow_id, count, _shape in runs:
                    # The baseline right before each run, so that a machine that gets busier or
                    # quieter during the benchmark moves both sides of each ratio alike.
                    baseline = self.round_trips(ping, queue, chain, timeout)
                    report["baseline"]["per_task_s"].append(baseline)
                    measured = self.run_workflow(workflow_id, count, timeout, worker)
                    per_node = measured["wall_s"] / count
                    samples[label].append({**measured, "per_node_s": per_node, "baseline_s": baseline,
                                           "ratio": per_node / baseline})
            for label, _workflow_id, count, shape in runs:
                report["figures"].append({"name": label, "nodes": count, "shape": shape, "target": TARGETS[label],
                                          **_medians(samples[label]), "samples": samples[label]})
            if layer:  # each layer over the DAG run just before it
                report["figures"][-1]["growth"] = statistics.median(
                    big["per_node_s"] / small["per_node_s"] for small, big in zip(samples["wide"], samples["layer"], strict=True))
            if loop:
                report["loop"] = self.run_loop(workflows["loop"], loop, max(timeout, loop * LOOP_SECONDS_PER_STEP),
                                               worker)
        except BenchmarkFailed as failure:
            report["error"] = str(failure)
        finally:
            settings.CELERY_TASK_DEFAULT_QUEUE = previous_queue
            worker.stop()
            self.clean_up(agent_id, list(workflows.values()))

        self.print_report(report, as_json)
        if report["error"]:
            raise CommandError(report["error"].splitlines()[0])

    # ---------------------------------------------------------------- measuring

    def round_trips(self, ping, queue: str, count: int, timeout: float) -> float:
        """Seconds per sequential apply_async(...).get() of the no-op task."""
        results = []
        started = time.perf_counter()
        try:
            for n in range(count):
                result = ping.apply_async((n,), queue=queue)
                results.append(result)
                result.get(timeout=timeout)
        except Exception as error:  # noqa: BLE001 - celery raises TimeoutError and friends
            raise BenchmarkFailed(f"the baseline round trip {len(results)} of {count} failed: {error!r}") from None
        finally:
            elapsed = time.perf_counter() - started
            for result in results:
                result.forget()
        return elapsed / count

    def drain(self, ping, queue: str, count: int, timeout: float) -> float:
        """Seconds per message of `count` no-op messages published in one batch (keeping no
        result, as node tasks do) and a last one waited for, from the first publish."""
        started = time.perf_counter()
        try:
            with current_app.producer_or_acquire() as producer, producer.batch():
                for n in range(count):
                    ping.apply_async((n,), queue=queue, producer=producer, ignore_result=True)
            last = ping.apply_async(("last",), queue=queue)
            last.get(timeout=timeout)
        except Exception as error:  # noqa: BLE001 - celery raises TimeoutError and friends
            raise BenchmarkFailed(f"the drain of {count} no-op messages failed: {error!r}") from None
        elapsed = time.perf_counter() - started
        last.forget()
        return elapsed / (count + 1)

    def run_workflow(self, workflow_id: str, nodes: int, timeout: float, worker: Worker) -> dict:
        """Start a run and poll its status until it ends; the wall time from start to success."""
        started = time.perf_counter()
        execution, status, now = self.run_to_its_end(workflow_id, nodes, started + timeout, timeout, worker)
        wall = now - started
        deadline = started + timeout
        runs = list(execution.node_runs.values_list("status", flat=True))
        succeeded = sum(1 for s in runs if s == NodeRun.Status.SUCCESS)
        if status != Execution.Status.SUCCESS or succeeded != nodes or len(runs) != nodes:
            raise BenchmarkFailed(f"{workflow_id} ended {status} ({execution.ended_reason or 'no reason'}) with "
                                  f"{succeeded} of {nodes} nodes succeeded in {len(runs)} node runs\n"
                                  f"{worker.log_tail()}")
        assert execution.started_at is not None and execution.completed_at is not None, "a run that succeeded"
        recorded = (execution.completed_at - execution.started_at).total_seconds()
        # The worker evaluates every run that ends (executions.evaluate): wait for it, so that
        # the next measurement does not queue behind it, and report what it took.
        evaluations = Evaluation.objects.filter(execution=execution, target_type="execution")
        while not evaluations.exists():
            if time.perf_counter() > deadline or worker.exited() is not None:
                raise BenchmarkFailed(f"{workflow_id}: its evaluation was not stored\n{worker.log_tail()}")
            time.sleep(POLL_SECONDS)
        evaluated = time.perf_counter() - now
        return {"execution_id": execution.execution_id, "wall_s": wall, "recorded_s": recorded,
                "evaluated_s": evaluated}

    def run_to_its_end(self, workflow_id: str, nodes: int, deadline: float, timeout: float,
                       worker: Worker) -> tuple[Execution, str, float]:
        """Start a run and poll its status until it ends: the run, read again, its status and
        when it was seen to end. A run still going at `deadline` is cancelled (BenchmarkFailed)."""
        execution = execution_start(workflow=Workflow.objects.get(workflow_id=workflow_id), input={})
        rows = Execution.objects.filter(pk=execution.pk)
        while True:
            status = rows.values_list("status", flat=True).get()
            now = time.perf_counter()
            if status in TERMINAL:
                break
            code = worker.exited()
            stopped = code is not None
            if now > deadline or stopped:
                done = execution.node_runs.filter(status=NodeRun.Status.SUCCESS).count()
                execution_cancel(execution=execution)
                why = f"the worker exited with code {code}" if stopped else \
                    f"it did not finish within {timeout:g} s"
                raise BenchmarkFailed(f"{workflow_id}: {why} ({done} of {nodes} nodes done)\n{worker.log_tail()}")
            time.sleep(POLL_SECONDS)
        execution.refresh_from_db()
        return execution, status, now

    def run_loop(self, workflow_id: str, steps: int, timeout: float, worker: Worker) -> dict:
        """Run the loop until it reaches its max_steps: the time per step over its first and
        its last LOOP_WINDOW steps, from the start times of its node runs (one a step)."""
        started = time.perf_counter()
        execution, status, now = self.run_to_its_end(workflow_id, steps, started + timeout, timeout, worker)
        runs = execution.node_runs.count()
        succeeded = execution.node_runs.filter(status=NodeRun.Status.SUCCESS).count()
        if (status != Execution.Status.FAILED or not execution.ended_reason.startswith("max_steps")
                or runs != steps or succeeded != steps):
            raise BenchmarkFailed(f"{workflow_id} ended {status} ({execution.ended_reason or 'no reason'}) with "
                                  f"{succeeded} of {runs} node runs succeeded, not at its max_steps of {steps}\n"
                                  f"{worker.log_tail()}")
        evaluations = Evaluation.objects.filter(execution=execution, target_type="execution")
        while not evaluations.exists():  # as after the other runs: nothing left queued behind it
            if time.perf_counter() > started + timeout or worker.exited() is not None:
                raise BenchmarkFailed(f"{workflow_id}: its evaluation was not stored\n{worker.log_tail()}")
            time.sleep(POLL_SECONDS)
        window = min(LOOP_WINDOW, steps // 2)
        began = {sequence: at for sequence, at in execution.node_runs.filter(
            sequence__in=[1, window + 1, steps - window, steps]).values_list("sequence", "started_at") if at is not None}
        first = (began[window + 1] - began[1]).total_seconds() / window
        last = (began[steps] - began[steps - window]).total_seconds() / window
        return {"execution_id": execution.execution_id, "steps": steps, "window": window, "wall_s": now - started,
                "first_per_step_s": first, "last_per_step_s": last, "growth": last / first,
                "target": LOOP_GROWTH_TARGET}

    def clean_up(self, agent_id: str, workflow_ids: list[str]) -> None:
        """Delete everything the benchmark made (after the worker has stopped)."""
        try:
            NodeRun.objects.filter(execution__workflow__workflow_id__in=workflow_ids).delete()
            Evaluation.objects.filter(Q(target_type="workflow", target_id__in=workflow_ids)
                                      | Q(target_type="agent", target_id=agent_id)).delete()
            Execution.objects.filter(workflow__workflow_id__in=workflow_ids).delete()
            Workflow.objects.filter(workflow_id__in=workflow_ids).delete()
            agents = Agent.objects.filter(agent_id=agent_id)
            agents.update(root=None, parent=None)  # root points at itself
            agents.delete()
        except Exception as error:  # noqa: BLE001 - report, and let the figures still print
            self.stderr.write(f"benchmark_execution: could not delete what it created ({agent_id}, "
                              f"{', '.join(workflow_ids)}): {error!r}")

    # ---------------------------------------------------------------- reporting

    def print_report(self, report: dict, as_json: bool) -> None:
        """The figures; a shape's are medians of its runs (each ratio is its own run's)."""
        if as_json:
            self.stdout.write(json.dumps(report, indent=2))
            return
        self.stdout.write(f"database: {report['database']}; one solo-pool worker on queue {report['queue']}")
        baseline = report["baseline"]
        if baseline:
            each = " and ".join(f"{value * 1000:.2f}" for value in baseline["per_task_s"])
            self.stdout.write(
                f"baseline: {baseline['round_trips']} sequential {baseline['task']} apply_async().get() round trips "
                f"before each run, {each} ms each (through the Redis result backend, which node tasks skip: they "
                "have ignore_result=True)")
        drain = report["drain"]
        if drain:
            self.stdout.write(
                f"bare layer: {drain['messages']} {drain['task']} messages published at once and taken one after "
                f"another by the worker, {drain['per_message_s'] * 1000:.2f} ms each "
                f"({drain['per_message_s'] / baseline['per_task_s'][0]:.2f} round trips): Celery's own share of a "
                "wide dag's node")
        postgres = report["database"].startswith("postgresql")
        for f in report["figures"]:
            verdict = ("ok" if f["ratio"] <= f["target"] else "OVER TARGET") if postgres else "informational here"
            label = f"chain of {f['nodes']} nodes" if f["name"] == "chain" else f"wide dag of {f['nodes']} nodes"
            growth = ""
            if "growth" in f:
                grown = ("ok" if f["growth"] <= GROWTH_TARGET else "OVER TARGET") if postgres else "informational here"
                growth = (f"; {f['growth']:.2f}× the per-node time of the smaller dag (target ≤ {GROWTH_TARGET:g}×, "
                          f"{grown})")
            runs = len(f["samples"])
            each = ", ".join(f"{sample['ratio']:.2f}×" for sample in f["samples"])
            self.stdout.write(
                f"{label} ({f['shape']}): {f['per_node_s'] * 1000:.2f} ms per node vs bare Celery round trip "
                f"{f['baseline_s'] * 1000:.2f} ms → {f['ratio']:.2f}× (median of {runs} run{'s' * (runs > 1)}: "
                f"{each}; target ≤ {f['target']:g}× on PostgreSQL, "
                f"{verdict}) — {f['wall_s']:.2f} s wall, {f['recorded_s']:.2f} s recorded on the execution; "
                f"evaluated {f['evaluated_s'] * 1000:.0f} ms after it ended "
                f"({f['evaluated_s'] / f['baseline_s']:.0f} round trips){growth}")
        loop = report["loop"]
        if loop:
            verdict = "ok" if loop["growth"] <= loop["target"] else "OVER TARGET"
            self.stdout.write(
                f"state machine loop of {loop['steps']} steps: {loop['first_per_step_s'] * 1000:.2f} ms per step over "
                f"its first {loop['window']}, {loop['last_per_step_s'] * 1000:.2f} ms over its last {loop['window']} "
                f"→ {loop['growth']:.2f}× (target ≤ {loop['target']:g}×, {verdict}) — {loop['wall_s']:.1f} s wall")
        if report["error"]:
            self.stderr.write(f"benchmark_execution: {report['error']}")


def _medians(samples: list[dict]) -> dict:
    """The median of each figure of a shape's runs; its ratio is the median of the runs'
    ratios, each of a run over the baseline measured right before it."""
    return {key: statistics.median(sample[key] for sample in samples)
            for key in ("per_node_s", "baseline_s", "ratio", "wall_s", "recorded_s", "evaluated_s")}
