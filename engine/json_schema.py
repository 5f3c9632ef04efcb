"""JSON Schema (draft 2020-12) with its regular expressions run by RE2, in linear time.

Schemas come from people (blueprint contracts, data messages). jsonschema matches
`pattern` and `patternProperties` with Python's `re`, which backtracks: `(a+)+$` against
"aaaa…a!" takes exponential time and pins a worker. RE2 never backtracks, so a match
costs time linear in the text. RE2 has no lookarounds and no backreferences: a schema
using them is refused when it is saved (`check_schema`), naming the pattern, rather than
run with `re`.

RE2's `search` finds a match anywhere in the text, as JSON Schema requires (patterns are
not implicitly anchored).

The shapes of Switchyard's own documents are pydantic models; `document_schema` gives the
JSON Schema a document is checked against, generated from its model.
"""
from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import re2
from jsonschema import Draft202012Validator, FormatChecker, validators
from jsonschema.exceptions import SchemaError, ValidationError
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue

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
def compile_pattern(pattern: str) -> Any:
    """The compiled pattern; PatternError when RE2 cannot take it."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as error:
        reason = error.args[0] if error.args else "not a regular expression"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", errors="replace")
        raise PatternError(pattern, str(reason)) from None


def _pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    try:
        compiled = compile_pattern(pattern)
    except PatternError as error:  # a schema stored before patterns were checked at save
        yield ValidationError(str(error))
        return
    if not compiled.search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, pattern_properties: dict[str, Any], instance: Any,
                        schema: dict[str, Any]) -> Iterator[ValidationError]:
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


@_SCHEMA_FORMATS.checks("regex", raises=PatternError)  # type: ignore[untyped-decorator]  # jsonschema has no types
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


def schema_refusal(schema: Any, *, field: str) -> str | None:
    """Why a JSON Schema a person wrote (a contract's, a workflow's inputs, a gate's) is not
    one, naming the place inside it: "is not a valid JSON Schema: 'text' is not valid under any
    of the given schemas (at schema['properties']['draft']['type'])"; None when it is one.
    `field` is the name the person gave the schema under."""
    try:
        check_schema(schema)
    except SchemaError as error:
        path = "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in error.path)
        return f"is not a valid JSON Schema: {error.message} (at {field}{path})"
    return None


def object_schema_problem(schema: Any, *, of: str) -> str | None:
    """Why a JSON Schema of `of` (a JSON object: a run's input, what a gate passes on) does
    not describe an object; None when it does (its "type", when it has one, is "object")."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return f'describes {of}, a JSON object: its "type" is "object"'
    return None


def field_problems(schema: dict[str, Any] | bool | None, value: Any, *, where: str) -> list[tuple[str, str]]:
    """What `value` breaks of `schema`, each (where, what), `where` the field it concerns
    under the name given ("output.draft", "output.items[2].name"), in the order of the
    fields; a required field left out is named itself. No schema: nothing."""
    if schema is None:
        return []
    problems: list[tuple[str, str]] = []
    for error in sorted(SchemaValidator(schema).iter_errors(value), key=lambda e: list(map(str, e.absolute_path))):
        field = where + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path)
        if error.validator == "required" and isinstance(error.instance, dict):
            problems.extend((f"{field}.{name}", "is required") for name in error.validator_value
                            if name not in error.instance)
        else:
            problems.append((field, error.message))
    return problems


# -- the JSON Schema of a typed document shape --------------------------------------------

# Keywords that constrain values of one JSON type only, and so may share a schema with
# another type's: {"type": ["string", "null"], "pattern": …} checks the pattern on strings.
_KEYWORDS_OF_ONE_TYPE = {
    "string": {"minLength", "maxLength", "pattern", "format"},
    "integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "object": {"properties", "required", "additionalProperties", "patternProperties", "propertyNames",
               "minProperties", "maxProperties"},
    "array": {"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"},
    "boolean": set(),
    "null": set(),
}


def _one_schema_of_types(choices: list[dict[str, Any]]) -> dict[str, Any] | None:
    """`anyOf` choices of distinct plain types as one schema with a list of types, or None.

    jsonschema answers a value that fits no `anyOf` choice with "… is not valid under any of
    the given schemas", naming neither the types nor the field inside; one schema says
    "5 is not of type 'string', 'null'".
    """
    if len(choices) < 2:
        return None
    merged: dict[str, Any] = {"type": []}
    for choice in choices:
        kind = choice.get("type")
        if not isinstance(kind, str) or kind in merged["type"] or kind not in _KEYWORDS_OF_ONE_TYPE:
            return None
        keywords = set(choice) - {"type"}
        if not keywords <= _KEYWORDS_OF_ONE_TYPE[kind] or keywords & set(merged):
            return None
        merged["type"].append(kind)
        merged.update((key, choice[key]) for key in keywords)
    return merged


def _without_any_of(schema: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    """An `anyOf` schema in a form whose errors name the field: plain types as one list of
    types; a nullable shape as `{"type": ["object", "null"]}` and `if not null then <shape>`,
    so the shape's own errors keep their path. Other unions are left as they are."""
    merged = _one_schema_of_types(schema["anyOf"])
    rest = {key: value for key, value in schema.items() if key != "anyOf"}
    if merged is not None:
        return {**rest, **merged}
    inner = [choice for choice in schema["anyOf"] if choice != {"type": "null"}]
    if len(inner) != 1 or len(schema["anyOf"]) != 2:
        return schema
    target = definitions.get(inner[0].get("$ref", "").rsplit("/", 1)[-1], {})
    if target.get("type") == "object":
        rest["type"] = ["object", "null"]
    return {**rest, "if": {"not": {"type": "null"}}, "then": inner[0]}


def _rewritten(schema: Any, definitions: dict[str, Any]) -> Any:
    if isinstance(schema, list):
        return [_rewritten(item, definitions) for item in schema]
    if not isinstance(schema, dict):
        return schema
    rewritten = {key: _rewritten(value, definitions) for key, value in schema.items()}
    return _without_any_of(rewritten, definitions) if "anyOf" in rewritten else rewritten


class DocumentSchema(GenerateJsonSchema):
    """The JSON Schema a document is checked against, generated from its pydantic model, so
    that every error names the field it concerns:

    - a union of plain types is one schema with a list of types, and a nullable shape reports
      inside itself (see `_without_any_of`);
    - a union told apart by a field (`ref_type`) is an `if`/`then` per value of that field,
      rather than a `oneOf` that reports only that nothing matched.
    """

    def generate(self, schema: Any, mode: JsonSchemaMode = "validation") -> JsonSchemaValue:
        generated = super().generate(schema, mode=mode)
        rewritten: JsonSchemaValue = _rewritten(generated, generated.get("$defs", {}))
        return rewritten

    def tagged_union_schema(self, schema: Any) -> JsonSchemaValue:
        generated = super().tagged_union_schema(schema)
        discriminator = generated.get("discriminator", {})
        field, mapping = discriminator.get("propertyName"), discriminator.get("mapping")
        if not field or not mapping:
            return generated
        return {
            "type": "object",
            "required": [field],
            "properties": {field: {"enum": list(mapping)}},
            "allOf": [{"if": {"required": [field], "properties": {field: {"const": value}}}, "then": {"$ref": ref}}
                      for value, ref in mapping.items()],
        }


# jsonschema reports errors in the order of the keywords, which pydantic sorts by name: an
# object missing a required key and holding an unknown one is told first what it lacks, and
# a value of the wrong type is told its type before what the nested shape finds.
_KEYWORD_RANK = {"required": 0, "if": 2, "then": 2}


def _in_reporting_order(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_in_reporting_order(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    keys = sorted(schema, key=lambda key: _KEYWORD_RANK.get(key, 1))  # stable: the others keep their order
    return {key: _in_reporting_order(schema[key]) for key in keys}


@functools.cache
def document_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The draft 2020-12 JSON Schema of a document shape (a pydantic model), for `SchemaValidator`."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            **_in_reporting_order(model.model_json_schema(schema_generator=DocumentSchema))}
