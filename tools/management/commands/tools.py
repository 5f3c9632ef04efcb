"""`manage.py tools`: the tool catalogue as JSON, every server asked afresh, so that an operator
sees at once whether a server they configured starts, answers and offers what `allow` names."""
import json

from django.core.management.base import BaseCommand

from tools import catalogue


class Command(BaseCommand):
    help = ("Print the tool catalogue as JSON: each tool's name, server, description, input schema, and "
            "whether its server could be listed now (reachable; problem says why not).")

    def handle(self, *args, **options):
        entries = [tool.as_dict() for tool in catalogue.entries(fresh=True)]
        for entry in entries:
            entry.setdefault("problem", "")
        self.stdout.write(json.dumps(entries, indent=2, ensure_ascii=False))
