"""JSON Schema (draft 2020-12) with its regular expressions run by RE2, in linear time.

Schemas come from people (blueprint contracts, data messages). jsonschema matches
`pattern` and `patternProperties` with Python's `re`, which backtracks: `(a+)+$` against
"aaaa…a!" takes exponential time and pins a worker. RE2 never backtracks, so a match
costs time linear in the text. RE2 has no lookarounds and no backreferences: a schema
using them is refused when it is saved (`check_schema`), naming the pattern, rather than
run with `re`.

RE2's `search` finds a match anywhere in the text, as JSON Schema requires (patterns are
not implicitly anchored).
"""
from __future__ import annotations

import functools
from typing import Any

import re2
from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import SchemaError, ValidationError

from engine.errors import EngineError

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is reported to whoever wrote it, not logged by RE2


class PatternError(EngineError, ValueError):
    """A pattern RE2 cannot compile; says which and why."""

    code = "PATTERN_INVALID"

    def __init__(self, pattern: str, reason: str):
        super().__init__(f"the pattern {pattern!r} cannot be used: {reason} (patterns run on RE2, in linear "
                         f"time, which has no lookarounds or backreferences)")
        self.pattern = pattern
        self.reason = reason


@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str):
    """The compiled pattern; PatternError when RE2 cannot take it."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as error:
        reason = error.args[0] if error.args else "not a regular expression"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", errors="replace")
        raise PatternError(pattern, str(reason)) from None


def _pattern(validator, pattern, instance, schema):
    if not validator.is_type(instance, "string"):
        return
    try:
        compiled = compile_pattern(pattern)
    except PatternError as error:  # a schema stored before patterns were checked at save
        yield ValidationError(str(error))
        return
    if not compiled.search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator, pattern_properties, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in pattern_properties.items():
        try:
            compiled = compile_pattern(pattern)
        except PatternError as error:
            yield ValidationError(str(error))
            continue
        for key, value in instance.items():
            if compiled.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


# The one validator for every schema Switchyard checks a value against.
SchemaValidator = validators.extend(
    Draft202012Validator, {"pattern": _pattern, "patternProperties": _pattern_properties},
)

# The meta-schema marks `pattern` values and `patternProperties` keys as format "regex":
# checked here by RE2 instead of `re`, with every other format checked as before.
_SCHEMA_FORMATS = FormatChecker(Draft202012Validator.FORMAT_CHECKER.checkers)


@_SCHEMA_FORMATS.checks("regex", raises=PatternError)
def _is_re2_pattern(instance: Any) -> bool:
    if isinstance(instance, str):
        compile_pattern(instance)
    return True


def check_schema(schema: Any) -> None:
    """Raise SchemaError (with `message` and `json_path`) for the first problem of a
    user's schema, a pattern RE2 cannot take included."""
    meta = Draft202012Validator(Draft202012Validator.META_SCHEMA, format_checker=_SCHEMA_FORMATS)
    for error in meta.iter_errors(schema):
        if error.validator == "format" and error.validator_value == "regex" and isinstance(error.cause, PatternError):
            error.message = str(error.cause)
        raise SchemaError.create_from(error)
