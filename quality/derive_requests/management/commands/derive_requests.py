"""`python manage.py derive_requests [--status pending] [--trigger T] [--agent ID]`

Lists derive requests (core-data-structures §6) as a JSON array, pending ones first, each
with who raised and decided it and its history.
"""
import json

from django.core.management.base import BaseCommand

from agents.models import DeriveRequest
from quality.derive_requests import selectors


class Command(BaseCommand):
    help = "List derive requests as JSON (pending first), optionally by status, trigger or parent agent."

    def add_arguments(self, parser):
        parser.add_argument("--status", choices=DeriveRequest.Status.values)
        parser.add_argument("--trigger", choices=DeriveRequest.Trigger.values)
        parser.add_argument("--agent", help="only requests to derive from this agent")

    def handle(self, *args, status, trigger, agent, **options):
        requests = selectors.derive_request_queue(status=status or "", trigger=trigger or "").prefetch_related("events")
        if agent:
            requests = requests.filter(parent_agent__agent_id=agent)
        documents = [selectors.derive_request_full_document(request) for request in requests]
        self.stdout.write(json.dumps(documents, indent=2, ensure_ascii=False))
