"""`manage.py audit`: the audit trail as JSON lines, filtered, read a chunk at a time."""
import json

from django.core.management.base import BaseCommand, CommandError
from django.core.serializers.json import DjangoJSONEncoder

from core.audit_selectors import AuditFilters, BadFilter, audit_entries, entry_out

CHUNK = 2_000  # entries read at a time: the trail is never loaded whole


class Command(BaseCommand):
    help = ("Print audit trail entries as JSON lines (one object per line), oldest first unless "
            "--newest-first, filtered by person, object, action and time.")

    def add_arguments(self, parser):
        parser.add_argument("--actor", default="", help="a username: what they did")
        parser.add_argument("--object-type", default="", help="e.g. agent, workflow, execution, user, token")
        parser.add_argument("--object-id", default="", help="the object's id, e.g. an agent_id or an execution_id")
        parser.add_argument("--action", default="", help="e.g. workflow.update, gate.decide, user.roles")
        parser.add_argument("--since", default="", help="an ISO date or datetime (UTC when no offset): at or after it")
        parser.add_argument("--until", default="",
                            help="an ISO date or datetime (UTC when no offset): before it; a date alone takes that day")
        parser.add_argument("--newest-first", action="store_true", help="newest entries first")

    def handle(self, *args, newest_first: bool, **options):
        try:
            filters = AuditFilters.parse(options)
        except BadFilter as error:
            raise CommandError(f"--{error.message}") from None
        for entry in audit_entries(filters, newest_first=newest_first).iterator(chunk_size=CHUNK):
            self.stdout.write(json.dumps(entry_out(entry), cls=DjangoJSONEncoder, ensure_ascii=False))
