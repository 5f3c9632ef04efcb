from collections import Counter

from django.conf import settings
from django.core.management.base import BaseCommand

from demo.services import demo_documents_import, demo_knowledge_load, demo_workspace_write


class Command(BaseCommand):
    help = ("Load the demo agents, blueprint and workflows, the knowledge base, and write the sample paper. "
            "Safe to run again.")

    def handle(self, *args, **options):
        report = demo_documents_import()
        changed = [entry for entry in report if entry["result"] != "unchanged"]
        for entry in changed:
            self.stdout.write(f"{entry['result']}: {entry['kind']} {entry['id']}")
        knowledge = demo_knowledge_load()
        knowledge_changed = [entry for entry in knowledge if entry["result"] != "unchanged"]
        for (result, kind), count in Counter((e["result"], e["kind"]) for e in knowledge_changed).items():
            self.stdout.write(f"{result}: {kind} ({count})")
        for path in demo_workspace_write(workspace=settings.WORKSPACE_ROOT):
            self.stdout.write(f"wrote {path}")
        self.stdout.write(f"Demo data ready ({len(report)} documents and {len(knowledge)} knowledge rows, "
                          f"{len(changed) + len(knowledge_changed)} changed).")
