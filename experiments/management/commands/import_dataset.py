import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from core.errors import SwitchyardError
from experiments import dataset_services as services
from experiments.dataset_files import FORMATS, format_of

INVALID = 2


class Command(BaseCommand):
    help = ("Import a JSONL, JSON or CSV file as the next version of a dataset (a new name creates it); prints "
            'JSON {"dataset", "version", "items"}. Anything wrong is refused naming its line, nothing is stored, '
            "and the command exits 2.")

    def add_arguments(self, parser):
        parser.add_argument("name", help="the dataset's name")
        parser.add_argument("file", help="the file to import")
        parser.add_argument("--format", choices=FORMATS, help="else told by the file's extension")
        parser.add_argument("--column", action="append", default=[], metavar="COL=TARGET",
                            help="CSV: fill TARGET (id, expected, input.KEY, metadata.KEY) from column COL")
        parser.add_argument("--append", action="store_true", help="add to the latest version's items, not replace")
        parser.add_argument("--version-note", default="", help="why this version is made")
        parser.add_argument("--actor", default="", help="who imports (recorded on the version)")

    def handle(self, *args, name, file, format, column, append, version_note, actor, **options):
        path = Path(file)
        try:
            services.check_size(path.stat().st_size)
            version = services.dataset_import(name=name, data=path.read_bytes(), fmt=format_of(path.name, format),
                                              columns=column, append=append, note=version_note, actor=actor)
        except OSError as error:
            raise CommandError(f"cannot read {file}: {error.strerror}", returncode=INVALID) from None
        except SwitchyardError as error:
            raise CommandError(str(error), returncode=INVALID) from error
        self.stdout.write(json.dumps({"dataset": name, "version": version.number, "items": version.item_count}))
