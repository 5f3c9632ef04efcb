"""JSON Schemas with their patterns matched by RE2: linear time, and refused when RE2 cannot take them."""
import json
import subprocess
import sys

import pytest
from jsonschema.exceptions import SchemaError

from engine.json_schema import SchemaValidator, check_schema, field_problems
from tests.executions.conftest import ROOT

# `(a+)+$` against "aaa…a!" backtracks exponentially in Python's `re`: 2^40 steps.
CATASTROPHIC = {"type": "object", "properties": {"text": {"pattern": "(a+)+$"}},
                "patternProperties": {"^(x+)+$": {"type": "integer"}}}
VICTIM = {"text": "a" * 40 + "!", "x" * 40 + "!": "not checked: the key does not match"}


def test_it_validates_a_catastrophic_pattern_without_hanging():
    # In a child process with a generous timeout, so that a hang fails the test instead of pinning the run.
    script = ("import json, sys; from engine.json_schema import SchemaValidator; "
              "schema, value = json.loads(sys.argv[1]), json.loads(sys.argv[2]); "
              "print(json.dumps([e.message for e in SchemaValidator(schema).iter_errors(value)]))")
    try:
        done = subprocess.run([sys.executable, "-c", script, json.dumps(CATASTROPHIC), json.dumps(VICTIM)],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("validating (a+)+$ against 'aaa…a!' did not finish within 60 s")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [f"{VICTIM['text']!r} does not match '(a+)+$'"]


def test_it_keeps_json_schema_pattern_semantics():
    validator = SchemaValidator({"properties": {"code": {"pattern": "[0-9]{3}"}},
                                 "patternProperties": {"^n_": {"type": "integer"}}})
    assert validator.is_valid({"code": "ab123cd", "n_x": 1, "other": "free"})  # patterns are not anchored
    assert not validator.is_valid({"code": "12"})
    assert not validator.is_valid({"n_x": "one"})


@pytest.mark.parametrize("schema, path, pattern", [
    ({"properties": {"id": {"pattern": "^(?=.*[0-9])[a-z0-9]+$"}}}, "$.properties.id.pattern", "^(?=.*[0-9])[a-z0-9]+$"),
    ({"items": {"pattern": r"(a)\1"}}, "$.items.pattern", r"(a)\1"),
    ({"patternProperties": {"(?<!x)y": {}}}, "$.patternProperties", "(?<!x)y"),
])
def test_it_refuses_a_pattern_re2_cannot_take_naming_it_and_where(schema, path, pattern):
    with pytest.raises(SchemaError) as refused:
        check_schema(schema)
    assert refused.value.json_path == path
    assert f"the pattern {pattern!r} cannot be used" in refused.value.message
    assert "lookarounds or backreferences" in refused.value.message


def test_it_still_refuses_what_is_not_a_schema_and_accepts_what_is():
    with pytest.raises(SchemaError):
        check_schema({"type": "objekt"})
    check_schema({"type": "object", "properties": {"pattern": {"type": "string"}}, "examples": [{"pattern": "(?=x)"}],
                  "patternProperties": {r"^\p{L}+$": {"pattern": r"^\d+$"}}})


def test_it_reports_a_stored_pattern_re2_cannot_take_as_a_violation_rather_than_running_it():
    errors = [error.message for error in SchemaValidator({"pattern": "(?=a)a"}).iter_errors("a")]
    assert len(errors) == 1 and "the pattern '(?=a)a' cannot be used" in errors[0]


# -- schemas generated from document shapes ---------------------------------------------------


def first_error(shape, document):
    from engine.json_schema import document_schema

    errors = sorted(SchemaValidator(document_schema(shape)).iter_errors(document),
                    key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    return (list(errors[0].absolute_path), errors[0].message) if errors else None


def test_it_names_the_types_a_nullable_field_takes():
    from agents.schemas import Lineage

    assert first_error(Lineage, {"parent_id": 5}) == (["parent_id"], "5 is not of type 'string', 'null'")
    assert first_error(Lineage, {"parent_id": None}) is None


def test_it_leaves_null_out_of_a_field_that_may_only_be_left_out():
    from agents.schemas import Runtime

    assert first_error(Runtime, {"backend": None}) == (["backend"], "None is not of type 'string'")
    assert first_error(Runtime, {}) is None


def test_it_reports_inside_a_nullable_shape_at_the_field_concerned():
    from workflows.schemas import WorkflowEvaluation

    gate = {"quality_gate": {"accuracy": 2}}
    assert first_error(WorkflowEvaluation, gate) == (["quality_gate", "accuracy"], "2 is greater than the maximum of 1")
    assert first_error(WorkflowEvaluation, {"quality_gate": 5}) == (["quality_gate"], "5 is not of type 'object', 'null'")


def test_it_reports_inside_the_kind_of_reference_its_ref_type_names():
    from engine.shapes import NodeInput

    reference = {"ref_type": "file", "path": "a.md", "batch_config": {"max_batches": 0}}
    assert first_error(NodeInput, {"data_references": [reference]}) == (
        ["data_references", 0, "batch_config", "max_batches"], "0 is less than the minimum of 1")
    assert first_error(NodeInput, {"data_references": [{"ref_type": "ftp"}]}) == (
        ["data_references", 0, "ref_type"], "'ftp' is not one of ['task_output', 'file', 'db_query']")


def test_it_says_what_is_missing_before_what_is_unknown():
    from executions.schemas import Scores

    assert first_error(Scores, {"acuracy": 1, "completeness": 1, "efficiency": 1}) == (
        [], "'accuracy' is a required property")


def test_it_names_each_field_a_value_breaks_under_the_name_given():
    schema = {"type": "object", "required": ["draft", "count"],
              "properties": {"draft": {"type": "string"},
                             "items": {"type": "array", "items": {"type": "object",
                                                                  "properties": {"n": {"type": "number"}}}}}}

    problems = field_problems(schema, {"draft": 42, "items": [{"n": 1}, {"n": "x"}]}, where="output")

    assert problems == [("output.count", "is required"), ("output.draft", "42 is not of type 'string'"),
                        ("output.items[1].n", "'x' is not of type 'number'")]
    assert field_problems(schema, {"draft": "ok", "count": 1}, where="output") == []
    assert field_problems(None, 42, where="output") == []
