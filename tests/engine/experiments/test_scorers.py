"""Each scorer against values worked by hand, every refusal of its document, and every case
where it cannot score (which is not a 0)."""
import pytest

from engine.experiments.scorers import (
    EXPECTED_UNUSABLE,
    NO_EXPECTED,
    NO_OUTPUT,
    NOT_MEASURED,
    NotScored,
    Score,
    ScorerError,
    check_scorers,
    evaluation_score,
    score,
)


def one(doc):
    return check_scorers([doc])[0]


def run(doc, output, expected=None, has_expected=True, has_output=True):
    return score(one(doc), input={"q": 1}, expected=expected, has_expected=has_expected, output=output,
                 has_output=has_output)


def refused(doc, field, words=""):
    with pytest.raises(ScorerError) as caught:
        check_scorers(doc)
    assert caught.value.field == field
    assert caught.value.code == "SCORER_INVALID"
    assert words in str(caught.value)
    return str(caught.value)


# -- checking ----------------------------------------------------------------------------------


def test_it_gives_each_scorer_its_name_type_threshold_and_fields():
    scorers = check_scorers([{"type": "exact"}, {"type": "numeric", "tolerance": 0.5, "name": "close", "pass": 0.5},
                             {"type": "llm_judge", "rubric": "polite"}, {"type": "evaluation", "score": "overall"}])
    assert [(s.name, s.type, s.threshold) for s in scorers] == [
        ("exact", "exact", 1.0), ("close", "numeric", 0.5), ("llm_judge", "llm_judge", 0.5),
        ("evaluation", "evaluation", 0.7)]
    assert scorers[1].config == {"path": None, "tolerance": 0.5, "relative": False}
    assert [s.local for s in scorers] == [True, True, False, False]
    assert check_scorers([{"type": "evaluation", "score": "accuracy", "pass_at": 0.9}])[0].threshold == 0.9


@pytest.mark.parametrize(("doc", "field", "words"), [
    ({"type": "exact"}, "scorers", "is a list"),
    ([{"type": "exact"}] * 21, "scorers", "at most 20"),
    (["exact"], "scorers[0]", "JSON object"),
    ([{"type": "fuzzy"}], "scorers[0].type", "one of exact"),
    ([{}], "scorers[0].type", "is null"),
    ([{"type": ["exact"]}], "scorers[0].type", 'is ["exact"]'),
    ([{"type": "exact", "path": ["$.a"]}], "scorers[0].path", "as text"),
    ([{"type": "exact", "tolerance": 1}], "scorers[0].tolerance", "not a field of a exact scorer"),
    ([{"type": "exact", "name": "has space"}], "scorers[0].name", "letters, digits"),
    ([{"type": "exact"}, {"type": "exact"}], "scorers[1]", "second 'exact' scorer"),
    ([{"type": "exact", "name": "a"}, {"type": "regex", "pattern": "x", "name": "a"}], "scorers[1].name", "earlier"),
    ([{"type": "exact", "pass": 1.5}], "scorers[0].pass", "from 0 to 1"),
    ([{"type": "exact", "pass": True}], "scorers[0].pass", "from 0 to 1"),
    ([{"type": "exact", "path": "a.b"}], "scorers[0].path", "must start with '$'"),
    ([{"type": "exact", "path": "$["}], "scorers[0].path", "is not a JSONPath"),
    ([{"type": "contains", "case_sensitive": "no"}], "scorers[0].case_sensitive", "true or false"),
    ([{"type": "json_schema"}], "scorers[0].schema", "is required"),
    ([{"type": "json_schema", "schema": "string"}], "scorers[0].schema", "is a JSON Schema"),
    ([{"type": "json_schema", "schema": {"type": "text"}}], "scorers[0].schema", "not a valid JSON Schema"),
    ([{"type": "json_schema", "schema": {"pattern": "(?=a)"}}], "scorers[0].schema", "RE2"),
    ([{"type": "jsonpath_equals"}], "scorers[0].path", "is required"),
    ([{"type": "jsonpath_equals", "path": "$.a", "expected_path": "$$"}], "scorers[0].expected_path", "JSONPath"),
    ([{"type": "numeric"}], "scorers[0].tolerance", "is required"),
    ([{"type": "numeric", "tolerance": -1}], "scorers[0].tolerance", "≥ 0"),
    ([{"type": "numeric", "tolerance": "0.1"}], "scorers[0].tolerance", "≥ 0"),
    ([{"type": "numeric", "tolerance": 0.1, "relative": 1}], "scorers[0].relative", "true or false"),
    ([{"type": "regex"}], "scorers[0].pattern", "is required"),
    ([{"type": "regex", "pattern": "(a)\\1"}], "scorers[0].pattern", "RE2"),
    ([{"type": "regex", "pattern": "(unclosed"}], "scorers[0].pattern", "cannot be used"),
    ([{"type": "llm_judge"}], "scorers[0].rubric", "is required"),
    ([{"type": "llm_judge", "rubric": "  "}], "scorers[0].rubric", "is required"),
    ([{"type": "llm_judge", "rubric": "x" * 10_001}], "scorers[0].rubric", "at most 10000"),
    ([{"type": "llm_judge", "rubric": "ok", "agent": "no spaces"}], "scorers[0].agent", "agent id"),
    ([{"type": "evaluation"}], "scorers[0].score", "one of overall"),
    ([{"type": "evaluation", "score": "speed"}], "scorers[0].score", "one of overall"),
    ([{"type": "evaluation", "score": "overall", "pass_at": 2}], "scorers[0].pass_at", "from 0 to 1"),
    ([{"type": "evaluation", "score": "overall", "pass_at": 0.5, "pass": 0.5}], "scorers[0].pass_at", "give one"),
])
def test_it_refuses_a_bad_scorer_naming_its_field(doc, field, words):
    message = refused(doc, field, words)
    assert message.startswith(field)


def test_it_names_the_place_inside_a_bad_schema():
    refused([{"type": "exact"}, {"type": "json_schema", "schema": {"properties": {"a": {"type": 3}}}}],
            "scorers[1].schema", "at scorers[1].schema['properties']['a']['type']")


# -- not scored ------------------------------------------------------------------------------


@pytest.mark.parametrize("doc", [{"type": "exact"}, {"type": "contains"}, {"type": "numeric", "tolerance": 0},
                                 {"type": "jsonpath_equals", "path": "$.a"}])
def test_it_does_not_score_without_an_expected_value_when_it_needs_one(doc):
    result = run(doc, {"a": 1}, has_expected=False)
    assert result == NotScored(NO_EXPECTED, f"the item has no expected value, which a {doc['type']} scorer compares with")


def test_it_tells_an_expected_null_from_an_absent_one():
    assert run({"type": "exact"}, None, expected=None) == Score(1.0, "the output equals the expected value")


@pytest.mark.parametrize("doc", [{"type": "exact"}, {"type": "regex", "pattern": "x"},
                                 {"type": "json_schema", "schema": {}}])
def test_it_does_not_score_a_run_without_output(doc):
    result = run(doc, None, expected=None, has_output=False)
    assert isinstance(result, NotScored) and result.code == NO_OUTPUT


def test_it_leaves_the_judge_and_evaluation_to_the_django_side():
    with pytest.raises(ScorerError, match="scored by the Django side"):
        run({"type": "llm_judge", "rubric": "polite"}, "hi")


# -- exact -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("output", "expected", "value"), [
    ({"a": [1, 2]}, {"a": [1, 2]}, 1.0),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}, 1.0),
    (1, 1.0, 1.0),
    (True, 1, 0.0),  # JSON: a boolean is not a number
    ([1, 2], [2, 1], 0.0),
    ("42", 42, 0.0),
])
def test_it_scores_exact_by_json_equality(output, expected, value):
    assert run({"type": "exact"}, output, expected).value == value


def test_it_scores_exact_at_a_path_and_never_guesses_between_nodes():
    assert run({"type": "exact", "path": "$.answer"}, {"answer": 24, "why": "x"}, 24).value == 1.0
    assert run({"type": "exact", "path": "$.answer"}, {"why": "x"}, 24) == Score(0.0, "$.answer selects nothing in the output")
    assert run({"type": "exact", "path": "$.items[*]"}, {"items": [24, 24]}, 24) == Score(
        0.0, "$.items[*] selects 2 values in the output, not one")
    assert run({"type": "exact", "path": "$.items[*]"}, {"items": [24]}, 24).value == 1.0
    assert run({"type": "exact"}, {"a": 1}, {"a": 2}).reason == 'the output {"a": 1} is not the expected {"a": 2}'


# -- contains --------------------------------------------------------------------------------


def test_it_scores_contains_on_text():
    assert run({"type": "contains"}, "The answer is Paris.", "Paris") == Score(1.0, 'the output contains "Paris"')
    assert run({"type": "contains"}, "The answer is paris.", "Paris") == Score(0.0, 'the output does not contain "Paris"')
    assert run({"type": "contains", "case_sensitive": False}, "The answer is PARIS.", "paris").value == 1.0
    assert run({"type": "contains", "path": "$.city"}, {"city": "Paris, France"}, "Paris").value == 1.0
    assert run({"type": "contains"}, {"n": 42}, 42).value == 1.0  # non-text values as their JSON text


def test_it_does_not_score_contains_on_an_empty_expected_text():
    assert run({"type": "contains"}, "anything", "").code == EXPECTED_UNUSABLE


# -- json_schema -----------------------------------------------------------------------------


def test_it_scores_json_schema_naming_the_first_failing_place():
    schema = {"type": "object", "required": ["name", "tags"],
              "properties": {"name": {"type": "string", "pattern": "^[a-z]+$"}, "tags": {"type": "array"}}}
    assert run({"type": "json_schema", "schema": schema}, {"name": "ab", "tags": []}, has_expected=False) == Score(
        1.0, "the output meets the schema")
    assert run({"type": "json_schema", "schema": schema}, {"name": "AB"}, has_expected=False) == Score(
        0.0, "output.tags: is required (and 1 more problems)")
    assert run({"type": "json_schema", "schema": schema}, {"name": "AB", "tags": []}).reason == (
        "output.name: 'AB' does not match '^[a-z]+$'")
    assert run({"type": "json_schema", "schema": schema}, [1]).reason == "output: [1] is not of type 'object'"


# -- jsonpath_equals -------------------------------------------------------------------------


def test_it_scores_jsonpath_equals_against_the_expected_or_a_path_in_it():
    doc = {"type": "jsonpath_equals", "path": "$.result.total"}
    assert run(doc, {"result": {"total": 10}}, 10) == Score(1.0, "$.result.total equals the expected value")
    assert run(doc, {"result": {"total": 11}}, 10) == Score(0.0, "$.result.total is 11, not the expected 10")
    assert run(doc, {"result": {}}, 10) == Score(0.0, "$.result.total selects nothing in the output")
    with_expected_path = {**doc, "expected_path": "$.sum"}
    assert run(with_expected_path, {"result": {"total": 10}}, {"sum": 10}).value == 1.0
    assert run(with_expected_path, {"result": {"total": 10}}, {"other": 10}) == NotScored(
        EXPECTED_UNUSABLE, "$.sum selects nothing in the expected value")


def test_it_runs_jsonpath_filters_as_rfc_9535_says():
    doc = {"type": "jsonpath_equals", "path": "$.people[?@.age > 30].name"}
    assert run(doc, {"people": [{"name": "a", "age": 20}, {"name": "b", "age": 40}]}, "b").value == 1.0


# -- numeric ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("doc", "output", "expected", "value"), [
    ({"tolerance": 0.01}, 3.141, 3.14, 1.0),  # |3.141 − 3.14| = 0.001
    ({"tolerance": 0.01}, 3.16, 3.14, 0.0),  # 0.02
    ({"tolerance": 0}, 2, 2.0, 1.0),
    ({"tolerance": 0.1, "relative": True}, 105, 100, 1.0),  # 5 ≤ 0.1 × 100
    ({"tolerance": 0.1, "relative": True}, 111, 100, 0.0),  # 11 > 10
    ({"tolerance": 0.1, "relative": True}, 0.001, 0, 0.0),  # relative to 0: only 0 itself
    ({"tolerance": 0.5, "path": "$.n"}, {"n": 7.4}, 7, 1.0),
])
def test_it_scores_numeric_within_the_tolerance(doc, output, expected, value):
    assert run({"type": "numeric", **doc}, output, expected).value == value


def test_it_explains_a_numeric_score():
    assert run({"type": "numeric", "tolerance": 0.5}, 8, 7).reason == "8 is 1 from 7, beyond the tolerance 0.5"
    assert run({"type": "numeric", "tolerance": 0.1, "relative": True}, 105, 100).reason == (
        "105 is 5 from 100, within the tolerance 0.1 × |100|")


@pytest.mark.parametrize(("output", "reason"), [
    ("3.14", 'the output "3.14" is a string, not a number'),
    (True, "the output true is a boolean, not a number"),
    (None, "the output null is null, not a number"),
    ([3.14], "the output [3.14] is an array, not a number"),
    (float("inf"), "the output inf is not a finite number"),
])
def test_it_scores_a_non_number_0_naming_why(output, reason):
    assert run({"type": "numeric", "tolerance": 1}, output, 3.14) == Score(0.0, reason)


def test_it_does_not_score_numeric_against_an_expected_non_number():
    assert run({"type": "numeric", "tolerance": 1}, 3, "three").code == EXPECTED_UNUSABLE


# -- regex -----------------------------------------------------------------------------------


def test_it_scores_regex_by_an_re2_search():
    doc = {"type": "regex", "pattern": r"\d{3}-\d{4}"}
    assert run(doc, "call 555-1234 now", has_expected=False) == Score(1.0, f"the pattern {doc['pattern']!r} matches \"555-1234\"")
    assert run(doc, "no number", has_expected=False).value == 0.0
    assert run({**doc, "path": "$.phone"}, {"phone": "555-1234"}).value == 1.0
    assert run({"type": "regex", "pattern": "(a+)+$"}, "a" * 50_000 + "!").value == 0.0  # in linear time


# -- evaluation ------------------------------------------------------------------------------


def test_it_maps_a_seed_evaluation_to_a_score():
    overall = one({"type": "evaluation", "score": "overall"})
    accuracy = one({"type": "evaluation", "score": "accuracy"})
    scores = {"accuracy": None, "completeness": 1.0, "efficiency": 0.5, "overall_score": 0.8333}
    assert evaluation_score(overall, scores) == Score(0.8333, "the evaluation's overall is 0.8333")
    assert evaluation_score(accuracy, scores) == NotScored(
        NOT_MEASURED, "the evaluation did not measure accuracy (nothing verifiable)")
    assert evaluation_score(accuracy, {}).code == NOT_MEASURED
    with pytest.raises(ValueError, match="from 0 to 1"):
        evaluation_score(overall, {"overall_score": 1.2})


def test_it_passes_at_the_threshold():
    scorer = one({"type": "numeric", "tolerance": 0, "pass": 0.5})
    assert scorer.passes(Score(0.5, "")) and not scorer.passes(Score(0.49, ""))
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        Score(1.5, "too much")
