"""`python manage.py release_workflow WORKFLOW VERSION --user NAME`

Marks version VERSION of workflow WORKFLOW released, as the user NAME (an author), if it
passes the workflow's release requirement (experiments/releases.py); prints who released it
and when. Exit 0 when released, 1 when refused (naming the failing scorers, or the missing
experiment), 2 on bad input.
"""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from core.errors import SwitchyardError
from experiments.releases import workflow_version_release

BAD_INPUT, REFUSED = 2, 1


class Command(BaseCommand):
    help = "Release a workflow version as an author, if it passes the workflow's release requirement."

    def add_arguments(self, parser):
        parser.add_argument("workflow_id")
        parser.add_argument("version", type=int)
        parser.add_argument("--user", required=True, help="the username to act as (an author)")

    def handle(self, *args, workflow_id, version, user, **options):
        actor = get_user_model().objects.filter(username=user, is_active=True).first()
        if actor is None:
            raise CommandError(f"--user: no active user '{user}'", returncode=BAD_INPUT)
        try:
            released = workflow_version_release(workflow_id=workflow_id, number=version, user=actor)
        except SwitchyardError as error:
            raise CommandError(str(error), returncode=BAD_INPUT if error.code == "NOT_FOUND" else REFUSED) from None
        self.stdout.write(f"{workflow_id} v{released.number} released by {released.released_by} "
                          f"at {released.released_at.isoformat()}")
