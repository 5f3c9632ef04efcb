"""Small checkers for the seed's JSON shapes: each refusal is an INVALID_FORMAT naming
the field (`payload.candidates[1].content: …`)."""
from __future__ import annotations

import math
from typing import Any

from .errors import INVALID_FORMAT, ToTError

MISSING = object()


def refuse(where: str, problem: str) -> ToTError:
    return ToTError(INVALID_FORMAT, f"{where}: {problem}", recoverable=True)


def show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def join(where: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def an_object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise refuse(where, f"expected an object, got {show(value)}")
    return value


def field(owner: dict[str, Any], key: str, where: str, *, optional: bool = False) -> Any:
    if key in owner:
        return owner[key]
    if optional:
        return MISSING
    raise refuse(join(where, key), "is required")


def a_string(owner: dict[str, Any], key: str, where: str, *, optional: bool = False, empty: bool = True) -> Any:
    value = field(owner, key, where, optional=optional)
    if value is MISSING:
        return value
    if not isinstance(value, str) or (not empty and not value.strip()):
        kind = "a string" if empty else "a non-empty string"
        raise refuse(join(where, key), f"expected {kind}, got {show(value)}")
    return value


def a_number(owner: dict[str, Any], key: str, where: str, *, low: float, high: float | None,
             optional: bool = False, integer: bool = False) -> Any:
    value = field(owner, key, where, optional=optional)
    if value is MISSING:
        return value
    kinds = (int,) if integer else (int, float)
    not_finite = isinstance(value, float) and not math.isfinite(value)
    if isinstance(value, bool) or not isinstance(value, kinds) or not_finite:
        raise refuse(join(where, key), f"expected {'an integer' if integer else 'a number'}, got {show(value)}")
    if value < low or (high is not None and value > high):
        span = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise refuse(join(where, key), f"must be {span}, got {show(value)}")
    return value


def a_boolean(owner: dict[str, Any], key: str, where: str, *, optional: bool = False) -> Any:
    value = field(owner, key, where, optional=optional)
    if value is not MISSING and not isinstance(value, bool):
        raise refuse(join(where, key), f"expected true or false, got {show(value)}")
    return value


def a_list(owner: dict[str, Any], key: str, where: str, *, optional: bool = False) -> Any:
    value = field(owner, key, where, optional=optional)
    if value is not MISSING and not isinstance(value, list):
        raise refuse(join(where, key), f"expected a list, got {show(value)}")
    return value


def strings(owner: dict[str, Any], key: str, where: str, *, optional: bool = False) -> Any:
    value = a_list(owner, key, where, optional=optional)
    if value is MISSING:
        return value
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise refuse(join(join(where, key), index), f"expected a string, got {show(item)}")
    return value


def an_object_field(owner: dict[str, Any], key: str, where: str, *, optional: bool = False) -> Any:
    value = field(owner, key, where, optional=optional)
    if value is not MISSING:
        an_object(value, join(where, key))
    return value


def one_of(owner: dict[str, Any], key: str, where: str, choices: tuple[str, ...]) -> str:
    value = field(owner, key, where)
    if value not in choices:
        raise refuse(join(where, key), f"expected one of {', '.join(choices)}, got {show(value)}")
    return str(value)
