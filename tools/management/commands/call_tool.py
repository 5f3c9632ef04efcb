"""`manage.py call_tool SERVER TOOL --arguments JSON`: call one tool once, the way an agent's
call is made (tools.catalogue.call: the arguments checked against the tool's schema, the call
held to its server's time limit, the result to its cap), and print how it went."""
import json

from django.core.management.base import BaseCommand, CommandError

from core.errors import DocumentError
from core.jsonutil import parse_json
from tools import catalogue


class Command(BaseCommand):
    help = ("Call one tool of the catalogue once and print its status, result and duration as JSON; "
            "exit 1 when the call fails, with its code and message.")

    def add_arguments(self, parser):
        parser.add_argument("server", help="a server of the catalogue: builtin, or a [tools.NAME] of the backends file")
        parser.add_argument("tool", help="the tool's name on that server")
        parser.add_argument("--arguments", default="{}", help="the arguments, a JSON object (default {})")

    def handle(self, *args, server, tool, arguments, **options):
        try:
            given = parse_json(arguments)
        except DocumentError as error:
            raise CommandError(f"--arguments: {error.message}") from None
        name = f"{server}.{tool}"
        found, missing = catalogue.resolve([name])
        if missing or len(found) != 1:
            known = ", ".join(catalogue.names()) or "none"
            raise CommandError(f"no tool named {name} in the catalogue (its tools: {known})")
        outcome = catalogue.call(found[0], given)
        if not outcome.ok:
            raise CommandError(f"{name} failed after {outcome.duration_ms:.0f} ms: {outcome.status}: {outcome.error}")
        self.stdout.write(json.dumps({"status": outcome.status, "result": outcome.result,
                                      "duration_ms": outcome.duration_ms}, indent=2, ensure_ascii=False, default=str))
