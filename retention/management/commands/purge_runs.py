import json
from datetime import date, datetime, time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from core.audit import acting
from retention.policy import DELETE, purge_selection
from retention.purge import Purge, Report
from workflows.models import Workflow

BAD_INPUT = 2


def parse_before(text: str) -> datetime:
    """`--before`: a date (its midnight, in the project's time zone) or an ISO 8601 time."""
    try:
        if len(text) == 10:
            return timezone.make_aware(datetime.combine(date.fromisoformat(text), time.min))
        moment = datetime.fromisoformat(text)
    except ValueError as error:
        raise CommandError(f"--before: {text!r} is not a date (YYYY-MM-DD) or an ISO 8601 time",
                           returncode=BAD_INPUT) from error
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment)


class Command(BaseCommand):
    help = ("Delete the ended runs created before --before (a date, or an ISO 8601 time), of one workflow "
            "(--workflow) or all, with their node runs and child runs, in batches of --batch node runs; "
            "--dry-run says what would go and deletes nothing. Runs still going, waiting on a gate, or named "
            "by an experiment, a dataset, a derive request's evidence or a re-run are kept back, and counted "
            "by why. Exit 2 on bad input.")

    def add_arguments(self, parser):
        parser.add_argument("--before", required=True, help="YYYY-MM-DD (midnight) or an ISO 8601 time")
        parser.add_argument("--workflow", help="the workflow_id whose runs to delete (default: every workflow's)")
        parser.add_argument("--dry-run", action="store_true", help="count what would be deleted; delete nothing")
        parser.add_argument("--batch", type=int, default=None,
                            help=f"node runs per transaction (default RETENTION_BATCH, {settings.RETENTION_BATCH})")
        parser.add_argument("--pause", type=float, default=None,
                            help="rest after each transaction, times as long as it took (default RETENTION_PAUSE, "
                                 f"{settings.RETENTION_PAUSE:g}; 0: none)")
        parser.add_argument("--json", dest="as_json", action="store_true", help="print the report as JSON")

    def handle(self, *args, before, workflow, dry_run, batch, pause, as_json, **options):
        moment = parse_before(before)
        workflow_pk = None
        if workflow is not None:
            workflow_pk = Workflow.objects.filter(workflow_id=workflow).values_list("pk", flat=True).first()
            if workflow_pk is None:
                raise CommandError(f"--workflow: no workflow has the id {workflow!r}", returncode=BAD_INPUT)
        if batch is not None and batch < 1:
            raise CommandError(f"--batch: {batch} must be at least 1", returncode=BAD_INPUT)
        if pause is not None and pause < 0:
            raise CommandError(f"--pause: {pause:g} cannot be negative", returncode=BAD_INPUT)
        purge = Purge(batch=batch or settings.RETENTION_BATCH, apply=not dry_run,
                      pause=settings.RETENTION_PAUSE if pause is None else pause)
        with acting("command", "purge_runs"):  # as manage.py says, for a caller that is not it
            report = purge.run(DELETE, purge_selection(moment, workflow_pk))
        if as_json:
            self.stdout.write(json.dumps({"before": moment.isoformat(), "workflow": workflow, "dry_run": dry_run,
                                     **report.as_dict()}, indent=2))
            return
        self.stdout.write(describe(report, before=moment, workflow=workflow, dry_run=dry_run))


def describe(report: Report, *, before: datetime, workflow: str | None, dry_run: bool) -> str:
    """The report in words: what went (or would), and what was kept back and why."""
    scope = f"workflow {workflow}" if workflow else "every workflow"
    verb = "would delete" if dry_run else "deleted"
    runs = sum(report.runs.values())
    by_status = ", ".join(f"{status} {n}" for status, n in sorted(report.runs.items())) or "none"
    lines = [f"Runs of {scope} created before {before.isoformat()}:",
             f"  {verb}: {runs} runs ({by_status}) and {report.node_runs} node runs"
             + ("" if dry_run else f", in {report.batches} transactions")]
    kept = ", ".join(f"{reason} {n}" for reason, n in sorted(report.kept.items()))
    lines.append(f"  kept back: {sum(report.kept.values())} runs" + (f" ({kept})" if kept else ""))
    return "\n".join(lines)
