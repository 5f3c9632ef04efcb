import json
import sys
import time

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q

from core.errors import DocumentError, SwitchyardError, WorkflowInvalid
from experiments.experiment_selectors import experiment_get, experiment_progress
from experiments.experiment_services import experiment_create, experiment_start
from workflows.models import Workflow

BAD_INPUT = 2
ENDED = ("success", "cancelled")


def pairs(values: list[str], option: str) -> dict[str, str]:
    """KEY=VALUE options as a dict; a value without "=" is refused naming the option."""
    out = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key or not rest:
            raise CommandError(f"{option} {value!r}: give KEY=VALUE", returncode=BAD_INPUT)
        out[key] = rest
    return out


def scorer_of(text: str) -> dict:
    """A scorer: a JSON object, or the name of a type that needs no field (exact, contains)."""
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise CommandError(f"--scorer {text!r}: not JSON ({error})", returncode=BAD_INPUT) from None
    return {"type": text}


class Command(BaseCommand):
    help = ("Run a workflow over a dataset as an experiment, each item a real run. Prints JSON with the "
            "experiment_id; with --wait, the final summary too (a progress bar on stderr when it is a terminal).")

    def create_parser(self, prog_name, subcommand, **kwargs):
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("workflow", help="a workflow id or name")
        parser.add_argument("dataset", help="a dataset's name")
        parser.add_argument("--version", dest="workflow_version", type=int, metavar="N",
                            help="the workflow version to run (default: the latest)")
        parser.add_argument("--dataset-version", type=int, metavar="N", help="default: the latest")
        parser.add_argument("--pin", action="append", default=[], metavar="NODE=VERSION",
                            help="the agent version a node runs (a version name, or current)")
        parser.add_argument("--pin-agent", action="append", default=[], metavar="AGENT=VERSION",
                            help="the agent version every node that runs the agent runs")
        parser.add_argument("--model", action="append", default=[], metavar="AGENT=BACKEND:MODEL",
                            help="run the agent (or node) on another backend and model")
        parser.add_argument("--concurrency", type=int, metavar="K", help="items run at once")
        parser.add_argument("--scorer", action="append", default=[], metavar="NAME|JSON",
                            help="a scorer: a type (exact, contains) or a JSON object")
        parser.add_argument("--max-cost", type=float, metavar="USD", help="for the runs and the judge together")
        parser.add_argument("--name", default="")
        parser.add_argument("--wait", action="store_true", help="wait for the experiment to end")
        parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait (then exit 1)")

    def handle(self, *args, workflow, dataset, wait, timeout, **options):
        found = list(Workflow.objects.filter(Q(workflow_id=workflow) | Q(name=workflow))[:2])
        if len(found) != 1:
            problem = "no workflow has" if not found else "more than one workflow has"
            raise CommandError(f"{problem} the id or name {workflow!r}", returncode=BAD_INPUT)
        versions = pairs(options["pin_agent"], "--pin-agent")
        versions.update(pairs(options["pin"], "--pin"))
        overrides = {}
        for key, value in pairs(options["model"], "--model").items():
            backend, sep, model = value.partition(":")
            if not sep or not backend:
                raise CommandError(f"--model {key}={value}: give AGENT=BACKEND:MODEL", returncode=BAD_INPUT)
            overrides[key] = {"runtime": {"backend": backend, "model": model}}
        try:
            experiment = experiment_create(
                workflow_id=found[0].workflow_id, dataset=dataset, workflow_version=options["workflow_version"],
                dataset_version_number=options["dataset_version"], agent_versions=versions,
                agent_overrides=overrides, scorers=[scorer_of(text) for text in options["scorer"]],
                concurrency=options["concurrency"], max_cost=options["max_cost"], name=options["name"])
        except (DocumentError, WorkflowInvalid) as error:
            raise CommandError(str(error), returncode=BAD_INPUT) from error
        experiment = experiment_start(experiment=experiment)
        if not wait:
            self.stdout.write(json.dumps({"experiment_id": experiment.experiment_id}))
            return
        experiment = self.wait(experiment.experiment_id, timeout)
        self.stdout.write(json.dumps({"experiment_id": experiment.experiment_id, "status": experiment.status,
                                      "progress": experiment_progress(experiment), "summary": experiment.summary},
                                     indent=2, default=str))
        if experiment.status not in ENDED:
            raise CommandError(f"experiment {experiment.experiment_id} still {experiment.status} after {timeout:g} s")

    def wait(self, experiment_id: str, timeout: float):
        deadline = time.monotonic() + timeout
        bar = sys.stderr.isatty()
        while True:
            try:
                experiment = experiment_get(experiment_id)
            except SwitchyardError as error:
                raise CommandError(str(error)) from error
            if bar:
                sys.stderr.write("\r" + progress_line(experiment_progress(experiment)))
                sys.stderr.flush()
            if experiment.status in ENDED or time.monotonic() > deadline:
                if bar:
                    sys.stderr.write("\n")
                return experiment
            time.sleep(1)


def progress_line(progress: dict, width: int = 30) -> str:
    """[#####.....] 12/40 done, 1 failed, 4 running, 35 s elapsed, ~110 s left"""
    total = progress["total"] or 1
    filled = int(width * progress["ended"] / total)
    counts = progress["counts"]
    estimate = progress["estimate_seconds"]
    left = f", ~{estimate:.0f} s left" if estimate is not None else ""
    return (f"[{'#' * filled}{'.' * (width - filled)}] {progress['ended']}/{progress['total']} done, "
            f"{counts['failed']} failed, {counts['running']} running, {progress['elapsed_seconds']:.0f} s elapsed{left}")
