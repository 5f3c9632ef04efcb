"""Data messages (agent-data-message.ru.md): persistent context that carries `data`, an
optional JSON Schema for it, and an optional `kind` ("state", "input", …).

Messages with the same identity merge into one. The identity is the kind together with
the `_instance` (agent instancing): messages of different instances never merge, and a
message without a kind has no identity and never merges with anything.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from jsonschema.exceptions import SchemaError
from jsonschema_specifications import REGISTRY as METASCHEMAS
from referencing.exceptions import Unresolvable

from engine.errors import EngineError
from engine.json_schema import SchemaValidator, check_schema

MESSAGE_KEYS = ("data", "schema", "kind", "_instance")
# How many schema violations a message names before saying "and N more".
SHOWN_ERRORS = 5


class MessageError(EngineError, ValueError):
    """A malformed data message, or data that does not match its schema; says which."""

    code = "MESSAGE_INVALID"

    def __init__(self, message: str, *, index: int | None = None, identity: tuple[Any, ...] | None = None):
        super().__init__(message)
        self.index = index
        self.identity = identity


@dataclass(frozen=True)
class DataMessage:
    data: Any
    schema: dict[str, Any] | None = None
    kind: str | None = None
    instance: str | None = None

    @property
    def identity(self) -> tuple[Any, ...] | None:
        """(kind, instance) — None for a message without a kind, which merges with nothing."""
        if self.kind is None:
            return None
        return (self.kind, self.instance)


def parse_message(raw: dict[str, Any], *, index: int = 0) -> DataMessage:
    def refuse(problem: str) -> MessageError:
        return MessageError(f"data message {index}: {problem}", index=index)

    if not isinstance(raw, dict):
        raise refuse(f"must be an object, got {type(raw).__name__}")
    unknown = sorted(str(key) for key in raw if key not in MESSAGE_KEYS)
    if unknown:
        raise refuse(f"unknown key(s) {', '.join(map(repr, unknown))} (allowed: {', '.join(MESSAGE_KEYS)})")
    if "data" not in raw:
        raise refuse("'data' is required")
    data, schema, kind = raw["data"], raw.get("schema"), raw.get("kind")
    if kind is not None and (not isinstance(kind, str) or not kind):
        raise refuse(f"'kind' must be a non-empty string, got {kind!r}")
    instance = raw.get("_instance")
    if instance is not None and not isinstance(instance, str):
        raise refuse(f"'_instance' must be a string, got {instance!r}")
    if isinstance(data, dict) and data.get("_instance") is not None:
        inner = data["_instance"]
        if not isinstance(inner, str):
            raise refuse(f"data._instance must be a string, got {inner!r}")
        if instance is not None and inner != instance:
            raise refuse(f"'_instance' {instance!r} and data._instance {inner!r} disagree")
        instance = inner
    if schema is not None:
        if not isinstance(schema, dict):
            raise refuse(f"'schema' must be a JSON Schema object, got {type(schema).__name__}")
        try:
            check_schema(schema)
        except SchemaError as error:
            where = error.json_path
            raise refuse(f"'schema' is not a valid JSON Schema (at {where}): {error.message}") from None
        try:
            problems = _violations(schema, data)
        except Unresolvable as error:
            raise refuse(_unresolvable(error)) from None
        if problems:
            raise refuse(f"data does not match its schema: {problems}")
    return DataMessage(data=data, schema=schema, kind=kind, instance=instance)


def merge_messages(messages: list[DataMessage]) -> list[DataMessage]:
    """One message per identity, where its first message was; messages without an identity
    stay as they are. Object data is deep-merged (later keys win, nested objects merge,
    lists are replaced); any other data is replaced by the later message's. The schema is
    the latest one given, and the merged data must match it."""
    slots: list[list[int]] = []
    slot_of: dict[tuple[Any, ...], int] = {}
    for index, message in enumerate(messages):
        identity = message.identity
        if identity is None:
            slots.append([index])
        elif identity in slot_of:
            slots[slot_of[identity]].append(index)
        else:
            slot_of[identity] = len(slots)
            slots.append([index])
    merged = []
    for indices in slots:
        if len(indices) == 1:
            merged.append(messages[indices[0]])
            continue
        group = [messages[index] for index in indices]
        data = copy.deepcopy(group[0].data)
        for message in group[1:]:
            data = _merge_into(data, message.data)
        schema = next((message.schema for message in reversed(group) if message.schema is not None), None)
        first = group[0]
        if schema is not None and first.identity is not None:
            kind, instance = first.identity
            who = f"data messages {', '.join(map(str, indices))} (kind {kind!r}" + (
                f", _instance {instance!r})" if instance is not None else ")"
            )
            try:
                problems = _violations(schema, data)
            except Unresolvable as error:
                raise MessageError(f"{who}: {_unresolvable(error)}", identity=first.identity) from None
            if problems:
                raise MessageError(
                    f"{who} merged into data that does not match the schema: {problems}", identity=first.identity
                )
        merged.append(DataMessage(data=data, schema=schema, kind=first.kind, instance=first.instance))
    return merged


def _merge_into(merged: Any, later: Any) -> Any:
    """`later` merged into `merged` (a private copy, changed in place); the messages' own
    data is never changed."""
    if not (isinstance(merged, dict) and isinstance(later, dict)):
        return copy.deepcopy(later)
    for key, value in later.items():
        merged[key] = _merge_into(merged[key], value) if isinstance(merged.get(key), dict) else copy.deepcopy(value)
    return merged


def _violations(schema: dict[str, Any], data: Any) -> str:
    """The schema violations of data, each with its JSON path; '' when it matches."""
    # Only references within the schema (and to the standard meta-schemas) are followed:
    # validating context must never fetch anything from the network.
    validator = SchemaValidator(schema, registry=METASCHEMAS)
    errors = sorted(validator.iter_errors(data), key=lambda error: list(map(str, error.path)))
    if not errors:
        return ""
    lines = list(dict.fromkeys(f"{error.json_path}: {error.message}" for error in errors))
    shown = lines[:SHOWN_ERRORS]
    more = len(lines) - SHOWN_ERRORS
    return "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")



def _unresolvable(error: Unresolvable) -> str:
    return f"'schema' has a $ref that cannot be resolved ({error}); only references within the schema are followed"
