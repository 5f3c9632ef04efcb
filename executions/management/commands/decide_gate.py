from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from core.errors import DocumentError, IllegalTransition, NotFound
from core.jsonutil import parse_json
from core.roles import Forbidden
from executions.models import Execution
from executions.services import gate_decide

BAD_INPUT, REFUSED = 2, 3


class Command(BaseCommand):
    help = ("Decide a gate waiting in a run, as the user --as (who must be one of its deciders): approve, reject, "
            "or edit (--output FILE: the JSON passed on instead of the data shown). Prints the decision; exit 2 on "
            "bad input, 3 when refused (not a decider, already decided, the run ended).")

    def add_arguments(self, parser):
        parser.add_argument("execution", help="the run's execution_id")
        parser.add_argument("node", help="the gate's node id")
        parser.add_argument("decision", choices=["approve", "reject", "edit"])
        parser.add_argument("--as", dest="username", required=True, help="the username deciding")
        parser.add_argument("--comment", default="", help="why (kept with the decision)")
        parser.add_argument("--output", help="with edit: a JSON file with the data to pass on")

    def handle(self, *args, execution, node, decision, username, comment, output, **options):
        run_ = Execution.objects.select_related("workflow").filter(execution_id=execution).first()
        if run_ is None:
            raise CommandError(f"no execution has the id {execution!r}", returncode=BAD_INPUT)
        person = get_user_model().objects.filter(username=username).first()
        if person is None:
            raise CommandError(f"--as: no user is named {username!r}", returncode=BAD_INPUT)
        gate = run_.node_runs.filter(node_id=node, gate__isnull=False).order_by("-sequence").first()
        if gate is None:
            raise CommandError(f"run {execution} has no gate '{node}'", returncode=BAD_INPUT)
        edited = None
        if output is not None:
            try:
                edited = parse_json(Path(output).read_text(encoding="utf-8"))
            except OSError as error:
                raise CommandError(f"--output {output}: {error.strerror}", returncode=BAD_INPUT) from error
            except DocumentError as error:
                raise CommandError(f"--output {output}: {error.problem}", returncode=BAD_INPUT) from error
        try:
            decided = gate_decide(execution=run_, node_run_id=gate.pk, decision=decision, comment=comment,
                                  output=edited, actor=person)
        except (DocumentError, NotFound) as error:
            raise CommandError(str(error), returncode=BAD_INPUT) from error
        except (Forbidden, IllegalTransition) as error:
            raise CommandError(str(error), returncode=REFUSED) from error
        run_.refresh_from_db()
        self.stdout.write(f"{decided.node_id}: {decision} by {username}; run {execution} is {run_.status}")
