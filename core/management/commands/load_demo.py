from django.conf import settings
from django.core.management.base import BaseCommand

from core.demo import DOCUMENTS, write_workspace_files
from core.documents import import_documents


class Command(BaseCommand):
    help = "Load the demo agents, blueprint and workflows, and write the sample paper. Safe to run again."

    def handle(self, *args, **options):
        report = import_documents(DOCUMENTS, actor="demo")
        changed = [entry for entry in report if entry["result"] != "unchanged"]
        for entry in changed:
            self.stdout.write(f"{entry['result']}: {entry['kind']} {entry['id']}")
        for path in write_workspace_files(settings.WORKSPACE_ROOT):
            self.stdout.write(f"wrote {path}")
        self.stdout.write(f"Demo data ready ({len(report)} documents, {len(changed)} changed).")
