"""JSONPath as RFC 9535 defines it, parsed once per expression and run in bounded time.

Every JSONPath of the house goes through here: data references, output mappings, the
`$…` paths of transition conditions, and validation (which the editor asks as you type).
The parser and evaluator are jsonpath-rfc9535's, which passes the RFC's compliance suite
(tests/engine/test_jsonpath_compliance.py runs all of it). Two things are ours:

- `match()` and `search()` run their I-Regexp (RFC 9485) on RE2, in time linear in the
  text, instead of a backtracking engine: a filter such as `match(@.a, '(a+)+$')` cannot pin
  a worker. An argument that is not a valid I-Regexp matches nothing, as the RFC says.
- Limits: a path longer than any real one is refused before it is parsed, and one that
  walks deeper than `MAX_DESCENT` levels of the data is an error, not a stack overflow.

How a nodelist becomes the value a reference passes is one rule, written and applied in
`engine.context.resolution.select_path`.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2
from iregexp_check import check as is_iregexp
from jsonpath_rfc9535 import JSONPathEnvironment, JSONPathError, JSONPathQuery
from jsonpath_rfc9535.function_extensions import ExpressionType, FilterFunction

from engine.errors import EngineError

MAX_PATH_LENGTH = 2000  # characters
MAX_DESCENT = 100  # levels of the data a descendant segment (`..`) walks


class PathError(EngineError, ValueError):
    """A JSONPath expression that is not RFC 9535, or is beyond the limits."""

    code = "REF_PATH_INVALID"


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


@lru_cache(maxsize=1024)
def _iregexp(pattern: str) -> Any:
    """An I-Regexp as RE2 runs it, or None when it is not one. I-Regexp's `.` matches any
    character but a line break (CR or LF); RE2's would match a CR."""
    if not is_iregexp(pattern):
        return None
    translated, in_class, escaped = [], False, False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "." and not in_class:
            translated.append("[^\\n\\r]")
            continue
        translated.append(char)
    try:
        return re2.compile("".join(translated), _RE2_OPTIONS)
    except re2.error:
        return None


class _RegexFunction(FilterFunction):
    """RFC 9535 `match()` (the whole string) and `search()` (a substring) on RE2."""

    arg_types = [ExpressionType.VALUE, ExpressionType.VALUE]
    return_type = ExpressionType.LOGICAL

    def __init__(self, whole: bool):
        self.whole = whole

    def __call__(self, string: object, pattern: object) -> bool:
        if not isinstance(string, str) or not isinstance(pattern, str):
            return False
        compiled = _iregexp(pattern)
        if compiled is None:
            return False
        try:
            found = compiled.fullmatch(string) if self.whole else compiled.search(string)
        except UnicodeEncodeError:  # a lone surrogate is not text RE2 can read
            return False
        return found is not None


class _Environment(JSONPathEnvironment):
    max_recursion_depth = MAX_DESCENT

    def setup_function_extensions(self) -> None:
        super().setup_function_extensions()
        self.function_extensions["match"] = _RegexFunction(whole=True)
        self.function_extensions["search"] = _RegexFunction(whole=False)


_ENVIRONMENT = _Environment()


@lru_cache(maxsize=4096)
def compile_path(expression: str) -> JSONPathQuery:
    """The parsed query; PathError naming what is wrong and where."""
    if not isinstance(expression, str) or not expression.startswith("$"):
        raise PathError(f"JSONPath '{_shown(expression)}' must start with '$'")
    if len(expression) > MAX_PATH_LENGTH:
        raise PathError(f"JSONPath '{_shown(expression)}' is too long "
                        f"({len(expression)} characters; the limit is {MAX_PATH_LENGTH})")
    try:
        return _ENVIRONMENT.compile(expression)
    except (JSONPathError, RecursionError) as error:
        raise PathError(f"JSONPath '{_shown(expression)}' is not valid: {_reason(error)}") from None


def find_nodes(expression: str, data: Any) -> list[Any]:
    """The nodes (`.value`, `.path()`, `.parent`) the expression selects in `data`, in order."""
    query = compile_path(expression)
    try:
        return list(query.find(data))
    except (JSONPathError, RecursionError) as error:
        raise PathError(f"JSONPath '{_shown(expression)}' cannot be applied: {_reason(error)}") from None


def find_values(expression: str, data: Any) -> list[Any]:
    return [node.value for node in find_nodes(expression, data)]


def is_singular(expression: str) -> bool:
    """Whether the expression is an RFC 9535 singular query (names and indices only), which
    selects at most one node."""
    return compile_path(expression).singular_query()


def _reason(error: Exception) -> str:
    return str(error) if isinstance(error, JSONPathError) else "nested too deeply"


def _shown(expression: object) -> str:
    """The start of a long expression, enough to recognise it in a message."""
    text = str(expression)
    return text if len(text) <= 80 else f"{text[:80]}..."
