import json
from itertools import chain

from django.core.management.base import BaseCommand, CommandError

from core.errors import DetailsRemoved, DocumentError, NotFound
from executions.comparison import comparison_in_full, executions_for_comparison

INVALID = 2


class Command(BaseCommand):
    help = (
        "Compare two runs of one workflow node run by node run and print the whole comparison as JSON: each run's "
        "summary and scores, every pair of node runs with what differs (status, tokens, agent version, output as a "
        "JSON diff, context decisions), then each node's verdict and the counts. The pairs are written as they are "
        "compared, a chunk of node runs at a time, so runs of any size fit in memory. Exit 2 when a run does not "
        "exist or the two are runs of different workflows."
    )

    def add_arguments(self, parser):
        parser.add_argument("a", help="the execution_id of one run")
        parser.add_argument("b", help="the execution_id of another run of the same workflow")

    def handle(self, *args, a, b, **options):
        try:
            members = comparison_in_full(*executions_for_comparison(a, b))
            first = next(members)  # the light half is read here: a refusal comes before any output
        except (NotFound, DocumentError, DetailsRemoved) as error:
            raise CommandError(error.message, returncode=INVALID) from error
        write = self.stdout.write
        write("{", ending="\n")
        for position, (member, value) in enumerate(chain([first], members)):
            write(",\n" if position else "", ending="")
            if member == "pairs":
                write('  "pairs": [', ending="")
                for index, pair in enumerate(value):
                    write(("," if index else "") + "\n    " + json.dumps(pair, ensure_ascii=False), ending="")
                write("\n  ]", ending="")
            else:
                text = json.dumps(value, ensure_ascii=False, indent=2).replace("\n", "\n  ")
                write(f"  {json.dumps(member)}: {text}", ending="")
        write("\n}")

