import json

from django.core.management.base import BaseCommand, CommandError

from core.errors import SwitchyardError
from workflows import selectors, services

INVALID = 2


class Command(BaseCommand):
    help = (
        "A workflow's versions: list them (number, when, who, note, runs), print what changed between two "
        "as JSON (--diff A B), or restore one as a new version (--restore N). Exit 2 when the workflow or a "
        "version does not exist, or a restore is refused."
    )

    def add_arguments(self, parser):
        parser.add_argument("workflow", help="a workflow id")
        actions = parser.add_mutually_exclusive_group()
        actions.add_argument("--diff", nargs=2, type=int, metavar=("A", "B"),
                             help="print what changed from version A to version B, as JSON")
        actions.add_argument("--restore", type=int, metavar="N",
                             help="make version N the workflow's definition again, as a new version")
        parser.add_argument("--actor", default="", help="who restores (recorded on the new version)")

    def handle(self, *args, workflow, diff, restore, actor, **options):
        try:
            found = selectors.workflow_get(workflow)
            if diff:
                self.stdout.write(json.dumps(selectors.workflow_versions_diff(found, *diff), ensure_ascii=False, indent=2))
            elif restore is not None:
                version = services.workflow_version_restore(workflow=found, number=restore, actor=actor)
                self.stdout.write(f"version {version.number}: {version.note}")
            else:
                for version in selectors.workflow_versions(found):
                    note = f"  {version.note}" if version.note else ""
                    self.stdout.write(f"{version.number}\t{version.created_at:%Y-%m-%d %H:%M:%S}\t"
                                      f"{version.created_by or '-'}\t{version.runs} run(s){note}")
        except SwitchyardError as error:
            raise CommandError(str(error), returncode=INVALID) from error
