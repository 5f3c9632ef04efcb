"""Dataset files: JSONL, JSON and CSV read into items, and items written back.

Reading is all or nothing: the first thing wrong is a DocumentError naming its line (and
field or column), with `details` {"where", "line", …} so the API answers with them too, and
nothing has been stored yet when it is raised (the services parse before they write).

An item is `{"id": "…", "input": {…}, "expected": <any JSON>, "metadata": {…}}`: `input` is
required, the others optional, and an absent `expected` stays distinct from `null`.

The CSV rule (docs/experiments.md, "Datasets"), one cell at a time:
1. an empty cell sets nothing (no input key, no expected, no metadata key);
2. `NaN`, `Infinity` and `-Infinity` are refused, as in every format;
3. a cell that is JSON is read as that value: `42`, `true`, `null`, `{"a": 1}`, `[1]`, and
   `"42"` (a string, quotes and all JSON's escapes);
4. a cell that starts with `{` or `[` but is not JSON is refused, naming the JSON error;
5. any other cell is its text.
An `id` cell is always its text. Writing does the reverse (`cell_text`): a string that rule 3
or 4 would read otherwise, or the empty string, is written as a JSON string.
"""
from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from core.errors import DocumentError, echo
from core.jsonutil import MAX_INTEGER_DIGITS, check_storable

FORMATS = ("jsonl", "json", "csv")
EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv"}
ITEM_KEYS = ("id", "input", "expected", "metadata")
ID_MAX_LENGTH = 200
NON_FINITE = ("NaN", "Infinity", "-Infinity")


class Absent:
    """No value: an item without `expected` (which JSON's null is not)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = Absent()


@dataclass
class ParsedItem:
    """One item as a file gave it, with the line it starts on."""

    item_id: str
    input: dict[str, Any]
    line: int
    expected: Any = ABSENT
    metadata: dict[str, Any] | None = None

    def document(self) -> dict[str, Any]:
        """The item as JSONL and JSON write it: absent keys left out."""
        out: dict[str, Any] = {"id": self.item_id, "input": self.input}
        if self.expected is not ABSENT:
            out["expected"] = self.expected
        if self.metadata is not None:
            out["metadata"] = self.metadata
        return out


@dataclass
class ParsedFile:
    items: list[ParsedItem]
    columns: list[dict[str, str]] | None = field(default=None)  # a CSV's: [{"column", "target"}], in order


def refused(problem: str, *, line: int | None = None, at: str = "", **details: Any) -> DocumentError:
    """A refusal naming its line and, after it, the field or column (`at`)."""
    where = ", ".join(part for part in (f"line {line}" if line else "", at) if part) or "file"
    return DocumentError(problem, where=where, details={"where": where, "line": line, **details})


def format_of(filename: str, given: str | None = None) -> str:
    """The format asked for, else the one the file's extension names."""
    if given:
        if given not in FORMATS:
            raise refused(f"unknown format '{echo(given)}'; the formats are {', '.join(FORMATS)}", at="format")
        return given
    for extension, name in EXTENSIONS.items():
        if filename.lower().endswith(extension):
            return name
    raise refused(f"cannot tell the format of '{echo(filename)}' from its name; name one of "
                  f"{', '.join(FORMATS)}", at="format")


def decoded(data: bytes) -> str:
    """The file's text; bytes that are not UTF-8 are refused naming their line. A UTF-8 byte
    order mark (as spreadsheets write) is dropped."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise refused(f"is not UTF-8 text (byte {data[error.start]:#04x} at byte {column} of the line)",
                      line=line) from None
    return text.removeprefix("\ufeff")


def parse(data: bytes, fmt: str, *, columns: Iterable[str] = ()) -> ParsedFile:
    """A file's items, checked whole; `columns` (COLUMN=TARGET) apply to CSV only."""
    text = decoded(data)
    if fmt == "csv":
        parsed = parse_csv(text, list(columns))
    elif list(columns):
        raise refused("a column mapping applies to CSV files only", at="columns")
    elif fmt == "jsonl":
        parsed = ParsedFile(list(_parse_jsonl(text)))
    elif fmt == "json":
        parsed = ParsedFile(list(_parse_json_array(text)))
    else:
        raise refused(f"unknown format '{echo(fmt)}'; the formats are {', '.join(FORMATS)}", at="format")
    check_unique(parsed.items)
    return parsed


def check_unique(items: list[ParsedItem], taken: dict[str, str] | None = None) -> None:
    """Each id once: a second use names both lines (or, with `taken`, where the id is already)."""
    seen: dict[str, int] = {}
    for item in items:
        if item.item_id in seen:
            raise refused(f"item id '{echo(item.item_id)}' is also on line {seen[item.item_id]}",
                          line=item.line, at="id", lines=[seen[item.item_id], item.line])
        if taken and item.item_id in taken:
            raise refused(f"item id '{echo(item.item_id)}' is already in {taken[item.item_id]}", line=item.line, at="id")
        seen[item.item_id] = item.line


# -- JSON and JSONL ----------------------------------------------------------------------


class _Refusal(Exception):
    """Raised from inside the JSON parser's hooks, to be named with its line outside."""


def _refuse_constant(name: str):
    raise _Refusal(f"{name} is not a JSON number")


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise _Refusal(f"an integer of {len(digits.lstrip('-'))} digits is too long (the limit is {MAX_INTEGER_DIGITS})")
    return int(digits)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999: Python reads it as infinity
        raise _Refusal(f"{text} is not a finite number")
    return value


DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_int=_bounded_int, parse_float=_finite_float)


def _read_value(text: str, start: int, line: int) -> tuple[Any, int]:
    """One JSON value of `text` from `start` (and where it ends), or a refusal naming the line
    and column of what is wrong."""
    try:
        return DECODER.raw_decode(text, start)
    except json.JSONDecodeError as error:
        raise refused(f"invalid JSON at column {error.colno}: {error.msg}", line=error.lineno,
                      column=error.colno) from None
    except _Refusal as error:
        raise refused(str(error), line=line) from None
    except RecursionError:
        raise refused("the JSON is nested too deeply", line=line) from None


def _parse_jsonl(text: str) -> Iterator[ParsedItem]:
    """One item per non-blank line."""
    offset = 0
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        start, offset = offset, offset + len(line)
        if not line.strip():
            continue
        lead = len(line) - len(line.lstrip())
        value, end = _read_value(text, start + lead, number)
        rest = text[end:offset].strip()
        if rest:
            raise refused(f"invalid JSON at column {end - start + 1}: more after the item ('{echo(rest)}'); "
                          "JSONL holds one item per line", line=number)
        yield item_of(value, line=number, position=number)


def _parse_json_array(text: str) -> Iterator[ParsedItem]:
    """A JSON array of items, each named by the line it starts on."""
    def skip(index: int) -> int:
        while index < len(text) and text[index] in " \t\r\n":
            index += 1
        return index

    def line_at(index: int) -> int:
        return text.count("\n", 0, index) + 1

    index = skip(0)
    if index == len(text) or text[index] != "[":
        if index < len(text) and text[index] == "{":
            raise refused("a JSON dataset is an array of items, [{…}, …]; this is one object", line=line_at(index))
        _read_value(text, index, line_at(index))  # names what is wrong, if it is not JSON at all
        raise refused("a JSON dataset is an array of items, [{…}, …]", line=line_at(index))
    index = skip(index + 1)
    position = 0
    if index < len(text) and text[index] == "]":
        index += 1
    else:
        while True:
            position += 1
            line = line_at(index)
            value, index = _read_value(text, index, line)
            yield item_of(value, line=line, position=position)
            index = skip(index)
            if index < len(text) and text[index] == ",":
                index = skip(index + 1)
                continue
            if index < len(text) and text[index] == "]":
                index += 1
                break
            line = line_at(index)
            column = index - (text.rfind("\n", 0, index) + 1) + 1
            raise refused(f"invalid JSON at column {column}: expected ',' or ']'", line=line, column=column)
    rest = skip(index)
    if rest < len(text):
        raise refused("invalid JSON: more after the array", line=line_at(rest))


def item_of(value: Any, *, line: int, position: int) -> ParsedItem:
    """An item from its JSON object, its fields checked."""
    if not isinstance(value, dict):
        raise refused(f"an item must be a JSON object, got {_kind(value)}", line=line)
    unknown = sorted(set(value) - set(ITEM_KEYS))
    if unknown:
        raise refused(f"unknown field(s) {', '.join(echo(key) for key in unknown)}; an item has "
                      f"{', '.join(ITEM_KEYS)}", line=line, at=echo(unknown[0]))
    for key, part in value.items():
        _storable(part, line=line, at=key)
    if "input" not in value:
        raise refused("an item needs an input (a JSON object)", line=line, at="input")
    if not isinstance(value["input"], dict):
        raise refused(f"must be a JSON object, got {_kind(value['input'])}", line=line, at="input")
    metadata = value.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise refused(f"must be a JSON object, got {_kind(metadata)}", line=line, at="metadata")
    item_id = value.get("id", f"item-{position}")
    _check_id(item_id, line=line)
    return ParsedItem(item_id=item_id, input=value["input"], line=line, expected=value.get("expected", ABSENT),
                      metadata=metadata)


def _check_id(item_id: Any, *, line: int) -> None:
    if not isinstance(item_id, str):
        raise refused(f"must be a string, got {_kind(item_id)}", line=line, at="id")
    if not item_id.strip():
        raise refused("must not be empty", line=line, at="id")
    if len(item_id) > ID_MAX_LENGTH:
        raise refused(f"is longer than {ID_MAX_LENGTH} characters", line=line, at="id")
    _storable(item_id, line=line, at="id")


def _storable(value: Any, *, line: int, at: str) -> None:
    try:
        check_storable(value, at)
    except DocumentError as error:
        raise refused(error.problem, line=line, at=error.where or at) from None


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


# -- CSV -------------------------------------------------------------------------------


def target_problem(target: str) -> str | None:
    """What is wrong with a column's target, or None: id, expected, input.KEY or metadata.KEY."""
    if target in ("id", "expected"):
        return None
    section, dot, key = target.partition(".")
    if section in ("input", "metadata") and dot and key:
        return None
    return f"target '{echo(target)}' is not id, expected, input.KEY or metadata.KEY"


def default_target(column: str) -> str:
    """`id`, `expected`, `metadata.KEY` and `input.KEY` as named; any other column is an input key."""
    if column in ("id", "expected") or target_problem(column) is None:
        return column
    return f"input.{column}"


def column_mapping(header: list[str], overrides: list[str]) -> list[dict[str, str]]:
    """Each column of the header with its target: the default, or COLUMN=TARGET's."""
    explicit: dict[str, str] = {}
    for text in overrides:
        column, equals, target = text.partition("=")
        if not equals or not column:
            raise refused(f"'{echo(text)}' is not COLUMN=TARGET", at="columns")
        if column not in header:
            raise refused(f"the mapping names column '{echo(column)}', which the header lacks (it has "
                          f"{', '.join(echo(name) for name in header)})", line=1, at=f"column '{echo(column)}'")
        problem = target_problem(target)
        if problem:
            raise refused(problem, at=f"column '{echo(column)}'")
        explicit[column] = target
    mapping = [{"column": column, "target": explicit.get(column, default_target(column))} for column in header]
    seen: dict[str, str] = {}
    for entry in mapping:
        if entry["target"] in seen:
            raise refused(f"columns '{echo(seen[entry['target']])}' and '{echo(entry['column'])}' both fill "
                          f"{entry['target']}", line=1, at=f"column '{echo(entry['column'])}'")
        seen[entry["target"]] = entry["column"]
    return mapping


def parse_csv(text: str, overrides: list[str]) -> ParsedFile:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
    except csv.Error as error:
        raise refused(f"not readable as CSV: {error}", line=reader.line_num) from None
    if not header:
        raise refused("a CSV dataset needs a header row naming its columns", line=1)
    blank = [index + 1 for index, name in enumerate(header) if not name.strip()]
    if blank:
        raise refused(f"column {blank[0]} of the header has no name", line=1)
    doubled = sorted({name for name in header if header.count(name) > 1})
    if doubled:
        raise refused(f"the header names column '{echo(doubled[0])}' twice", line=1, at=f"column '{echo(doubled[0])}'")
    mapping = column_mapping(header, overrides)
    items: list[ParsedItem] = []
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader, None)
        except csv.Error as error:
            raise refused(f"not readable as CSV: {error}", line=reader.line_num) from None
        if row is None:
            break
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise refused(f"has {len(row)} cells but the header has {len(header)} columns", line=start)
        items.append(_csv_item(row, mapping, line=start, position=len(items) + 1))
    return ParsedFile(items, columns=mapping)


def _csv_item(row: list[str], mapping: list[dict[str, str]], *, line: int, position: int) -> ParsedItem:
    item = ParsedItem(item_id=f"item-{position}", input={}, line=line)
    metadata: dict[str, Any] = {}
    for cell, entry in zip(row, mapping, strict=True):
        at = f"column '{echo(entry['column'])}'"
        if entry["target"] == "id":
            if cell:
                _check_id(cell, line=line)
                item.item_id = cell
            continue
        value = read_cell(cell, line=line, at=at)
        if value is ABSENT:
            continue
        _storable(value, line=line, at=at)
        section, _, key = entry["target"].partition(".")
        if section == "expected":
            item.expected = value
        elif section == "input":
            item.input[key] = value
        else:
            metadata[key] = value
    item.metadata = metadata or None
    return item


def read_cell(cell: str, *, line: int = 0, at: str = "") -> Any:
    """A cell's value by the CSV rule (this module's docstring)."""
    if cell == "":
        return ABSENT
    if cell.strip() in NON_FINITE:
        raise refused(f"{cell.strip()} is not a JSON number", line=line, at=at)
    try:
        value, end = DECODER.raw_decode(cell, len(cell) - len(cell.lstrip()))
        if cell[end:].strip():
            raise ValueError("more after the value")
        return value
    except _Refusal as error:
        raise refused(str(error), line=line, at=at) from None
    except (ValueError, RecursionError) as error:
        if cell.lstrip()[:1] in ("{", "["):
            reason = f"at column {error.colno}: {error.msg}" if isinstance(error, json.JSONDecodeError) else str(error)
            raise refused(f"starts as JSON but is not valid JSON ({reason})", line=line, at=at) from None
        return cell


def cell_text(value: Any) -> str:
    """A value as a cell that `read_cell` reads back as it (ABSENT: empty)."""
    if value is ABSENT:
        return ""
    if isinstance(value, str):
        try:
            if value and read_cell(value) == value:
                return value
        except DocumentError:
            pass
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# -- writing ---------------------------------------------------------------------------


def write_jsonl(items: Iterable[dict[str, Any]]) -> Iterator[str]:
    for item in items:
        yield json.dumps(item, ensure_ascii=False) + "\n"


def write_json(items: Iterable[dict[str, Any]]) -> Iterator[str]:
    yield "["
    for index, item in enumerate(items):
        yield ("," if index else "") + "\n  " + json.dumps(item, ensure_ascii=False)
    yield "\n]\n"


def csv_columns(columns: list[dict[str, str]] | None, items: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The columns a CSV export writes: those the dataset was imported with (and `id` unless its
    ids are the ones an import without them makes, item-1 …), then a column for each key no
    column holds (`input.KEY`, `metadata.KEY`, `expected`), as the items first name it."""
    chosen = list(columns or [])
    targets = {entry["target"] for entry in chosen}
    if "id" not in targets and any(item["id"] != f"item-{n}" for n, item in enumerate(items, start=1)):
        chosen.insert(0, {"column": "id", "target": "id"})  # the ids a file without them would not give back
        targets.add("id")
    headers = {entry["column"] for entry in chosen}
    wanted: list[str] = []
    for item in items:
        keys = [f"input.{key}" for key in item["input"]]
        keys += ["expected"] if "expected" in item else []
        keys += [f"metadata.{key}" for key in item.get("metadata") or {}]
        wanted += [key for key in keys if key not in targets and key not in wanted]
    for target in wanted:
        column = target
        while column in headers:  # a column of that name holds something else
            column = f"_{column}"
        chosen.append({"column": column, "target": target})
        headers.add(column)
    return chosen


def write_csv(items: list[dict[str, Any]], columns: list[dict[str, str]] | None) -> Iterator[str]:
    chosen = csv_columns(columns, items)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([entry["column"] for entry in chosen])
    for item in items:
        writer.writerow([_cell_of(item, entry["target"]) for entry in chosen])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def _cell_of(item: dict[str, Any], target: str) -> str:
    if target == "id":
        return item["id"]
    if target == "expected":
        return cell_text(item.get("expected", ABSENT))
    section, _, key = target.partition(".")
    return cell_text((item.get(section) or {}).get(key, ABSENT))
