"""`python manage.py solve24 "4 9 10 13" [--strategy BFS|DFS] [--k K] [--breadth B] [--timeout S]`

Solves a Game of 24 with the demo's `game24` workflow (a Tree-of-Thoughts search in one
node), with the search settings of the seed's example unless told otherwise (BFS, k=5
candidates per expansion, the top 3 kept per level), through the normal execution path:
a run is started with `execution_start`, and its node runs are performed by a Celery
worker when one answers on the queue, else here in this process by `node_run_execute`,
as a worker would. Prints
`{"final_solution", "stats", "execution_id"}` (and `error` when there is no answer);
exit 0 with a verified answer, 1 when the search found none, 2 on bad input.
"""
import json
import re
import socket
import time
import uuid
from typing import Any

from celery import current_app
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from kombu.exceptions import OperationalError

from agents.models import Agent
from core.documents import import_documents
from demo.documents import GAME24, GAME24_ROLES, TOT_AGENTS
from executions.models import Execution, NodeRun
from executions.services import execution_start, node_run_execute
from workflows.models import Workflow

BAD_INPUT = 2
NOT_SOLVED = 1
# The seed's example (tot-protocol "使用示例"): BFS, branching_factor=5, the top 3 to the next level.
SEED_EXAMPLE = {"strategy": "BFS", "k": "5", "breadth": "3"}
WORKER_WAIT_SECONDS = 1.0  # how long a worker has to answer before the run goes on in this process
FINAL = {Execution.Status.SUCCESS, Execution.Status.FAILED, Execution.Status.CANCELLED, Execution.Status.ESCALATED}


def parse_puzzle(text: str) -> list[int]:
    """Four whole numbers written "4 9 10 13" (spaces or commas); CommandError (exit 2)
    saying what is wrong otherwise."""
    parts = [part for part in re.split(r"[\s,]+", text.strip()) if part]
    wrong = [part for part in parts if not re.fullmatch(r"\d+", part)]
    if wrong:
        raise CommandError(f"the puzzle is four whole numbers like \"4 9 10 13\"; {', '.join(map(repr, wrong))} "
                           f"{'is' if len(wrong) == 1 else 'are'} not", returncode=BAD_INPUT)
    if len(parts) != 4:
        raise CommandError(f"the puzzle is four whole numbers like \"4 9 10 13\"; got {len(parts)}: {text.strip()!r}",
                           returncode=BAD_INPUT)
    return [int(part) for part in parts]


def at_least_one(flag: str, text: str) -> int:
    """A whole number of at least 1; CommandError (exit 2) otherwise."""
    if not re.fullmatch(r"\d+", text) or int(text) < 1:
        raise CommandError(f"{flag} is a whole number of at least 1, not {text!r}", returncode=BAD_INPUT)
    return int(text)


class Command(BaseCommand):
    help = ("Solve a Game of 24 with a Tree-of-Thoughts search (the demo's `game24` workflow), by a Celery worker "
            "when one answers, else in this process. Prints the final solution and the stats as JSON; exit 0 when "
            "a verified answer was found, 1 when the search found none, 2 on bad input.")

    def add_arguments(self, parser):
        parser.add_argument("numbers", nargs="+", help='the four numbers: "4 9 10 13" (or 4 9 10 13)')
        parser.add_argument("--strategy", default=SEED_EXAMPLE["strategy"],
                            help="BFS (keep the b best per level) or DFS (backtracking); default BFS")
        parser.add_argument("--k", default=SEED_EXAMPLE["k"],
                            help="the candidates asked per expansion (branching_factor); default 5")
        parser.add_argument("--breadth", default=SEED_EXAMPLE["breadth"],
                            help="BFS: the nodes kept per level (b); default 3")
        parser.add_argument("--timeout", default="120", help="seconds to wait for the run (default 120)")

    def handle(self, *args, numbers, strategy, k, breadth, timeout, **options):
        puzzle = parse_puzzle(" ".join(numbers))
        if strategy.upper() not in ("BFS", "DFS"):
            raise CommandError(f"--strategy is BFS or DFS, not {strategy!r}", returncode=BAD_INPUT)
        search_config = {"strategy": strategy.upper(), "branching_factor": at_least_one("--k", k),
                         "breadth": at_least_one("--breadth", breadth)}
        try:
            seconds = float(timeout)
        except ValueError:
            seconds = -1
        if not 0 < seconds < float("inf"):
            raise CommandError(f"--timeout is a number of seconds above 0, not {timeout!r}", returncode=BAD_INPUT)

        workflow = self.game24_workflow()
        input = {"numbers": puzzle, "search_config": search_config}
        workers = self.listening_workers()
        execution_id = f"exec_{timezone.now():%Y%m%d%H%M%S}_{uuid.uuid4().hex[:8]}"
        try:
            execution = execution_start(workflow=workflow, input=input, execution_id=execution_id)
        except OperationalError as error:  # stored, but the broker took no message: run it here
            self.stderr.write(f"the broker did not take the node run ({error})")
            execution, workers = Execution.objects.get(execution_id=execution_id), []
        if workers:
            self.stderr.write(f"running on the Celery worker(s) {', '.join(workers)} "
                              f"(queue {settings.CELERY_TASK_DEFAULT_QUEUE!r})")
            execution = self.wait(execution, seconds)
        else:
            self.stderr.write(f"no Celery worker answered on the queue {settings.CELERY_TASK_DEFAULT_QUEUE!r} within "
                              f"{WORKER_WAIT_SECONDS:g} s: running the search in this process")
            execution = self.run_here(execution, seconds)
        self.report(execution, seconds)

    def game24_workflow(self) -> Workflow:
        """The demo's game24 workflow, loaded with its agents when it is not there (the
        agents that exist are left as they are)."""
        workflow = Workflow.objects.filter(workflow_id=GAME24["workflow_id"]).first()
        if workflow is not None:
            return workflow
        present = set(Agent.objects.filter(agent_id__in=[a["agent_id"] for a in TOT_AGENTS])
                      .values_list("agent_id", flat=True))
        needed = {GAME24["nodes"][0]["agent_ref"], *GAME24_ROLES.values()}
        documents = [a for a in TOT_AGENTS if a["agent_id"] in needed and a["agent_id"] not in present]
        import_documents([*documents, GAME24], actor="solve24")
        self.stderr.write(f"loaded the demo's {GAME24['workflow_id']} workflow"
                          + (f" and its agents {', '.join(a['agent_id'] for a in documents)}" if documents else ""))
        return Workflow.objects.get(workflow_id=GAME24["workflow_id"])

    def listening_workers(self) -> list[str]:
        """The Celery workers consuming this project's queue, asked for WORKER_WAIT_SECONDS."""
        queue = settings.CELERY_TASK_DEFAULT_QUEUE
        try:
            with current_app.connection_for_write() as connection:
                connection.ensure_connection(max_retries=1, timeout=WORKER_WAIT_SECONDS)
                replies = current_app.control.inspect(timeout=WORKER_WAIT_SECONDS, connection=connection).active_queues()
        except OperationalError as error:
            self.stderr.write(f"the broker cannot be reached ({error})")
            return []
        return sorted(worker for worker, queues in (replies or {}).items()
                      if any(q.get("name") == queue for q in queues or []))

    def wait(self, execution: Execution, seconds: float) -> Execution:
        deadline = time.monotonic() + seconds
        while execution.status not in FINAL and time.monotonic() < deadline:
            time.sleep(0.1)
            execution.refresh_from_db()
        return execution

    def run_here(self, execution: Execution, seconds: float) -> Execution:
        """Perform the run's node runs in this process, each as a worker would (claimed,
        performed, stored, the run advanced), waiting out any retry delay."""
        worker = f"solve24@{socket.gethostname()}"
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            execution.refresh_from_db()
            if execution.status in FINAL:
                break
            pending = execution.node_runs.filter(status=NodeRun.Status.PENDING).order_by("available_at", "sequence")
            due = pending.first()
            if due is None:
                if not execution.node_runs.filter(status=NodeRun.Status.RUNNING).exists():
                    break  # nothing left to run, and nobody running anything
                time.sleep(0.1)  # another process has one: wait for it
                continue
            delay = (due.available_at - timezone.now()).total_seconds() if due.available_at else 0
            if delay > 0:
                time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
                continue
            node_run_execute(node_run_id=due.pk, worker=worker)
        execution.refresh_from_db()
        return execution

    def report(self, execution: Execution, seconds: float) -> None:
        search = execution.thought_searches.order_by("-id").first()
        result: dict[str, Any] = {
            "final_solution": search.final_solution if search else None,
            "stats": search.stats if search else None,
            "execution_id": execution.execution_id,
        }
        solution = result["final_solution"] or {}
        solved = (execution.status == Execution.Status.SUCCESS
                  and (solution.get("verification") or {}).get("is_valid") is True)
        if not solved:
            result["error"] = self.error_of(execution, search, seconds)
        self.stdout.write(json.dumps(result, ensure_ascii=False, indent=2))
        if not solved:
            error = result["error"]
            raise CommandError(f"{error['code']}: {error['message']}", returncode=NOT_SOLVED)

    def error_of(self, execution: Execution, search, seconds: float) -> dict:
        """Why there is no answer: the search's error, else the node's, else the run's."""
        if execution.status not in FINAL:
            return {"code": "TIMEOUT", "message": f"run {execution.execution_id} is still {execution.status} "
                                                  f"after {seconds:g} s", "recoverable": True}
        if search is not None and search.error:
            return search.error
        failed = execution.node_runs.filter(status=NodeRun.Status.FAILED).order_by("-sequence").first()
        if failed is not None:
            return {"code": failed.error_code, "message": failed.error, "recoverable": False}
        return {"code": execution.status.upper(), "message": execution.ended_reason or f"the run is {execution.status}",
                "recoverable": False}
