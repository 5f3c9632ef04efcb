import json

from django.core.management.base import BaseCommand, CommandError

from core.errors import DocumentError, NotFound
from executions.comparison import execution_comparison, executions_for_comparison

INVALID = 2


class Command(BaseCommand):
    help = (
        "Compare two runs of one workflow node run by node run and print the comparison as JSON: each run's "
        "summary and scores, the aligned node runs with what differs (status, tokens, agent version, output as a "
        "JSON diff, context decisions) and the counts. Exit 2 when a run does not exist or the two are runs of "
        "different workflows."
    )

    def add_arguments(self, parser):
        parser.add_argument("a", help="the execution_id of one run")
        parser.add_argument("b", help="the execution_id of another run of the same workflow")

    def handle(self, *args, a, b, **options):
        try:
            comparison = execution_comparison(*executions_for_comparison(a, b))
        except (NotFound, DocumentError) as error:
            raise CommandError(error.message, returncode=INVALID)
        self.stdout.write(json.dumps(comparison, ensure_ascii=False, indent=2))
