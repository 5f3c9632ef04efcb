"""Small helpers shared by the document (interchange) code of every app."""
from __future__ import annotations

import json
import math
import sys
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel

from core.errors import DocumentError
from engine.json_schema import SchemaValidator, document_schema


def iso(value: datetime | None) -> str | None:
    """A datetime in the seeds' form: UTC with a trailing Z, microseconds only when present."""
    if value is None:
        return None
    text = value.astimezone(UTC).isoformat()
    return text.replace("+00:00", "Z")


def in_utc(value: datetime, where: str = "") -> datetime:
    """A datetime in UTC; one without an offset is taken to be in UTC. One that UTC cannot
    hold (`0001-01-01T00:00:00+12:00` is in the year 0 there) is a DocumentError rather than
    the OverflowError a comparison or the database would raise later."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise DocumentError(f"{value.isoformat()} is out of range in UTC (years 1 to 9999)", where=where) from None


def _in_utc(value: datetime) -> datetime:
    try:
        return in_utc(value)
    except DocumentError as error:
        raise ValueError(error.problem) from None  # pydantic names the field


# A datetime an API operation reads (a query's `since`, `started_after`): ISO 8601, UTC when
# no offset is given, and always aware, so that naive and aware values never meet.
UtcDatetime = Annotated[datetime, AfterValidator(_in_utc)]


def parse_datetime(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise DocumentError(f"expected an ISO 8601 datetime string, got {type(value).__name__}", where=where)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise DocumentError(f"'{value}' is not an ISO 8601 datetime (e.g. 2026-02-03T10:30:00Z)", where=where) from None
    return in_utc(parsed, where)


def json_path_of(path) -> str:
    """jsonschema's deque path as `nodes[2].agent_ref`."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def check_shape(document: Any, shape: type[BaseModel], kind: str) -> None:
    """Validate a document against the shape of its kind (its JSON Schema, generated from the
    shape's model); the first error names its field."""
    validator = SchemaValidator(document_schema(shape))
    errors = sorted(validator.iter_errors(document), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        return
    error = errors[0]
    where = json_path_of(error.absolute_path) or kind
    message = error.message
    if error.validator == "additionalProperties":
        message = f"unknown field(s): {message.split('(')[-1].rstrip(')')}"
    raise DocumentError(message, where=where, details=[{"where": json_path_of(e.absolute_path), "message": e.message} for e in errors[:20]])


# How deeply a stored JSON value may nest. Far beyond any real document, and low enough
# that what walks values recursively later (JSON Schema checking a contract's schema,
# encoders, templates) stays well within Python's stack.
MAX_NESTING = 64


def json_object(value: Any, where: str, *, storable: bool = False) -> dict:
    """`value` where a JSON object is asked for: {} for none, anything else refused naming
    `where`; with `storable`, held to what the database stores (`check_storable`) too."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DocumentError("is a JSON object", where=where)
    if storable:
        check_storable(value, where=where)
    return value


def check_storable(value: Any, where: str = "") -> None:
    """Refuse what neither database can store or a page can show, naming where it is: NUL
    characters, lone surrogates (JSON's "\\ud800": not UTF-8, so every page showing the
    text would fail), NaN and Infinity, in values and keys alike, and nesting deeper than
    MAX_NESTING. JSON Schema and Python's parser let all of them through. Walked without
    recursion; a key is checked before it becomes part of a location, so no message
    carries the bad text."""
    stack = [(value, where, 0)]
    while stack:
        item, at, depth = stack.pop()
        if isinstance(item, str):
            _check_text(item, at)
        elif isinstance(item, float) and not math.isfinite(item):
            raise DocumentError(f"{item} is not a finite number", where=at)
        elif isinstance(item, (dict, list, tuple)) and depth >= MAX_NESTING:
            raise DocumentError(f"is nested more than {MAX_NESTING} levels deep", where=at or "document")
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                _check_text(str(key), at or "document", what="a key ")
                stack.append((child, f"{at}.{key}" if at else str(key), depth + 1))
        elif isinstance(item, (list, tuple)):
            stack.extend((child, f"{at}[{index}]", depth + 1) for index, child in reversed(list(enumerate(item))))


def _check_text(text: str, where: str, what: str = "") -> None:
    if "\x00" in text:
        raise DocumentError(f"{what}contains a NUL character (\\u0000)", where=where)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise DocumentError(f"{what}is not valid Unicode (it contains a lone surrogate)", where=where) from None


# Python's int() refuses longer digit strings (sys.int_info.default_max_str_digits); a
# number that long is no one's data, so the parser refuses it with a message of its own.
MAX_INTEGER_DIGITS = 4300


def parse_json(text: str) -> Any:
    """JSON text as a Python value, or a DocumentError saying what is wrong and where.

    Python's parser accepts NaN and Infinity (not JSON), raises RecursionError on deep
    nesting and a bare ValueError on an integer of thousands of digits; each becomes a
    plain message instead of a traceback."""

    def refuse_constant(name: str):
        raise DocumentError(f"{name} is not a JSON number")

    def bounded_int(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_INTEGER_DIGITS:
            raise DocumentError(f"an integer of {len(digits.lstrip('-'))} digits is too long "
                                f"(the limit is {MAX_INTEGER_DIGITS} digits)")
        return int(digits)

    try:
        return json.loads(text, parse_constant=refuse_constant, parse_int=bounded_int)
    except json.JSONDecodeError as error:
        raise DocumentError(f"malformed JSON at line {error.lineno}, column {error.colno}: {error.msg}") from None
    except RecursionError:
        raise DocumentError(f"the JSON is nested too deeply (more than about {sys.getrecursionlimit()} levels)") from None
    except ValueError as error:  # e.g. an interpreter whose own integer limit is lower
        raise DocumentError(f"not readable as JSON: {error}") from None
