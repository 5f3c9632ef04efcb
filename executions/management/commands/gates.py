import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from executions.selectors import pending_gate
from executions.services import gates_pending

BAD_INPUT = 2


class Command(BaseCommand):
    help = ("List the gates waiting for a decision that USER may make (every waiting gate, without --user), as "
            "JSON, oldest first; decide one with manage.py decide_gate. Exit 2 on an unknown user.")

    def add_arguments(self, parser):
        parser.add_argument("--user", help="the username whose gates to list")

    def handle(self, *args, user, **options):
        if user is None:
            person = None
        else:
            person = get_user_model().objects.filter(username=user).first()
            if person is None:
                raise CommandError(f"no user is named {user!r}", returncode=BAD_INPUT)
        runs = gates_pending(user=person)
        self.stdout.write(json.dumps([pending_gate(run) for run in runs], ensure_ascii=False, indent=2))
