import json

from django.core.management.base import BaseCommand, CommandError

from core.documents import KINDS_BY_NAME, export_document
from core.errors import SwitchyardError


class Command(BaseCommand):
    help = "Print one object as its seed-shaped JSON document."

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=sorted(KINDS_BY_NAME))
        parser.add_argument("id")

    def handle(self, *args, kind, id, **options):
        try:
            document = export_document(kind, id)
        except SwitchyardError as error:
            raise CommandError(error.message) from error
        self.stdout.write(json.dumps(document, indent=2, ensure_ascii=False))
