import math
import operator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.context.errors import REF_FILTER_ERROR, REF_NOT_FOUND, RefError
from engine.context.filters import apply_filter, matches

ATOMS = [
    {"atom_id": "a1", "atom_type": "claim", "confidence": 0.9, "tags": ["core", "key"], "text": "attention is all"},
    {
        "atom_id": "a2",
        "atom_type": "methodology",
        "confidence": 0.7,
        "tags": ["method"],
        "metadata": {"source_section": "3.1"},
    },
    {"atom_id": "a3", "atom_type": "methodology", "confidence": 0.5, "tags": [], "metadata": {"source_section": "4"}},
    {"atom_id": "a4", "atom_type": "background", "confidence": None},
]


def ids(elements):
    return [element["atom_id"] for element in elements]


def spec(field, operator, value):
    return {"field": field, "operator": operator, "value": value}


def test_it_keeps_the_elements_of_a_list_that_match():
    assert ids(apply_filter(ATOMS, spec("atom_type", "eq", "methodology"))) == ["a2", "a3"]


def test_it_returns_a_single_object_when_it_matches_and_not_found_when_not():
    assert apply_filter(ATOMS[0], spec("atom_type", "eq", "claim")) is ATOMS[0]
    with pytest.raises(RefError) as caught:
        apply_filter(ATOMS[0], spec("atom_type", "eq", "evidence"))
    assert caught.value.code == REF_NOT_FOUND


@pytest.mark.parametrize("operator_name", ["eq", "ne"])
def test_it_refuses_a_filter_on_a_field_that_no_element_has(operator_name):
    for data, where in [(ATOMS, "none of the 4 elements"), (ATOMS[0], "none of the selected element")]:
        with pytest.raises(RefError) as caught:
            apply_filter(data, spec("atomtype", operator_name, "claim"))
        assert caught.value.code == REF_FILTER_ERROR
        assert caught.value.message == f"filter field 'atomtype' is in {where}"


def test_it_follows_a_dotted_field_into_nested_objects():
    assert ids(apply_filter(ATOMS, spec("metadata.source_section", "eq", "3.1"))) == ["a2"]
    assert ids(apply_filter(ATOMS, spec("metadata.source_section", "ne", "x"))) == ids(ATOMS)


def test_it_matches_ne_on_a_missing_field_or_null_but_nothing_else_does():
    assert ids(apply_filter(ATOMS, spec("metadata.source_section", "ne", "4"))) == ["a1", "a2", "a4"]
    assert ids(apply_filter(ATOMS, spec("confidence", "ne", 0.9))) == ["a2", "a3", "a4"]
    for name, value in [("eq", 0.5), ("gt", 0), ("lte", 1), ("in", [None, 0.5]), ("contains", "x")]:
        assert "a4" not in ids(apply_filter(ATOMS, spec("confidence", name, value)))


def test_it_matches_in_by_membership_or_by_overlap_with_a_list_field():
    assert ids(apply_filter(ATOMS, spec("atom_type", "in", ["claim", "background"]))) == ["a1", "a4"]
    assert ids(apply_filter(ATOMS, spec("tags", "in", ["key", "method"]))) == ["a1", "a2"]
    assert apply_filter(ATOMS, spec("tags", "in", [])) == []


def test_it_orders_numbers_with_numbers_and_strings_with_strings():
    assert ids(apply_filter(ATOMS, spec("confidence", "gte", 0.7))) == ["a1", "a2"]
    assert ids(apply_filter(ATOMS, spec("confidence", "lt", 0.7))) == ["a3"]
    assert ids(apply_filter(ATOMS, spec("atom_id", "gt", "a2"))) == ["a3", "a4"]


def test_it_does_not_compare_a_string_with_a_number():
    assert apply_filter(ATOMS, spec("atom_id", "gt", 0)) == []
    assert apply_filter(ATOMS, spec("confidence", "lt", "z")) == []
    assert not matches({"n": "1"}, spec("n", "eq", 1))


def test_it_matches_contains_as_substring_or_list_membership():
    assert ids(apply_filter(ATOMS, spec("text", "contains", "attention"))) == ["a1"]
    assert ids(apply_filter(ATOMS, spec("tags", "contains", "method"))) == ["a2"]
    assert not matches({"tags": ["methods"]}, spec("tags", "contains", "method"))
    assert not matches({"n": 12}, spec("n", "contains", "1"))


def test_it_does_not_take_booleans_for_numbers():
    assert not matches({"flag": True}, spec("flag", "eq", 1))
    assert not matches({"flag": True}, spec("flag", "gt", 0))
    assert not matches({"flag": False}, spec("flag", "lte", 0))
    assert not matches({"flag": 1}, spec("flag", "in", [True]))
    assert not matches({"flag": [True]}, spec("flag", "eq", [1]))
    assert matches({"flag": True}, spec("flag", "eq", True))
    assert matches({"flag": True}, spec("flag", "ne", 1))


def test_it_compares_ints_and_floats_as_python_does():
    assert matches({"n": 1.0}, spec("n", "eq", 1))
    assert matches({"n": 1}, spec("n", "in", [2, 1.0]))
    assert matches({"n": [1.0, 2]}, spec("n", "eq", [1, 2.0]))


def test_it_never_matches_nan():
    nan = float("nan")
    for name, value in [("eq", nan), ("ne", 1), ("ne", nan), ("gt", -math.inf), ("lt", math.inf), ("in", [nan])]:
        assert not matches({"n": nan}, spec("n", name, value)), name
    assert not matches({"n": 1}, spec("n", "ne", nan))


def test_it_refuses_to_filter_what_is_neither_a_list_nor_an_object():
    with pytest.raises(RefError) as caught:
        apply_filter("text", spec("a", "eq", 1))
    assert caught.value.code == REF_FILTER_ERROR


@pytest.mark.parametrize(
    "bad, named",
    [
        ("eq", "an object"),
        ({"operator": "eq", "value": 1}, "'field'"),
        ({"field": "a", "value": 1}, "'operator'"),
        ({"field": "a", "operator": "eq"}, "'value'"),
        ({"field": "a", "operator": "eq", "value": 1, "op": "x"}, "'op'"),
        (spec("a", "like", "x"), "'like'"),
        (spec("", "eq", 1), "'field'"),
        (spec("a..b", "eq", 1), "'field'"),
        (spec("a", "in", "x"), "'in' needs a list"),
        (spec("a", "gt", True), "'gt' needs a number or a string"),
        (spec("a", "lte", [1]), "'lte' needs a number or a string"),
        (spec("a", "contains", 1), "'contains' needs a string"),
        (spec("a", "eq", None), "null"),
        (spec("a", "ne", None), "null"),
    ],
)
def test_it_refuses_a_malformed_filter_naming_the_problem(bad, named):
    with pytest.raises(RefError) as caught:
        apply_filter([], bad)
    assert caught.value.code == REF_FILTER_ERROR
    assert named in caught.value.message


# ---------------------------------------------------------------- against an oracle

MISSING = object()
ORDERING = {"gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le}


def oracle(element, field, name, value):
    found = element.get(field, MISSING)
    if any(isinstance(x, float) and x != x for x in (found, value)):
        return False
    if found is MISSING or found is None:
        return name == "ne"

    def number(x):
        return type(x) in (int, float)

    def same(a, b):
        if number(a) and number(b):
            return a == b
        return type(a) is type(b) and a == b

    if name == "eq":
        return same(found, value)
    if name == "ne":
        return not same(found, value)
    if name == "in":
        return any(same(item, wanted) for item in (found if isinstance(found, list) else [found]) for wanted in value)
    if name == "contains":
        if isinstance(found, str):
            return value in found
        return isinstance(found, list) and any(type(item) is str and item == value for item in found)
    if (number(found) and number(value)) or (isinstance(found, str) and isinstance(value, str)):
        return ORDERING[name](found, value)
    return False


FIELDS = st.sampled_from(["a", "b", "c"])
NUMBERS = st.integers(-2, 2) | st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0, math.inf, -math.inf, math.nan])
STRINGS = st.text(alphabet="ab1", max_size=3)
SCALARS = NUMBERS | st.booleans() | STRINGS | st.none()
ELEMENTS = st.dictionaries(FIELDS, SCALARS | st.lists(SCALARS, max_size=3), max_size=3)
SPECS = st.one_of(
    st.tuples(FIELDS, st.sampled_from(["eq", "ne"]), NUMBERS | st.booleans() | STRINGS),
    st.tuples(FIELDS, st.just("in"), st.lists(SCALARS, max_size=3)),
    st.tuples(FIELDS, st.sampled_from(sorted(ORDERING)), NUMBERS | STRINGS),
    st.tuples(FIELDS, st.just("contains"), STRINGS),
)


@settings(max_examples=400, deadline=None)
@given(ELEMENTS, SPECS)
def test_it_matches_exactly_what_the_reference_rules_match(element, triple):
    field, name, value = triple
    assert matches(element, spec(field, name, value)) == oracle(element, field, name, value)


SEED_ROWS = [
    {"type": "claim", "status": "accepted", "tag": "core", "score": 0.7, "priority": 2, "text": "attention heads"},
    {"type": "evidence", "status": "rejected", "tag": "misc", "score": 0.69, "priority": 3, "text": "recurrence"},
]


@pytest.mark.parametrize("seed_example, kept", [
    ({"field": "type", "operator": "eq", "value": "claim"}, [0]),
    ({"field": "status", "operator": "ne", "value": "rejected"}, [0]),
    ({"field": "tag", "operator": "in", "value": ["core", "key"]}, [0]),
    ({"field": "score", "operator": "gte", "value": 0.7}, [0]),
    ({"field": "priority", "operator": "lt", "value": 3}, [0]),
    ({"field": "text", "operator": "contains", "value": "attention"}, [0]),
])
def test_it_applies_each_operator_example_of_the_seed(seed_example, kept):
    assert apply_filter(SEED_ROWS, seed_example) == [SEED_ROWS[i] for i in kept]
