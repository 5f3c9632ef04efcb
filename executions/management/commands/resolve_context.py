import json
import sys

from django.core.management.base import BaseCommand, CommandError

from core.errors import DocumentError
from core.jsonutil import check_shape, parse_json
from executions.context import assemble_node_context, outputs_from
from engine.context.limits import ContextLimits
from engine.context.messages import MessageError
from engine.context.resolution import ResolutionAborted
from engine.tokens import UnknownEncoding
from workflows.documents import NODE_INPUT_SHAPE

INVALID = 2
SHAPE = {
    "type": "object",
    "required": ["agent", "input"],
    "additionalProperties": False,
    "properties": {
        "task_id": {"type": "string"},
        "agent": {
            "type": "object",
            "properties": {
                "role": {"type": "string"},
                "encoding": {"type": "string"},
                "context_limits": {"type": "object"},
                "runtime": {"type": "object"},
            },
        },
        "task_outputs": {"type": "object"},
        "input": NODE_INPUT_SHAPE,
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["content"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "content": {},
                    "priority": {"type": "integer", "minimum": 1, "maximum": 4},
                    "data_type": {"type": "string"},
                    "summary_config": {"type": "object"},
                },
            },
        },
        "messages": {"type": "array", "items": {"type": "object"}},
    },
}


class Command(BaseCommand):
    help = (
        "Assemble one node's context from a JSON description (a file, or - for stdin) and print what "
        "each input resolved to, how it was passed and why, the resolution failures and the "
        "context_management record. Exit 2 when the description is invalid, 1 when a reference aborts."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="a JSON file, or - to read standard input")

    def handle(self, *args, path, **options):
        try:
            text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"cannot read {path}: {error}", returncode=INVALID)
        try:
            payload = parse_json(text)
        except DocumentError as error:
            raise CommandError(f"{path}: {error.message}", returncode=INVALID)
        try:
            check_shape(payload, SHAPE, "context description")
            agent = payload["agent"]
            runtime = agent.get("runtime") or {}
            role = agent.get("role", runtime.get("role", ""))
            encoding = agent.get("encoding", runtime.get("encoding", "cl100k_base"))
            limits = ContextLimits.from_dict(agent.get("context_limits") or {}, role=role)
            assembly = assemble_node_context(
                limits=limits, encoding=encoding, task_id=payload.get("task_id", ""), node_input=payload["input"],
                task_output=outputs_from(payload.get("task_outputs") or {}),
                items=payload.get("items") or [], messages=payload.get("messages") or [],
            )
        except DocumentError as error:
            raise CommandError(error.message, returncode=INVALID)
        except (ValueError, UnknownEncoding, MessageError) as error:
            raise CommandError(str(error), returncode=INVALID)
        except ResolutionAborted as aborted:
            self.stdout.write(json.dumps({"aborted": aborted.failure.as_dict(),
                                          "resolution_failures": aborted.failures}, ensure_ascii=False, indent=2))
            raise CommandError(str(aborted), returncode=1)
        self.stdout.write(json.dumps(assembly.as_dict(), ensure_ascii=False, indent=2))
