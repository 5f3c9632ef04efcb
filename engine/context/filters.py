"""The `filter` of a task_output reference (data-transfer-protocol §2.2).

    {"field": "atom_type", "operator": "eq", "value": "methodology"}

Comparisons follow Python where Python is sane, and never match what they should not:

- JSON booleans are not numbers: `true` does not eq 1 and is not gt 0; 1.0 eq 1 does.
- Ordering (gt/gte/lt/lte) compares numbers with numbers and strings with strings;
  anything else does not match (and is not an error).
- A missing field or a null never matches, except that `ne` matches it (the value of a
  spec is never null: see below). A field that no element has at all is an error of the
  filter (REF_FILTER_ERROR), not a filter that keeps nothing or everything.
- NaN never matches anything, `ne` included.
- `in`: the field is one of the listed values; a list field matches when any of its
  items is. `contains`: substring of a string field, or membership in a list field.

A spec with a null `value` is refused rather than given a meaning: "eq null" and
"ne null" read as "is null" / "is set" to some authors and as nothing to others.
"""
from __future__ import annotations

import math
import operator as _op
from typing import Any

from .errors import REF_FILTER_ERROR, REF_NOT_FOUND, RefError

OPERATORS = ("eq", "ne", "in", "gt", "gte", "lt", "lte", "contains")
_ORDERING = {"gt": _op.gt, "gte": _op.ge, "lt": _op.lt, "lte": _op.le}
_SPEC_KEYS = ("field", "operator", "value")
_MISSING = object()


def apply_filter(data: Any, spec: dict[str, Any]) -> Any:
    """The elements of a list that match, or a single object that matches.

    A filter on a field that no element has could never tell the elements apart (`eq`
    would keep nothing and `ne` everything): REF_FILTER_ERROR naming the field, so the
    reference's fallback decides rather than a silent guess. A single object that does
    not match is REF_NOT_FOUND, never a null passed as data."""
    _compile(spec)
    if isinstance(data, list):
        require_field(data, spec)
        return keep_matching(data, spec)
    if isinstance(data, dict):
        require_field([data], spec)
        if matches(data, spec):
            return data
        raise RefError(REF_NOT_FOUND, f"the filter on {spec['field']!r} does not match the selected object")
    raise RefError(REF_FILTER_ERROR, f"a filter applies to a list or an object, not to {_json_type(data)}")


def keep_matching(elements: list[Any], spec: dict[str, Any]) -> list[Any]:
    path, name, value = _compile(spec)
    return [element for element in elements if _test(_lookup(element, path), name, value)]


def require_field(elements: list[Any], spec: dict[str, Any]) -> None:
    """REF_FILTER_ERROR when there are elements and none of them has the filter's field."""
    path, _, _ = _compile(spec)
    if elements and all(_lookup(element, path) is _MISSING for element in elements):
        count = f"the {len(elements)} elements" if len(elements) > 1 else "the selected element"
        raise RefError(REF_FILTER_ERROR, f"filter field {spec['field']!r} is in none of {count}")


def matches(element: Any, spec: dict[str, Any]) -> bool:
    path, name, value = _compile(spec)
    return _test(_lookup(element, path), name, value)


def _compile(spec: Any) -> tuple[tuple[str, ...], str, Any]:
    def refuse(problem: str) -> RefError:
        return RefError(REF_FILTER_ERROR, f"filter {problem}")

    if not isinstance(spec, dict):
        raise refuse(f"must be an object with {', '.join(_SPEC_KEYS)}, got {_json_type(spec)}")
    missing = [key for key in _SPEC_KEYS if key not in spec]
    if missing:
        raise refuse(f"is missing {', '.join(repr(key) for key in missing)}")
    unknown = sorted(str(key) for key in spec if key not in _SPEC_KEYS)
    if unknown:
        raise refuse(f"has unknown key(s) {', '.join(repr(key) for key in unknown)}")
    field, name, value = spec["field"], spec["operator"], spec["value"]
    if not isinstance(field, str) or not field or any(not part for part in field.split(".")):
        raise refuse(f"'field' must be a field name or a dotted path like 'metadata.source', got {field!r}")
    if name not in OPERATORS:
        raise refuse(f"operator {name!r} is unknown (known: {', '.join(OPERATORS)})")
    if value is None:
        raise refuse(f"'{name}' with a null value is ambiguous; filter on a present value instead")
    if name == "in" and not isinstance(value, list):
        raise refuse(f"'in' needs a list value, got {_json_type(value)}")
    if name in _ORDERING and not (_is_number(value) or isinstance(value, str)):
        raise refuse(f"'{name}' needs a number or a string value, got {_json_type(value)}")
    if name == "contains" and not isinstance(value, str):
        raise refuse(f"'contains' needs a string value, got {_json_type(value)}")
    return tuple(field.split(".")), name, value


def _lookup(element: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(element, dict) or key not in element:
            return _MISSING
        element = element[key]
    return element


def _test(found: Any, name: str, value: Any) -> bool:
    if _is_nan(found) or _is_nan(value):
        return False
    if found is _MISSING or found is None:
        return name == "ne"
    if name == "eq":
        return _equal(found, value)
    if name == "ne":
        return not _equal(found, value)
    if name == "in":
        candidates = found if isinstance(found, list) else [found]
        return any(_equal(candidate, wanted) for candidate in candidates for wanted in value)
    if name == "contains":
        if isinstance(found, str):
            return value in found
        if isinstance(found, list):
            return any(isinstance(item, str) and item == value for item in found)
        return False
    compare = _ORDERING[name]
    if _is_number(found) and _is_number(value):
        return bool(compare(found, value))
    if isinstance(found, str) and isinstance(value, str):
        return bool(compare(found, value))
    return False


def _equal(a: Any, b: Any) -> bool:
    """Python's ==, except that booleans equal only booleans and NaN equals nothing."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if _is_number(a) or _is_number(b):
        return _is_number(a) and _is_number(b) and not (_is_nan(a) or _is_nan(b)) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[key], b[key]) for key in a)
    if isinstance(a, (list, dict)) or isinstance(b, (list, dict)):
        return False
    return type(a) is type(b) and a == b


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def _is_nan(value: Any) -> bool:
    return type(value) is float and math.isnan(value)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if _is_number(value):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
