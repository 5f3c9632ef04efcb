"""Tests for the workflow condition language (pure Python, no Django needed)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.conditions import (
    MAX_DEPTH,
    MAX_LENGTH,
    Condition,
    ConditionError,
    evaluate_condition,
    parse_condition,
)

OUTPUT = {
    "atoms": [
        {"name": "a", "confidence": 0.95},
        {"name": "b", "confidence": 0.5},
        {"name": "c", "confidence": 0.81},
    ],
    "items": [10, 20, 30],
    "label": "Approved",
    "score": 7,
    "nested": {"deep": {"value": 1.5}},
}
STATE = {"retries": 2, "status": "open", "tags": ["x", "y"]}
INPUT = {"user": {"name": "Ada"}}


def check(text: str) -> bool:
    return evaluate_condition(text, output=OUTPUT, state=STATE, input=INPUT)


def error_for(text: str) -> ConditionError:
    with pytest.raises(ConditionError) as info:
        parse_condition(text)
    return info.value


# ----------------------------------------------------------------------- literals


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1 == 1", True),
        ("-3 < 0", True),
        ("-2.5 == -2.5", True),
        ("1e3 == 1000", True),
        ("'it\\'s' == \"it's\"", True),
        ("'a\\nb' contains '\\n'", True),
        ("true", True),
        ("false", False),
        ("null == null", True),
        ("[1, 'a'] == [1, 'a']", True),
        ("[] == []", True),
        ("0", False),
        ("''", False),
        ("'x'", True),
    ],
)
def test_it_evaluates_literals(text: str, expected: bool) -> None:
    assert check(text) is expected


def test_it_only_accepts_lowercase_keywords() -> None:
    for text in ("True", "False", "None"):
        assert "unknown name" in str(error_for(text))


# ---------------------------------------------------------------------- operators


@pytest.mark.parametrize(
    "text, expected",
    [
        ("output.score == 7", True),
        ("output.score == 8", False),
        ("output.score != 8", True),
        ("output.score != 7", False),
        ("output.score < 8", True),
        ("output.score < 7", False),
        ("output.score <= 7", True),
        ("output.score <= 6", False),
        ("output.score > 6", True),
        ("output.score > 7", False),
        ("output.score >= 7", True),
        ("output.score >= 8", False),
        ("'b' < 'c'", True),
        ("'b' >= 'c'", False),
    ],
)
def test_it_applies_each_comparison_operator(text: str, expected: bool) -> None:
    assert check(text) is expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("20 in output.items", True),
        ("25 in output.items", False),
        ("25 not in output.items", True),
        ("20 not in output.items", False),
        ("'prov' in output.label", True),
        ("'nope' not in output.label", True),
        ("output.label contains 'App'", True),
        ("output.label contains 'app'", False),
        ("state.tags contains 'y'", True),
        ("state.tags contains 'z'", False),
        ("'deep' in output.nested", True),
        ("20.0 in output.items", True),
        ("1 in 'abc1'", False),
        ("'a' in null", False),
        ("'a' not in null", True),
        ("null contains 'a'", False),
    ],
)
def test_it_applies_membership_operators(text: str, expected: bool) -> None:
    assert check(text) is expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("true and true", True),
        ("true and false", False),
        ("false or true", True),
        ("false or false", False),
        ("not false", True),
        ("not true", False),
        ("not not true", True),
        ("not output.missing", True),
        ("output.label and output.score", True),
        ("output.items and ''", False),
    ],
)
def test_it_applies_boolean_operators_with_truthiness(text: str, expected: bool) -> None:
    assert check(text) is expected


def test_it_short_circuits_and_or() -> None:
    # The right-hand sides would be fine anyway; this checks the result shape.
    assert check("true or output.missing.x > 1") is True
    assert check("false and output.score == 7") is False


@pytest.mark.parametrize(
    "text, expected",
    [
        # and binds tighter than or
        ("true or true and false", True),
        ("(true or true) and false", False),
        ("false and true or true", True),
        ("false and (true or true)", False),
        # not binds tighter than and/or but looser than comparison
        ("not 1 == 2", True),
        ("not false and false", False),
        ("not (false and false)", True),
        ("not false or false", True),
        # unary minus binds tighter than comparison
        ("-output.score < -6", True),
        ("- -output.score == 7", True),
    ],
)
def test_it_respects_precedence_and_parentheses(text: str, expected: bool) -> None:
    assert check(text) is expected


def test_it_allows_redundant_parentheses() -> None:
    assert check("((((output.score)))) == ((7))") is True


# -------------------------------------------------------------------------- paths


def test_it_reads_jsonpath_with_a_filter() -> None:
    assert check("len($.atoms[?(@.confidence > 0.8)]) >= 2") is True
    assert check("len($.atoms[?(@.confidence>0.9)]) == 1") is True
    assert check("$.atoms[?(@.confidence > 0.9)].name == ['a']") is True


def test_it_counts_matches_when_len_is_given_a_multi_valued_jsonpath() -> None:
    # One match must count as 1, not as the number of keys of the matched atom.
    assert check("len($.atoms[?(@.confidence > 0.9)]) == 1") is True
    assert check("len($.atoms[?(@.confidence > 0.99)]) == 0") is True
    assert check("len($.atoms[*]) == 3") is True
    assert check("len($..confidence) == 3") is True
    assert check("len($.items[0:2]) == 2") is True
    # A singular path still measures the value it points at.
    assert check("len($.items) == 3") is True
    assert check("len($.atoms[0]) == 2") is True
    assert check("len($.label) == 8") is True


def test_it_returns_none_single_value_or_list_from_jsonpath() -> None:
    assert check("$.nothing == null") is True
    assert check("$.score == 7") is True
    assert check("$.atoms[*].name == ['a', 'b', 'c']") is True
    assert check("$.nested.deep.value == 1.5") is True


def test_it_ends_jsonpath_at_depth_zero_delimiters() -> None:
    assert check("$.score==7") is True
    assert check("[$.score, $.label] == [7, 'Approved']") is True
    assert check("exists($.label)") is True
    assert check("$['label'] == 'Approved'") is True
    assert check("$.atoms[?(@.name == 'a, b)')] == []") is True


def test_it_reads_dotted_paths_into_output_state_and_input() -> None:
    assert check("output.nested.deep.value == 1.5") is True
    assert check("state.status == 'open'") is True
    assert check("state.retries < 3") is True
    assert check("input.user.name == 'Ada'") is True


def test_it_indexes_lists_with_integer_segments() -> None:
    assert check("output.items.0 == 10") is True
    assert check("output.items.2 == 30") is True
    assert check("output.atoms.1.name == 'b'") is True
    assert check("output.items.3 == null") is True
    assert evaluate_condition("output.0 == 'zero'", output={"0": "zero"}) is True


def test_it_reads_whole_roots() -> None:
    assert evaluate_condition("output == 5", output=5) is True
    assert evaluate_condition("state contains 'k'", state={"k": 1}) is True
    assert evaluate_condition("$ == 'x'", output="x") is True


def test_it_treats_missing_keys_as_null() -> None:
    assert check("output.nope == null") is True
    assert check("output.nope.deeper.still == null") is True
    assert check("output.label.length == null") is True  # no attribute access on str
    assert check("output.items.name == null") is True
    assert check("state.retries.x == null") is True
    assert evaluate_condition("output.a == null") is True
    assert evaluate_condition("state.a.b == null", state=None) is True
    assert evaluate_condition("$.a.b == null", output=[1, 2]) is True


def test_it_lists_the_paths_it_reads() -> None:
    condition = parse_condition(
        "len($.atoms[?(@.confidence > 0.8)]) > 1 and state.retries < output.max or state.retries == 0"
    )
    assert condition.paths() == ["$.atoms[?(@.confidence > 0.8)]", "state.retries", "output.max"]
    assert parse_condition("1 == 1").paths() == []


def test_it_names_the_paths_it_read_that_are_not_there() -> None:
    missing: list[str] = []
    assert evaluate_condition("state.rounds < input.max_rounds or output.score > $.nope", output=OUTPUT,
                              state={"rounds": 1}, input={}, missing=missing) is False
    assert missing == ["input.max_rounds", "$.nope"]
    # A key that is there with null is there; a branch never evaluated reads nothing.
    missing = []
    assert evaluate_condition("state.x == null or input.never", state={"x": None}, missing=missing) is True
    assert missing == []
    missing = []
    evaluate_condition("output.items.7 == output.label.length", output=OUTPUT, missing=missing)
    assert missing == ["output.items.7", "output.label.length"]


# ---------------------------------------------------------------------- functions


def test_it_supports_len() -> None:
    assert check("len(output.items) == 3") is True
    assert check("len(output.label) == 8") is True
    assert check("len(output.nested) == 1") is True
    assert check("len(output.missing) == 0") is True
    assert check("len(output.score) == null") is True  # numbers have no length


def test_it_supports_exists() -> None:
    assert check("exists(output.label)") is True
    assert check("exists(output.missing)") is False
    assert evaluate_condition("exists(output.flag)", output={"flag": False}) is True
    assert evaluate_condition("exists($.zero)", output={"zero": 0}) is True


def test_it_supports_lower() -> None:
    assert check("lower(output.label) == 'approved'") is True
    assert check("lower(output.missing) == null") is True
    assert check("lower(output.score) == null") is True
    assert evaluate_condition("'x' in lower($.tags[*])", output={"tags": ["X", "Y"]}) is True


# ---------------------------------------------------------------------- semantics


def test_it_compares_int_and_float_numerically() -> None:
    assert check("1 == 1.0") is True
    assert check("output.score == 7.0") is True
    assert check("output.score < 7.5") is True
    assert check("[1, 2] == [1.0, 2.0]") is True


def test_it_does_not_treat_bools_as_numbers() -> None:
    assert check("true == 1") is False
    assert check("false == 0") is False
    assert check("true != 1") is True
    assert check("true > 0") is False
    assert check("false < 1") is False
    assert check("1 in [true]") is False
    assert evaluate_condition("output.flag == true", output={"flag": True}) is True
    assert evaluate_condition("output.flag == 1", output={"flag": True}) is False


@pytest.mark.parametrize(
    "text",
    [
        "'a' < 1",
        "'a' > 1",
        "1 <= 'a'",
        "1 >= 'a'",
        "null < 1",
        "null >= 0",
        "[1] < [2]",
        "output.nested > 0",
        "output.missing > 0",
        "true < false",
    ],
)
def test_it_makes_incompatible_ordering_false(text: str) -> None:
    assert check(text) is False


def test_it_makes_equality_across_types_false() -> None:
    assert check("'1' == 1") is False
    assert check("null == 0") is False
    assert check("null == false") is False
    assert check("[] == null") is False
    assert check("'1' != 1") is True


def test_it_negates_only_numbers() -> None:
    assert check("-output.label == null") is True
    assert check("-output.score == -7") is True


def test_it_never_raises_on_odd_data() -> None:
    assert evaluate_condition("output.x < 1", output={"x": float("nan")}) is False
    assert evaluate_condition("output.x == output.x", output={"x": object()}) is True
    assert evaluate_condition("$.a[?(@.b > 1)] == []", output={"a": [{"b": "text"}]}) is True
    assert evaluate_condition("output.a.b", output={"a": "not a mapping"}) is False


def test_it_returns_plain_bools() -> None:
    assert evaluate_condition("output.items", output={"items": [1]}) is True
    assert evaluate_condition("output.items", output={"items": []}) is False


# ------------------------------------------------------------------------ the API


def test_it_caches_parsed_conditions() -> None:
    first = parse_condition("state.retries < 3")
    assert parse_condition("state.retries < 3") is first
    assert isinstance(first, Condition)
    assert first.source == "state.retries < 3"


def test_it_evaluates_a_parsed_condition_repeatedly() -> None:
    condition = parse_condition("state.retries < 3")
    assert condition.evaluate(state={"retries": 1}) is True
    assert condition.evaluate(state={"retries": 3}) is False
    assert condition.evaluate() is False


# ------------------------------------------------------------------------- errors


def test_it_reports_error_position_and_expression() -> None:
    error = error_for("(1 == 1))")
    assert str(error) == "unexpected token ')' at position 8"
    assert error.position == 8
    assert error.expression == "(1 == 1))"
    assert isinstance(error, ValueError)


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_it_rejects_empty_conditions(text: str) -> None:
    error = error_for(text)
    assert "empty" in str(error)
    assert error.position is None


@pytest.mark.parametrize(
    "text, position",
    [("(1 == 1", 7), ("((true)", 7), ("len(output.items", 16), ("[1, 2", 5), (")", 0), ("1 == 1)", 6)],
)
def test_it_rejects_unbalanced_parentheses(text: str, position: int) -> None:
    assert error_for(text).position == position


def test_it_rejects_unknown_functions() -> None:
    error = error_for("upper(output.label) == 'X'")
    assert "unknown function 'upper'" in str(error)
    assert error.position == 0
    assert "unknown function" in str(error_for("output.label.upper()"))


def test_it_checks_function_arity() -> None:
    assert "exactly 1 argument (2 given)" in str(error_for("len(1, 2)"))
    assert "exactly 1 argument (0 given)" in str(error_for("exists()"))


@pytest.mark.parametrize("text", ["foo == 1", "outputs.a == 1", "x", "len == 1", "1 == bar"])
def test_it_rejects_unknown_bare_identifiers(text: str) -> None:
    assert "unknown name" in str(error_for(text))


@pytest.mark.parametrize(
    "text, position",
    [("1 == 1 garbage", 7), ("true true", 5), ("output.a 1", 9), ("1 == 2 not true", 7), ("(1) (2)", 4)],
)
def test_it_rejects_trailing_garbage(text: str, position: int) -> None:
    error = error_for(text)
    assert "unexpected token" in str(error)
    assert error.position == position


@pytest.mark.parametrize("text", ["1 < 2 < 3", "1 == 1 == 1", "1 in [1] not in [2]"])
def test_it_rejects_chained_comparisons(text: str) -> None:
    assert "chained" in str(error_for(text))


@pytest.mark.parametrize("text", ["$.a[?(@.b > 1)] == 1 and $.# == 1", "$.[[1]]", "$..", "$.a b"])
def test_it_rejects_bad_jsonpath_at_parse_time(text: str) -> None:
    error = error_for(text)
    assert "JSONPath" in str(error) or "unexpected token" in str(error)


def test_it_names_the_bad_jsonpath_in_the_error() -> None:
    error = error_for("len($.#foo) > 1")
    assert "invalid JSONPath '$.#foo'" in str(error)
    assert error.position == 4
    assert "unterminated JSONPath" in str(error_for("$.a[?(@.b > 1) == 2"))


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os')",
        "__import__('os').system('ls')",
        "eval('1')",
        "open('/etc/passwd')",
        "output.__class__",
        "output.__class__.__mro__",
        "state.__dict__ == null",
        "input.a.__globals__",
        "output.a.b()",
        "output['a']",
        "lambda: 1",
        "1; 2",
        "a = 1",
        "1 + 1",
        "`ls`",
    ],
)
def test_it_rejects_code_injection_attempts(text: str) -> None:
    error_for(text)


def test_it_rejects_dunder_segments_at_parse_time() -> None:
    error = error_for("output.__class__")
    assert "'__class__' is not allowed" in str(error)
    assert error.position == 7


@pytest.mark.parametrize(
    "text",
    ["'unterminated", "'bad \\q escape'", "1.", "1.x", "2abc", "output.", "output..a", "output.-1", "a = 1", "1 ! 2"],
)
def test_it_rejects_malformed_tokens(text: str) -> None:
    error = error_for(text)
    assert error.position is not None


def test_it_rejects_over_long_input() -> None:
    just_right = "1 == 1" + " " * (MAX_LENGTH - 6)
    assert parse_condition(just_right).evaluate() is True
    error = error_for(just_right + " ")
    assert "too long" in str(error)


def test_it_rejects_deep_nesting() -> None:
    assert evaluate_condition("(" * MAX_DEPTH + "true" + ")" * MAX_DEPTH) is True
    for text in (
        "(" * (MAX_DEPTH + 1) + "true" + ")" * (MAX_DEPTH + 1),
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
        "not " * (MAX_DEPTH + 1) + "true",
        "-" * (MAX_DEPTH + 1) + "1",
        "len(" * (MAX_DEPTH + 1) + "1" + ")" * (MAX_DEPTH + 1),
        "(" * 1000,
    ):
        assert "nested too deeply" in str(error_for(text))


def test_it_survives_long_flat_chains() -> None:
    chain = " and ".join(["true"] * 200)
    assert len(chain) <= MAX_LENGTH
    assert evaluate_condition(chain) is True


def test_it_rejects_non_string_input() -> None:
    with pytest.raises(ConditionError):
        parse_condition(None)  # type: ignore[arg-type]


# ----------------------------------------------------------------------- property


@given(st.integers(), st.integers())
def test_it_orders_ints_like_python(a: int, b: int) -> None:
    assert evaluate_condition("output.a < output.b", output={"a": a, "b": b}) == (a < b)
    assert evaluate_condition("output.a == output.b", output={"a": a, "b": b}) == (a == b)


@given(st.floats(allow_nan=False), st.floats(allow_nan=False))
def test_it_orders_floats_like_python(a: float, b: float) -> None:
    assert evaluate_condition("output.a < output.b", output={"a": a, "b": b}) == (a < b)
    assert evaluate_condition("output.a >= output.b", output={"a": a, "b": b}) == (a >= b)


@given(st.integers(min_value=-(10**6), max_value=10**6), st.floats(allow_nan=False, allow_infinity=False))
def test_it_compares_mixed_ints_and_floats_like_python(a: int, b: float) -> None:
    assert evaluate_condition("output.a <= output.b", output={"a": a, "b": b}) == (a <= b)
    assert evaluate_condition("output.a == output.b", output={"a": a, "b": b}) == (a == b)
