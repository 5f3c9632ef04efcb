import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from core.errors import DocumentError
from core.jsonutil import check_shape, parse_json
from engine.context.limits import ContextLimits
from engine.context.messages import MessageError
from engine.context.resolution import ResolutionAborted
from engine.context.trimming import InstructionsTooLarge
from engine.shapes import NodeInput, Omittable, OpenShape, Priority, Shape, Text
from engine.tokens import DEFAULT_ENCODING, UnknownEncoding
from executions.context import assemble_node_context, outputs_from

ABORTED, INVALID, TOO_LARGE = 1, 2, 3


class DescribedAgent(OpenShape):
    role: Omittable[str] = None
    encoding: Omittable[str] = None
    context_limits: Omittable[dict[str, Any]] = None
    runtime: Omittable[dict[str, Any]] = None


class DescribedItem(Shape):
    """Data given inline rather than by reference."""

    name: Omittable[Text] = None
    content: Any
    priority: Omittable[Priority] = None
    data_type: Omittable[str] = None
    summary_config: Omittable[dict[str, Any]] = None


class ContextDescription(Shape):
    """What the command reads: an agent, a node's input, and what its references read."""

    task_id: Omittable[str] = None
    agent: DescribedAgent
    task_outputs: Omittable[dict[str, Any]] = None
    input: NodeInput
    items: Omittable[list[DescribedItem]] = None
    messages: Omittable[list[dict[str, Any]]] = None


class Command(BaseCommand):
    help = (
        "Assemble one node's context from a JSON description (a file, or - for stdin) and print what "
        "each input resolved to, how it was passed and why, the resolution failures and the "
        "context_management record. Exit 2 when the description is invalid, 1 when a reference aborts, 3 when "
        "the task instructions and system prompt alone exceed the context limit (they are never truncated)."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="a JSON file, or - to read standard input")

    def handle(self, *args, path, **options):
        try:
            text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"cannot read {path}: {error}", returncode=INVALID) from error
        try:
            payload = parse_json(text)
        except DocumentError as error:
            raise CommandError(f"{path}: {error.message}", returncode=INVALID) from error
        try:
            check_shape(payload, ContextDescription, "context description")
            agent = payload["agent"]
            runtime = agent.get("runtime") or {}
            role = agent.get("role", runtime.get("role", ""))
            encoding = agent.get("encoding", runtime.get("encoding", DEFAULT_ENCODING))
            limits = ContextLimits.from_dict(agent.get("context_limits") or {}, role=role)
            assembly = assemble_node_context(
                limits=limits, encoding=encoding, task_id=payload.get("task_id", ""), node_input=payload["input"],
                task_output=outputs_from(payload.get("task_outputs") or {}),
                items=payload.get("items") or [], messages=payload.get("messages") or [],
            )
        except DocumentError as error:
            raise CommandError(error.message, returncode=INVALID) from error
        except (ValueError, UnknownEncoding, MessageError) as error:
            raise CommandError(str(error), returncode=INVALID) from error
        except ResolutionAborted as aborted:
            self.stdout.write(json.dumps({"aborted": aborted.failure.as_dict(),
                                          "resolution_failures": aborted.failures}, ensure_ascii=False, indent=2))
            raise CommandError(str(aborted), returncode=ABORTED) from aborted
        except InstructionsTooLarge as error:  # a run of this node would fail with the same code
            raise CommandError(f"{error.code}: {error.message}", returncode=TOO_LARGE) from error
        self.stdout.write(json.dumps(assembly.as_dict(), ensure_ascii=False, indent=2))
