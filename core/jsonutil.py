"""Small helpers shared by the document (interchange) code of every app."""
from __future__ import annotations

from datetime import datetime, timezone as dt_timezone
from typing import Any

from core.errors import DocumentError
from executions.engine.json_schema import SchemaValidator


def iso(value: datetime | None) -> str | None:
    """A datetime in the seeds' form: UTC with a trailing Z, microseconds only when present."""
    if value is None:
        return None
    text = value.astimezone(dt_timezone.utc).isoformat()
    return text.replace("+00:00", "Z")


def parse_datetime(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise DocumentError(f"expected an ISO 8601 datetime string, got {type(value).__name__}", where=where)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise DocumentError(f"'{value}' is not an ISO 8601 datetime (e.g. 2026-02-03T10:30:00Z)", where=where)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt_timezone.utc)
    return parsed


def json_path_of(path) -> str:
    """jsonschema's deque path as `nodes[2].agent_ref`."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def check_shape(document: Any, schema: dict, kind: str) -> None:
    """Validate a document against the shape of its kind; the first error names its field."""
    validator = SchemaValidator(schema)
    errors = sorted(validator.iter_errors(document), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        return
    error = errors[0]
    where = json_path_of(error.absolute_path) or kind
    message = error.message
    if error.validator == "additionalProperties":
        message = f"unknown field(s): {message.split('(')[-1].rstrip(')')}"
    raise DocumentError(message, where=where, details=[{"where": json_path_of(e.absolute_path), "message": e.message} for e in errors[:20]])
