from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from core.errors import DetailsRemoved, DocumentError, IllegalTransition
from core.jsonutil import parse_json
from core.roles import Forbidden
from executions.management.waiting import wait_and_print
from executions.models import Execution
from executions.services import execution_rerun

BAD_INPUT, REFUSED = 2, 3


def pairs(values: list[str], option: str) -> dict[str, str]:
    """NODE=VALUE arguments as a dict, naming the one that is not of that form."""
    found = {}
    for value in values:
        node_id, sign, rest = value.partition("=")
        if not sign or not node_id or not rest:
            raise CommandError(f"{option} {value!r}: expected NODE=VALUE", returncode=BAD_INPUT)
        found[node_id] = rest
    return found


class Command(BaseCommand):
    help = (
        "Run a past execution again from one of its nodes: the outputs of the nodes before it are reused "
        "(or replaced with --output), the node and what follows it run again, each with the agent version it "
        "ran unless --agent-version pins another. Prints the new execution's id (a re-run that copies more than "
        "RERUN_COPY_INLINE_MAX node runs is pending while a worker copies them); with --wait, its record as "
        "run_workflow --wait does (exit 0 on success, 1 otherwise); 2 on bad input; 3 when refused (a gate's "
        "output given other than by one of its deciders, named with --as)."
    )

    def add_arguments(self, parser):
        parser.add_argument("execution", help="the execution_id of the past run")
        parser.add_argument("--from-node", required=True, help="the node to run again")
        parser.add_argument("--step", type=int, help="state machine: the step of the past run's path (1-based)")
        parser.add_argument("--output", action="append", default=[], metavar="NODE=FILE",
                            help="reuse the JSON in FILE as NODE's output (repeatable)")
        parser.add_argument("--agent-version", action="append", default=[], metavar="NODE=VERSION",
                            help="run NODE with this version of its agent, or 'current' (repeatable)")
        parser.add_argument("--as", dest="username", help="the username making the re-run: recorded as its creator, "
                                                          "and needed to give a gate's output (only its deciders do)")
        parser.add_argument("--wait", action="store_true", help="wait for the run to end (or to escalate)")
        parser.add_argument("--timeout", type=float, default=600, help="seconds to wait before giving up (exit 1)")

    def handle(self, *args, execution, from_node, step, output, agent_version, username, wait, timeout, **options):
        source = Execution.objects.select_related("workflow").filter(execution_id=execution).first()
        if source is None:
            raise CommandError(f"no execution has the id {execution!r}", returncode=BAD_INPUT)
        person = None
        if username is not None:
            person = get_user_model().objects.filter(username=username).first()
            if person is None:
                raise CommandError(f"--as: no user is named {username!r}", returncode=BAD_INPUT)
        outputs = {}
        for node_id, path in pairs(output, "--output").items():
            try:
                outputs[node_id] = parse_json(Path(path).read_text(encoding="utf-8"))
            except OSError as error:
                raise CommandError(f"--output {node_id}={path}: {error.strerror}", returncode=BAD_INPUT) from error
            except DocumentError as error:
                raise CommandError(f"--output {node_id}={path}: {error.problem}", returncode=BAD_INPUT) from error
        try:
            rerun = execution_rerun(source=source, from_node=from_node, step=step, outputs=outputs,
                                    agent_versions=pairs(agent_version, "--agent-version"), actor=person)
        except (DocumentError, IllegalTransition) as error:
            raise CommandError(str(error), returncode=BAD_INPUT) from error
        except (Forbidden, DetailsRemoved) as error:
            raise CommandError(str(error), returncode=REFUSED) from error
        if not wait:
            self.stdout.write(rerun.execution_id)
            return
        wait_and_print(self, rerun, timeout)
