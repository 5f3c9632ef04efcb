from django.core.management.base import BaseCommand, CommandError

from core.errors import SwitchyardError
from experiments import dataset_selectors as selectors
from experiments.dataset_files import FORMATS

INVALID = 2


class Command(BaseCommand):
    help = ("Write a version of a dataset (the latest unless --version) to standard output as JSONL, JSON, or CSV "
            "with the columns it was imported with. Exit 2 when the dataset or version does not exist.")

    def add_base_argument(self, parser, *args, **kwargs):
        """`--version` here names a dataset's version, not the program's (Django's own option)."""
        if "--version" not in args:
            super().add_base_argument(parser, *args, **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("name", help="the dataset's name")
        parser.add_argument("--version", type=int, dest="number", help="a version number")
        parser.add_argument("--format", choices=FORMATS, default="jsonl")

    def handle(self, *args, name, number, format, **options):
        try:
            export = selectors.dataset_export(selectors.dataset_version(selectors.dataset_get(name), number), format)
            for chunk in export.chunks:
                self.stdout.write(chunk, ending="")
        except SwitchyardError as error:
            raise CommandError(str(error), returncode=INVALID) from error
