"""`manage.py schedules list|add|pause|resume|delete`: schedules from the command line."""
from django.core.management.base import BaseCommand, CommandError

from core.errors import SwitchyardError
from core.jsonutil import parse_json
from schedules import selectors, services
from schedules.models import Schedule


class Command(BaseCommand):
    help = ("Workflows started on a cron schedule: list them (with their next fire times), add one, pause, resume "
            "or delete one by name.")

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True, metavar="list|add|pause|resume|delete")
        listing = actions.add_parser("list", help="the schedules, with their next fire times")
        listing.add_argument("--workflow", default="", help="only this workflow's")
        add = actions.add_parser("add", help="schedule a workflow")
        add.add_argument("workflow_id")
        add.add_argument("name")
        add.add_argument("--cron", required=True, help="five fields, e.g. '0 9 * * mon-fri'")
        add.add_argument("--timezone", default="UTC", help="an IANA zone, e.g. Europe/Berlin (default UTC)")
        add.add_argument("--input", default="{}", help="the runs' input, a JSON object")
        add.add_argument("--version", type=int, default=None, help="the version each run runs (default: the latest)")
        add.add_argument("--catch-up", action="store_true",
                         help="after the beat was down, start one run for the latest missed fire (default: skip it)")
        add.add_argument("--paused", action="store_true", help="add it paused")
        for name, text in (("pause", "stop a schedule firing"), ("resume", "let a paused schedule fire again"),
                           ("delete", "delete a schedule (the runs it started stay)")):
            actions.add_parser(name, help=text).add_argument("name")

    def handle(self, *args, action, **options):
        try:
            getattr(self, f"do_{action}")(**options)
        except SwitchyardError as error:
            raise CommandError(str(error)) from error

    def do_list(self, *, workflow, **options):
        schedules = list(selectors.schedule_list(workflow_id=workflow))
        if not schedules:
            self.stdout.write("No schedule" + (f" of {workflow}." if workflow else "."))
        for schedule in schedules:
            state = "enabled" if schedule.enabled else "paused"
            self.stdout.write(f"{schedule.name}\t{schedule.workflow.workflow_id}\t{schedule.cron}\t{schedule.timezone}"
                              f"\t{state}\t{selectors.cron_words(schedule)}")
            for time in selectors.next_fires(schedule):
                self.stdout.write(f"\tnext {time.isoformat()}")

    def do_add(self, *, workflow_id, name, cron, timezone, input, version, catch_up, paused, **options):
        try:
            given = parse_json(input)
        except SwitchyardError as error:
            raise CommandError(f"--input: {error}") from None
        schedule = services.schedule_create(
            workflow_id=workflow_id, name=name, cron=cron, timezone_name=timezone, input=given, version=version,
            missed=Schedule.Missed.CATCH_UP if catch_up else Schedule.Missed.SKIP, enabled=not paused)
        self.stdout.write(f"{schedule.name} added: {selectors.cron_words(schedule)}, in {schedule.timezone}")

    def do_pause(self, *, name, **options):
        schedule = services.schedule_pause(schedule=selectors.schedule_by_name(name))
        self.stdout.write(f"{schedule.name} paused")

    def do_resume(self, *, name, **options):
        schedule = services.schedule_resume(schedule=selectors.schedule_by_name(name))
        self.stdout.write(f"{schedule.name} resumed")

    def do_delete(self, *, name, **options):
        services.schedule_delete(schedule=selectors.schedule_by_name(name))
        self.stdout.write(f"{name} deleted")

