import json
import time

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q

from core.errors import DocumentError, WorkflowInvalid
from core.jsonutil import parse_json
from executions.documents import execution_record
from executions.models import Execution
from executions.services import execution_start
from workflows.models import Workflow

BAD_INPUT = 2
FINAL = {Execution.Status.SUCCESS, Execution.Status.FAILED, Execution.Status.CANCELLED, Execution.Status.ESCALATED}


class Command(BaseCommand):
    help = (
        "Start a run of a workflow (by id or name). With --wait, print the final execution as JSON "
        "(the §5 shape plus every node run) and exit 0 on success, 1 otherwise; 2 on bad input."
    )

    def add_arguments(self, parser):
        parser.add_argument("workflow", help="a workflow id or name")
        parser.add_argument("--input", default="{}", help="the run's input, a JSON object")
        parser.add_argument("--wait", action="store_true", help="wait for the run to end (or to escalate)")
        parser.add_argument("--timeout", type=float, default=600, help="seconds to wait before giving up (exit 1)")

    def handle(self, *args, workflow, input, wait, timeout, **options):
        found = list(Workflow.objects.filter(Q(workflow_id=workflow) | Q(name=workflow))[:2])
        if len(found) != 1:
            problem = "no workflow has" if not found else "more than one workflow has"
            raise CommandError(f"{problem} the id or name {workflow!r}", returncode=BAD_INPUT)
        try:
            payload = parse_json(input)
            execution = execution_start(workflow=found[0], input=payload)
        except DocumentError as error:
            located = f"{error.where}: " if error.where not in ("", "input") else ""
            raise CommandError(f"--input: {located}{error.problem}", returncode=BAD_INPUT)
        except WorkflowInvalid as error:
            raise CommandError(str(error), returncode=BAD_INPUT)
        if not wait:
            self.stdout.write(execution.execution_id)
            return
        deadline = time.monotonic() + timeout
        while execution.status not in FINAL and time.monotonic() < deadline:
            time.sleep(0.2)
            execution.refresh_from_db()
        self.stdout.write(json.dumps(execution_record(execution), ensure_ascii=False, indent=2, default=str))
        if execution.status not in FINAL:
            raise CommandError(f"run {execution.execution_id} is still {execution.status} after {timeout:g} s",
                               returncode=1)
        if execution.status != Execution.Status.SUCCESS:
            raise CommandError(f"run {execution.execution_id} ended {execution.status}: "
                               f"{execution.ended_reason or (execution.escalation or {}).get('error', '')}",
                               returncode=1)
