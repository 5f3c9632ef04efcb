"""JSONPath with a parse cache and limits.

jsonpath-ng builds a new parser for every `parse` call (milliseconds each), so every
expression is parsed once per process and reused.

jsonpath-ng parses any length without trouble but walks the parsed path recursively
(finding, printing, comparing): a path of a few hundred segments overflows Python's
stack wherever it is used. So a path is refused when it is longer or nested more deeply
than any real one (the same style of limits as a transition's condition has).
"""
from __future__ import annotations

from functools import lru_cache

from jsonpath_ng import JSONPath
from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
from jsonpath_ng.ext import parse as _parse

from engine.errors import EngineError

MAX_PATH_LENGTH = 2000  # characters
MAX_PATH_DEPTH = 50  # levels of the parsed path: each segment, filter and union adds one


class PathError(EngineError, ValueError):
    """A JSONPath expression that does not parse, or is beyond the limits."""

    code = "REF_PATH_INVALID"


@lru_cache(maxsize=4096)
def compile_path(expression: str) -> JSONPath:
    if not isinstance(expression, str) or not expression.startswith("$"):
        raise PathError(f"JSONPath '{_shown(expression)}' must start with '$'")
    if len(expression) > MAX_PATH_LENGTH:
        raise PathError(f"JSONPath '{_shown(expression)}' is too long "
                        f"({len(expression)} characters; the limit is {MAX_PATH_LENGTH})")
    if "=~" in expression:
        # Regex filters would let a document author make the engine backtrack for ever.
        raise PathError(f"JSONPath '{expression}': regular-expression filters (=~) are not allowed")
    try:
        parsed = _parse(expression)
    except (JsonPathParserError, JsonPathLexerError, ValueError, TypeError, AttributeError) as error:
        raise PathError(f"JSONPath '{expression}' does not parse: {error}") from None
    depth = _depth(parsed)
    if depth > MAX_PATH_DEPTH:
        raise PathError(f"JSONPath '{_shown(expression)}' is nested too deeply "
                        f"({depth} levels; the limit is {MAX_PATH_DEPTH})")
    return parsed


def _depth(path: JSONPath) -> int:
    """How deeply the parsed path nests, counted without recursion."""
    deepest = 0
    pending = [(path, 1)]
    while pending:
        node, depth = pending.pop()
        deepest = max(deepest, depth)
        for value in vars(node).values():
            for child in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(child, JSONPath):
                    pending.append((child, depth + 1))
    return deepest


def _shown(expression) -> str:
    """The start of a long expression, enough to recognise it in a message."""
    text = str(expression)
    return text if len(text) <= 80 else f"{text[:80]}..."
