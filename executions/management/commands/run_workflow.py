from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q

from core.errors import DocumentError, WorkflowInvalid
from core.jsonutil import parse_json
from executions.management.waiting import wait_and_print
from executions.services import execution_start
from workflows.models import Workflow

BAD_INPUT = 2


class Command(BaseCommand):
    help = (
        "Start a run of a workflow (by id or name). With --wait, print the final execution as JSON "
        "(the §5 shape plus every node run) and exit 0 on success, 1 otherwise; 2 on bad input."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # `--version N` names the workflow version to run; Django's own --version gives way.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("workflow", help="a workflow id or name")
        parser.add_argument("--input", default="{}", help="the run's input, a JSON object")
        parser.add_argument("--version", dest="workflow_version", type=int, metavar="N",
                            help="the number of the workflow version to run (default: the latest)")
        parser.add_argument("--wait", action="store_true", help="wait for the run to end (or to escalate)")
        parser.add_argument("--timeout", type=float, default=600, help="seconds to wait before giving up (exit 1)")

    def handle(self, *args, workflow, input, wait, timeout, workflow_version=None, **options):
        found = list(Workflow.objects.filter(Q(workflow_id=workflow) | Q(name=workflow))[:2])
        if len(found) != 1:
            problem = "no workflow has" if not found else "more than one workflow has"
            raise CommandError(f"{problem} the id or name {workflow!r}", returncode=BAD_INPUT)
        try:
            payload = parse_json(input)
            execution = execution_start(workflow=found[0], input=payload, version=workflow_version)
        except DocumentError as error:
            if error.where == "workflow_version":
                raise CommandError(f"--version: {error.problem}", returncode=BAD_INPUT) from error
            located = f"{error.where}: " if error.where not in ("", "input") else ""
            raise CommandError(f"--input: {located}{error.problem}", returncode=BAD_INPUT) from error
        except WorkflowInvalid as error:
            raise CommandError(str(error), returncode=BAD_INPUT) from error
        if not wait:
            self.stdout.write(execution.execution_id)
            return
        wait_and_print(self, execution, timeout)
