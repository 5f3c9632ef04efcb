"""A workflow's inputs: the schema a run's input is checked against, and its first draft."""
from engine.inputs import checked_input, inferred_input_schema, input_schema_problem, read_inputs

SCHEMA = {"type": "object",
          "properties": {"repository": {"type": "string", "description": "the repository to analyse"},
                         "depth": {"type": "integer", "default": 2}},
          "required": ["repository"]}


def test_it_fills_in_the_defaults_of_the_inputs_left_out():
    assert checked_input(SCHEMA, {"repository": "acme"}) == ({"repository": "acme", "depth": 2}, [])
    assert checked_input(SCHEMA, {"repository": "acme", "depth": 5}) == ({"repository": "acme", "depth": 5}, [])


def test_it_names_a_missing_required_input_with_its_description():
    filled, problems = checked_input(SCHEMA, {})
    assert problems == [("input.repository", "is required by the workflow (the repository to analyse)")]


def test_it_names_an_input_of_the_wrong_type():
    _, problems = checked_input(SCHEMA, {"repository": "acme", "depth": "deep"})
    assert problems == [("input.depth", "'deep' is not of type 'integer'")]


def test_a_workflow_that_declares_nothing_takes_any_input():
    assert checked_input(None, {"anything": [1]}) == ({"anything": [1]}, [])


def test_it_drafts_a_schema_from_the_input_paths_the_nodes_read():
    document = {"nodes": [
        {"id": "a", "input_mapping": {"repository": "$.input.repository", "x": "$.state.x"}},
        {"id": "b", "input_mapping": {"repo": "$.input['repository'].name", "n": "$.input.numbers[0]",
                                      "data_references": [{"ref_type": "task_output", "task_id": "a"}]}},
        {"id": "c", "input_mapping": {"constant": 3}},
    ]}
    assert read_inputs(document) == {"repository": ["a", "b"], "numbers": ["b"]}
    assert inferred_input_schema(document) == {
        "type": "object", "required": ["repository", "numbers"],
        "properties": {"repository": {"description": "read by a, b"}, "numbers": {"description": "read by b"}}}


def test_an_input_schema_describes_an_object():
    assert input_schema_problem({"type": "object"}) is None
    assert input_schema_problem({"properties": {}}) is None
    assert "JSON object" in input_schema_problem({"type": "array"})[1]
    assert input_schema_problem({"properties": {"depth": {"type": "integer", "minimum": 1, "default": 0}}}) == (
        ".properties.depth.default", "the default does not fit its input: 0 is less than the minimum of 1")
    assert input_schema_problem({"properties": {"depth": {"type": "integer", "minimum": 1, "default": 2}}}) is None


def test_a_document_still_being_written_reads_what_its_well_formed_nodes_read():
    document = {"nodes": [None, {"id": "a", "input_mapping": "$.input.x"}, {"id": "b", "input_mapping": {"y": "$.input.y"}}]}
    assert read_inputs(document) == {"y": ["b"]}
    assert read_inputs({"nodes": "none"}) == {} and read_inputs({}) == {}
