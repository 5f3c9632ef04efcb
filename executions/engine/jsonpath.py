"""JSONPath with a parse cache.

jsonpath-ng builds a new parser for every `parse` call (milliseconds each), so every
expression is parsed once per process and reused.
"""
from __future__ import annotations

from functools import lru_cache

from jsonpath_ng import JSONPath
from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
from jsonpath_ng.ext import parse as _parse


class PathError(ValueError):
    """A JSONPath expression that does not parse."""


@lru_cache(maxsize=4096)
def compile_path(expression: str) -> JSONPath:
    if not isinstance(expression, str) or not expression.startswith("$"):
        raise PathError(f"JSONPath '{expression}' must start with '$'")
    if "=~" in expression:
        # Regex filters would let a document author make the engine backtrack for ever.
        raise PathError(f"JSONPath '{expression}': regular-expression filters (=~) are not allowed")
    try:
        return _parse(expression)
    except (JsonPathParserError, JsonPathLexerError, ValueError, TypeError, AttributeError) as error:
        raise PathError(f"JSONPath '{expression}' does not parse: {error}") from None
