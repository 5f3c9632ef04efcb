"""A small, safe expression language for workflow transition conditions.

Conditions are parsed by a hand-written lexer and recursive-descent parser into
a tree of nodes; user text is never handed to ``eval``/``exec``, attributes are
never read and only the whitelisted functions can be called.

Language
--------
Literals
    ``42``, ``-3.5``, ``1e3``, ``'text'`` / ``"text"`` (escapes ``\\\\ \\' \\" \\n
    \\t \\r``), ``true``, ``false``, ``null``, lists ``[1, 'a', output.x]``.
Data
    ``$...``           JSONPath (RFC 9535, filters allowed) on the node output,
                       by the rule references follow: a singular query (names
                       and indices only) -> its value, any other query -> the
                       list of its values. Nothing selected is null for a
                       singular query, as for a missing key (a condition may
                       ask whether something is there), and an empty list for
                       any other. It ends at whitespace or one of
                       ``, ) ] = ! < >`` outside quotes and brackets.
    ``output.a.b``     dotted lookup into the node output,
    ``state.a.b``      ... into the workflow state,
    ``input.a.b``      ... into the node input. Integer segments index lists
                       (``output.items.0``). A missing key yields null; asked
                       with ``missing=[]``, evaluation also lists each path it
                       read that is not there (a key present with null is).
    ``gate.decision``  a gate's decision (``approve``, ``edit``), ``gate.comment``,
                       ``gate.decided_by``, ``gate.timed_out`` (engine/gates.py);
                       null after any other node.
Operators (loosest binding first)
    ``or``; ``and``; ``not``; comparisons ``== != < <= > >= in``, ``not in``,
    ``contains``; unary ``-``. Parentheses group. Comparisons do not chain
    (``a < b < c`` is an error).
Functions
    ``len(x)`` (null -> 0), ``exists(x)`` (x is not null), ``lower(x)``
    (a string, or each string in a list). Anything else is a parse error.
    ``len`` of a multi-valued JSONPath (filter, wildcard, slice, ``..``,
    union) counts its matches, since its value is always a list, so
    ``len($.a[?@.x > 1]) == 1`` holds when one item matches.
Semantics
    int and float compare numerically (``1 == 1.0``); booleans are not numbers
    (``true == 1`` and ``true > 0`` are false). ``<``-style comparisons between
    incompatible types are false rather than errors; ``==`` between different
    types is false. ``a contains b`` is ``b in a`` (substring, list item or
    mapping key). ``and``/``or``/``not`` use truthiness and yield booleans; the
    final result is coerced to bool.
Limits
    At most 2000 characters and 50 levels of nesting.

Example: ``len($.atoms[?(@.confidence > 0.8)]) >= 2 and state.retries < 3``
"""

from __future__ import annotations

import functools
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from engine.errors import EngineError
from engine.jsonpath import PathError, compile_path, find_values

__all__ = [
    "Condition",
    "ConditionError",
    "MAX_DEPTH",
    "MAX_LENGTH",
    "evaluate_condition",
    "parse_condition",
]

MAX_LENGTH = 2000
MAX_DEPTH = 50

ROOTS = frozenset({"output", "state", "input", "gate"})
# Keywords are lowercase only so that Python-isms such as ``True``/``None`` are
# reported as unknown names instead of silently meaning something.
KEYWORDS = frozenset({"and", "or", "not", "in", "contains", "true", "false", "null"})

_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r"}
_IDENTIFIER = re.compile(r"[^\W\d]\w*")
_SEGMENT = re.compile(r"[^\W\d]\w*|[0-9]+")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_OPERATOR = re.compile(r"==|!=|<=|>=|<|>")
# Characters that end a JSONPath at bracket depth 0, so that ``$.a==1`` and
# ``[$.a]`` lex as expected; RFC 9535 never uses them outside brackets.
_JSONPATH_STOP = frozenset(",)]=!<>")


class ConditionError(EngineError, ValueError):
    """A condition could not be parsed; ``position`` is a 0-based offset or None."""

    code = "CONDITION_INVALID"

    def __init__(self, message: str, *, position: int | None = None, expression: str | None = None) -> None:
        if position is not None:
            message = f"{message} at position {position}"
        super().__init__(message)
        self.position = position
        self.expression = expression


# --------------------------------------------------------------------------- values


def _is_number(value: Any) -> bool:
    # bool is a subclass of int; excluding it keeps ``true == 1`` false.
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def _is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def _equals(left: Any, right: Any) -> bool:
    if _is_number(left) and _is_number(right):
        return bool(left == right)
    if _is_list(left) and _is_list(right):
        return len(left) == len(right) and all(_equals(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(_equals(left[k], right[k]) for k in left)
    if type(left) is not type(right):
        return False
    try:
        return bool(left == right)
    except Exception:  # exotic objects in caller-supplied data must not break evaluation
        return False


def _orderable(left: Any, right: Any) -> bool:
    return (_is_number(left) and _is_number(right)) or (isinstance(left, str) and isinstance(right, str))


def _contains(container: Any, item: Any) -> bool:
    if isinstance(container, str):
        return isinstance(item, str) and item in container
    if _is_list(container):
        return any(_equals(item, element) for element in container)
    if isinstance(container, Mapping):
        return isinstance(item, str) and item in container
    return False


def _compare(operator: str, left: Any, right: Any) -> bool:
    if operator == "==":
        return _equals(left, right)
    if operator == "!=":
        return not _equals(left, right)
    if operator == "in":
        return _contains(right, left)
    if operator == "not in":
        return not _contains(right, left)
    if operator == "contains":
        return _contains(left, right)
    if not _orderable(left, right):
        return False
    try:
        if operator == "<":
            return bool(left < right)
        if operator == "<=":
            return bool(left <= right)
        if operator == ">":
            return bool(left > right)
        return bool(left >= right)
    except ArithmeticError:  # Decimal('NaN') raises on ordering; float NaN just compares false
        return False


def _fn_len(value: Any) -> int | None:
    if value is None:
        return 0
    if isinstance(value, (str, list, tuple, Mapping)):
        return len(value)
    return None  # numbers and booleans have no length; null makes comparisons false


def _fn_exists(value: Any) -> bool:
    return value is not None


def _fn_lower(value: Any) -> Any:
    if isinstance(value, str):
        return value.lower()
    if _is_list(value):
        # Lets ``'x' in lower($.tags[*])`` work on multi-match JSONPath results.
        return [item.lower() if isinstance(item, str) else item for item in value]
    return None


FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "len": _fn_len,
    "exists": _fn_exists,
    "lower": _fn_lower,
}


# ---------------------------------------------------------------------------- nodes


# Evaluation scope: root name ("output", "state", "input", "gate") -> caller data, and
# under _MISSING (no name a condition can spell) the list the paths read that are not there
# go to, when the caller asked for it.
_Scope = Mapping[str, Any]
_MISSING = "\0missing"


def _read_nothing(scope: _Scope, source: str) -> None:
    missing = scope.get(_MISSING)
    if missing is not None and source not in missing:
        missing.append(source)


class _Node(ABC):
    @abstractmethod
    def evaluate(self, scope: _Scope) -> Any: ...


@dataclass(frozen=True)
class _Literal(_Node):
    value: Any

    def evaluate(self, scope: _Scope) -> Any:
        return self.value


@dataclass(frozen=True)
class _ListLiteral(_Node):
    items: tuple[_Node, ...]

    def evaluate(self, scope: _Scope) -> Any:
        return [item.evaluate(scope) for item in self.items]


@dataclass(frozen=True)
class _JsonPath(_Node):
    source: str
    singular: bool  # an RFC 9535 singular query: names and indices only

    def evaluate(self, scope: _Scope) -> Any:
        values = find_values(self.source, scope["output"])
        if self.singular:
            if not values:
                _read_nothing(scope, self.source)
            return values[0] if values else None
        return values


@dataclass(frozen=True)
class _DottedPath(_Node):
    source: str
    root: str
    segments: tuple[str | int, ...]  # ints are numeric segments such as the 0 in output.items.0

    def evaluate(self, scope: _Scope) -> Any:
        value = scope[self.root]
        for segment in self.segments:
            if isinstance(value, Mapping) and str(segment) in value:
                # JSON object keys are strings, so output.0 on a mapping means key "0".
                value = value[str(segment)]
            elif _is_list(value) and isinstance(segment, int) and segment < len(value):
                value = value[segment]
            else:
                _read_nothing(scope, self.source)
                return None
        return value


@dataclass(frozen=True)
class _Negate(_Node):
    operand: _Node

    def evaluate(self, scope: _Scope) -> Any:
        value = self.operand.evaluate(scope)
        return -value if _is_number(value) else None


@dataclass(frozen=True)
class _Not(_Node):
    operand: _Node

    def evaluate(self, scope: _Scope) -> Any:
        return not self.operand.evaluate(scope)


@dataclass(frozen=True)
class _And(_Node):
    # n-ary rather than nested binary so long chains stay shallow to evaluate
    operands: tuple[_Node, ...]

    def evaluate(self, scope: _Scope) -> Any:
        return all(operand.evaluate(scope) for operand in self.operands)


@dataclass(frozen=True)
class _Or(_Node):
    operands: tuple[_Node, ...]

    def evaluate(self, scope: _Scope) -> Any:
        return any(operand.evaluate(scope) for operand in self.operands)


@dataclass(frozen=True)
class _Compare(_Node):
    operator: str
    left: _Node
    right: _Node

    def evaluate(self, scope: _Scope) -> Any:
        return _compare(self.operator, self.left.evaluate(scope), self.right.evaluate(scope))


@dataclass(frozen=True)
class _Call(_Node):
    name: str
    argument: _Node

    def evaluate(self, scope: _Scope) -> Any:
        return FUNCTIONS[self.name](self.argument.evaluate(scope))


# ---------------------------------------------------------------------------- lexer


@dataclass(frozen=True)
class _Token:
    kind: str  # number, string, jsonpath, name, keyword, op, punct, end
    text: str  # source text, used in error messages
    position: int
    value: Any = None


class _Lexer:
    def __init__(self, source: str) -> None:
        self.source = source
        self.index = 0

    def error(self, message: str, position: int) -> ConditionError:
        return ConditionError(message, position=position, expression=self.source)

    def tokens(self) -> list[_Token]:
        result: list[_Token] = []
        while True:
            token = self._next()
            result.append(token)
            if token.kind == "end":
                return result

    def _next(self) -> _Token:
        source = self.source
        while self.index < len(source) and source[self.index].isspace():
            self.index += 1
        start = self.index
        if start >= len(source):
            return _Token("end", "", start)
        char = source[start]
        if char in "()[],-":
            self.index += 1
            return _Token("punct", char, start)
        if char in "'\"":
            return self._string(start)
        if char == "$":
            return self._jsonpath(start)
        if match := _OPERATOR.match(source, start):
            self.index = match.end()
            return _Token("op", match.group(), start)
        if match := _NUMBER.match(source, start):
            return self._number(match)
        if match := _IDENTIFIER.match(source, start):
            return self._name(match)
        if char == "=":
            raise self.error("unexpected character '=' (use '==' to compare)", start)
        raise self.error(f"unexpected character {char!r}", start)

    def _string(self, start: int) -> _Token:
        source, quote = self.source, self.source[start]
        chars: list[str] = []
        index = start + 1
        while index < len(source):
            char = source[index]
            if char == quote:
                self.index = index + 1
                return _Token("string", source[start : index + 1], start, "".join(chars))
            if char == "\\":
                escaped = source[index + 1 : index + 2]
                if not escaped:
                    break  # backslash at the very end: report the unterminated string
                if escaped not in _ESCAPES:
                    raise self.error(f"unknown escape '\\{escaped}' in string", index)
                chars.append(_ESCAPES[escaped])
                index += 2
                continue
            chars.append(char)
            index += 1
        raise self.error("unterminated string", start)

    def _number(self, match: re.Match[str]) -> _Token:
        text, end = match.group(), match.end()
        follower = self.source[end : end + 1]
        # "1." or "2abc" is almost certainly a typo, not a number followed by a name.
        if follower and (follower == "." or follower == "_" or follower.isalnum()):
            raise self.error(f"invalid number '{text}{follower}'", match.start())
        self.index = end
        value: int | float = float(text) if any(c in text for c in ".eE") else int(text)
        return _Token("number", text, match.start(), value)

    def _name(self, match: re.Match[str]) -> _Token:
        name, start = match.group(), match.start()
        self.index = match.end()
        if name in KEYWORDS:
            return _Token("keyword", name, start)
        segments: list[str | int] = []
        while self.index < len(self.source) and self.source[self.index] == ".":
            segment = _SEGMENT.match(self.source, self.index + 1)
            if segment is None:
                raise self.error(f"expected a key or index after '{self.source[start:self.index + 1]}'", self.index + 1)
            if segment.group().startswith("__"):
                # Dunder names are how Python sandboxes get escaped; we never do
                # attribute access, but refuse them so intent is unambiguous.
                raise self.error(f"'{segment.group()}' is not allowed in a path", segment.start())
            text = segment.group()
            segments.append(int(text) if text.isascii() and text.isdigit() else text)
            self.index = segment.end()
        return _Token("name", self.source[start : self.index], start, (name, tuple(segments)))

    def _jsonpath(self, start: int) -> _Token:
        """Scan a JSONPath: it ends at whitespace or a stop character, but only
        outside quotes and at bracket depth 0, because filters such as
        ``[?(@.score > 0.8)]`` contain spaces, parens and operators."""
        source = self.source
        depth = 0
        quote: str | None = None
        index = start + 1
        while index < len(source):
            char = source[index]
            if quote is not None:
                if char == "\\":
                    index += 1
                elif char == quote:
                    quote = None
            elif char in "'\"":
                quote = char
            elif char in "[(":
                depth += 1
            elif depth == 0 and (char.isspace() or char in _JSONPATH_STOP):
                break
            elif char in "])":
                depth -= 1
            index += 1
        text = source[start:index]
        if quote is not None or depth > 0:
            raise self.error(f"unterminated JSONPath '{text}'", start)
        try:
            expression = compile_path(text)
        except PathError as exc:
            raise self.error(f"invalid JSONPath '{text}' ({exc})", start) from None
        self.index = index
        return _Token("jsonpath", text, start, expression)


# --------------------------------------------------------------------------- parser


class _Parser:
    """Recursive descent over the grammar::

        or_expr    := and_expr ('or' and_expr)*
        and_expr   := not_expr ('and' not_expr)*
        not_expr   := 'not' not_expr | comparison
        comparison := unary (COMPARISON_OPERATOR unary)?
        unary      := '-' unary | primary
        primary    := literal | list | path | call | '(' or_expr ')'
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.tokens = _Lexer(source).tokens()
        self.index = 0
        self.depth = 0
        self.paths: list[str] = []

    # -- helpers

    @property
    def current(self) -> _Token:
        return self.tokens[self.index]

    def peek(self, offset: int = 1) -> _Token:
        return self.tokens[min(self.index + offset, len(self.tokens) - 1)]

    def advance(self) -> _Token:
        token = self.current
        if token.kind != "end":
            self.index += 1
        return token

    def at(self, kind: str, text: str | None = None) -> bool:
        return self.current.kind == kind and (text is None or self.current.text == text)

    def error(self, message: str, token: _Token | None = None) -> ConditionError:
        token = token or self.current
        return ConditionError(message, position=token.position, expression=self.source)

    def unexpected(self, token: _Token | None = None) -> ConditionError:
        token = token or self.current
        if token.kind == "end":
            return self.error("unexpected end of expression", token)
        return self.error(f"unexpected token '{token.text}'", token)

    def expect(self, text: str) -> _Token:
        if not self.at("punct", text):
            if self.current.kind == "end":
                raise self.error(f"expected '{text}' but the expression ended")
            raise self.error(f"expected '{text}' but found '{self.current.text}'")
        return self.advance()

    @contextmanager
    def nested(self, token: _Token) -> Iterator[None]:
        # Every recursive grammar rule passes through here, bounding Python
        # recursion for hostile input like "((((((...".
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"expression is nested too deeply (limit {MAX_DEPTH})", token)
        try:
            yield
        finally:
            self.depth -= 1

    # -- grammar

    def parse(self) -> _Node:
        if self.current.kind == "end":
            raise ConditionError("condition is empty", expression=self.source)
        node = self.or_expr()
        if self.current.kind != "end":
            raise self.unexpected()
        return node

    def or_expr(self) -> _Node:
        operands = [self.and_expr()]
        while self.at("keyword", "or"):
            self.advance()
            operands.append(self.and_expr())
        return operands[0] if len(operands) == 1 else _Or(tuple(operands))

    def and_expr(self) -> _Node:
        operands = [self.not_expr()]
        while self.at("keyword", "and"):
            self.advance()
            operands.append(self.not_expr())
        return operands[0] if len(operands) == 1 else _And(tuple(operands))

    def not_expr(self) -> _Node:
        if self.at("keyword", "not"):
            token = self.advance()
            with self.nested(token):
                return _Not(self.not_expr())
        return self.comparison()

    def comparison_operator(self) -> str | None:
        token = self.current
        if token.kind == "op" or (token.kind == "keyword" and token.text in ("in", "contains")):
            return token.text
        following = self.peek()
        if token.kind == "keyword" and token.text == "not" and following.kind == "keyword" and following.text == "in":
            return "not in"
        return None

    def comparison(self) -> _Node:
        left = self.unary()
        operator = self.comparison_operator()
        if operator is None:
            return left
        self.advance()
        if operator == "not in":
            self.advance()
        right = self.unary()
        if self.comparison_operator() is not None:
            raise self.error(f"comparisons cannot be chained; unexpected '{self.current.text}'")
        return _Compare(operator, left, right)

    def unary(self) -> _Node:
        if self.at("punct", "-"):
            token = self.advance()
            with self.nested(token):
                operand = self.unary()
            if isinstance(operand, _Literal) and _is_number(operand.value):
                return _Literal(-operand.value)
            return _Negate(operand)
        return self.primary()

    def primary(self) -> _Node:
        token = self.current
        if token.kind in ("number", "string"):
            self.advance()
            return _Literal(token.value)
        if token.kind == "keyword" and token.text in ("true", "false", "null"):
            self.advance()
            return _Literal({"true": True, "false": False, "null": None}[token.text])
        if token.kind == "jsonpath":
            self.advance()
            self.paths.append(token.text)
            return _JsonPath(token.text, token.value.singular_query())
        if token.kind == "name":
            return self.name()
        if self.at("punct", "("):
            self.advance()
            with self.nested(token):
                node = self.or_expr()
            self.expect(")")
            return node
        if self.at("punct", "["):
            return self.list_literal()
        raise self.unexpected()

    def list_literal(self) -> _Node:
        opening = self.advance()
        items: list[_Node] = []
        with self.nested(opening):
            if not self.at("punct", "]"):
                items.append(self.or_expr())
                while self.at("punct", ","):
                    self.advance()
                    items.append(self.or_expr())
        self.expect("]")
        return _ListLiteral(tuple(items))

    def name(self) -> _Node:
        token = self.advance()
        root, segments = token.value
        if self.at("punct", "("):
            if segments or root not in FUNCTIONS:
                allowed = ", ".join(sorted(FUNCTIONS))
                raise self.error(f"unknown function '{token.text}' (allowed: {allowed})", token)
            return self.call(token)
        if root not in ROOTS:
            raise self.error(
                f"unknown name '{root}' (read data with output.…, state.…, input.…, gate.… or a $ JSONPath)", token
            )
        self.paths.append(token.text)
        return _DottedPath(token.text, root, segments)

    def call(self, name: _Token) -> _Node:
        opening = self.advance()
        arguments: list[_Node] = []
        with self.nested(opening):
            if not self.at("punct", ")"):
                arguments.append(self.or_expr())
                while self.at("punct", ","):
                    self.advance()
                    arguments.append(self.or_expr())
        self.expect(")")
        if len(arguments) != 1:
            raise self.error(f"{name.text}() takes exactly 1 argument ({len(arguments)} given)", name)
        argument = arguments[0]
        return _Call(name.text, argument)


# ------------------------------------------------------------------------------ API


class Condition:
    """A parsed condition; immutable and safe to share (parse results are cached)."""

    __slots__ = ("source", "_root", "_paths")

    def __init__(self, source: str, root: _Node, paths: Sequence[str]) -> None:
        self.source = source
        self._root = root
        self._paths = tuple(dict.fromkeys(paths))  # de-duplicated, in order of appearance

    def evaluate(self, *, output: Any = None, state: Any = None, input: Any = None, gate: Any = None,
                 missing: list[str] | None = None) -> bool:
        """The condition's value. `missing`, when given, gets each path read that is not
        there (it reads as null), in the order read: what a record of the value should say."""
        scope = {"output": output, "state": state, "input": input, "gate": gate, _MISSING: missing}
        return bool(self._root.evaluate(scope))

    def paths(self) -> list[str]:
        """The JSONPath and dotted paths this condition reads, for display."""
        return list(self._paths)

    def __repr__(self) -> str:
        return f"Condition({self.source!r})"


def parse_condition(text: str) -> Condition:
    """Parse ``text`` or raise ConditionError describing what is wrong and where."""
    if not isinstance(text, str):
        raise ConditionError(f"condition must be a string, not {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ConditionError(f"condition is too long ({len(text)} characters; the limit is {MAX_LENGTH})")
    return _parse_cached(text)


@functools.lru_cache(maxsize=1024)
def _parse_cached(text: str) -> Condition:
    parser = _Parser(text)
    root = parser.parse()
    return Condition(text, root, parser.paths)


def evaluate_condition(text: str, *, output: Any = None, state: Any = None, input: Any = None,
                       gate: Any = None, missing: list[str] | None = None) -> bool:
    return parse_condition(text).evaluate(output=output, state=state, input=input, gate=gate, missing=missing)
