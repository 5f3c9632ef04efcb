import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from core.errors import DocumentError, NotFound
from experiments import comparison

BAD_INPUT = 2


class Command(BaseCommand):
    help = ("Compare experiments over one dataset item by item against a baseline. Prints JSON: each scorer's "
            "delta with its paired bootstrap interval and verdict, the counts of rows regressed and improved, "
            "and the rows (scores, deltas, flags; no outputs — --csv writes them).")

    def add_arguments(self, parser):
        parser.add_argument("experiments", nargs="+", metavar="EXPERIMENT", help="2 or more experiment ids")
        parser.add_argument("--baseline", default="", help="the experiment the others are compared with "
                                                           "(default: the oldest)")
        parser.add_argument("--threshold", type=float, default=comparison.DEFAULT_THRESHOLD,
                            help="how far a score must move to flag a row (default %(default)s)")
        parser.add_argument("--only", choices=comparison.ONLY, help="only the rows regressed, improved or failed")
        parser.add_argument("--rows", type=int, metavar="N", help="print at most N rows (default: all)")
        parser.add_argument("--csv", metavar="FILE", help="also write the rows, with their outputs, as CSV to FILE")

    def handle(self, *args, experiments, baseline, threshold, only, rows, csv, **options):
        if rows is not None and rows < 0:
            raise CommandError(f"--rows is 0 or more, not {rows}", returncode=BAD_INPUT)
        try:
            compared = comparison.experiments_compared(comparison.experiment_ids(experiments),
                                                       baseline=baseline or None, threshold=threshold)
        except (DocumentError, NotFound) as error:
            raise CommandError(str(error), returncode=BAD_INPUT) from error
        kept = compared.rows(comparison.RowFilters(only=only or ""))
        if csv:
            Path(csv).write_text(comparison.csv_text(compared, kept), encoding="utf-8")
        printed = kept if rows is None else kept[:rows]
        out = {**comparison.summary_out(compared, kept),
               "rows": [comparison.row_out(compared, row, diffs=False) for row in printed]}
        self.stdout.write(json.dumps(out, indent=2, default=str, ensure_ascii=False))
