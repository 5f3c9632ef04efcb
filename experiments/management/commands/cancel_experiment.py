from django.core.management.base import BaseCommand, CommandError

from core.errors import SwitchyardError
from experiments.experiment_selectors import experiment_get
from experiments.experiment_services import experiment_cancel


class Command(BaseCommand):
    help = "Cancel an experiment: its pending items are cancelled and its running items' runs cancelled."

    def add_arguments(self, parser):
        parser.add_argument("experiment_id")

    def handle(self, *args, experiment_id, **options):
        try:
            experiment = experiment_cancel(experiment=experiment_get(experiment_id), actor="manage.py")
        except SwitchyardError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"{experiment.experiment_id} {experiment.status}")
