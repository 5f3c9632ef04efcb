import sys

from django.core.management.base import BaseCommand, CommandError

from core.documents import import_documents
from core.errors import DocumentError, WorkflowInvalid
from core.jsonutil import parse_json


class Command(BaseCommand):
    help = "Import seed-shaped JSON documents (one object or a list) from a file or '-' for stdin, in one transaction."

    def add_arguments(self, parser):
        parser.add_argument("path", help="a JSON file, or - to read standard input")
        parser.add_argument("--actor", default="import_document", help="recorded as created_by")

    def handle(self, *args, path, actor, **options):
        try:
            text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"cannot read {path}: {error}") from error
        try:
            payload = parse_json(text)
        except DocumentError as error:
            raise CommandError(f"{path}: {error.message}; nothing was imported") from error
        try:
            report = import_documents(payload, actor=actor)
        except WorkflowInvalid as error:
            problems = "\n".join(f"  - {p['where']}: {p['message']}" for p in error.problems)
            raise CommandError(f"{error.message.split(':')[0]} ({len(error.problems)} problem(s)); nothing was imported:\n{problems}") from error
        except DocumentError as error:
            raise CommandError(f"{error.message}; nothing was imported") from error
        for entry in report:
            self.stdout.write(f"{entry['result']}: {entry['kind']} {entry['id']}")
