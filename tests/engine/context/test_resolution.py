"""References (§2) and their resolution, timing and failure handling (§3)."""
from datetime import UTC, datetime

import pytest

from engine.context import errors
from engine.context.errors import RefError
from engine.context.resolution import (
    NOT_READY,
    CappedRows,
    ResolutionAborted,
    Resolver,
    Sources,
    keys_only,
    select_path,
    timing,
)

SCHOLAR = {
    "atoms": [
        {"atom_id": "a1", "atom_type": "claim", "content": "Self-attention allows parallel computation.", "confidence": 0.95},
        {"atom_id": "a2", "atom_type": "methodology", "content": "Scaled dot-product attention.", "confidence": 0.8},
        {"atom_id": "a3", "atom_type": "evidence", "content": "28.4 BLEU on WMT 2014 English-German.", "confidence": 1},
        {"atom_id": "a4", "atom_type": "background", "content": "RNNs are sequential.", "confidence": 0.6},
    ],
    "metadata": {"quality_score": 0.87},
}
NOW = datetime(2026, 2, 3, 10, 30, tzinfo=UTC)


class Clock:
    def __init__(self):
        self.t = 0.0
        self.sleeps = []

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.t += seconds

    def __call__(self):
        return self.t


def resolver(outputs=None, *, read_file=None, query=None, **options):
    outputs = {"task_scholar_001": SCHOLAR} if outputs is None else outputs

    def task_output(task_id):
        if task_id not in outputs:
            raise RefError(errors.REF_NOT_FOUND, "Referenced task output not found")
        return outputs[task_id]

    clock = Clock()
    made = Resolver(Sources(task_output, read_file, query), sleep=clock.sleep, clock=clock, now=lambda: NOW, **options)
    made.test_clock = clock
    return made


def task_ref(**fields):
    return {"ref_type": "task_output", "task_id": "task_scholar_001", **fields}


@pytest.mark.parametrize("path, expected", [
    ("$.atoms", SCHOLAR["atoms"]),
    ("$.atoms[0]", SCHOLAR["atoms"][0]),
    ("$.atoms[*].content", [a["content"] for a in SCHOLAR["atoms"]]),
    ("$.metadata.quality_score", 0.87),
    ("$.atoms[?(@.confidence>0.8)]", [SCHOLAR["atoms"][0], SCHOLAR["atoms"][2]]),
    ("$.atoms[?(@.atom_type=='claim')]", [SCHOLAR["atoms"][0]]),
])
def test_it_resolves_the_seed_path_examples(path, expected):
    resolved = resolver().resolve(task_ref(path=path), "scholar")
    assert (resolved.data, resolved.failures, resolved.skipped) == (expected, [], False)


def test_it_compares_floats_against_integer_literals_as_python_does():
    data = {"xs": [{"v": 1.0}, {"v": 1}, {"v": True}, {"v": "1"}, {"v": 0.999}, {"v": 1.5}, {"v": None}]}
    assert select_path(data, "$.xs[?(@.v==1)]") == [{"v": 1.0}, {"v": 1}]
    assert select_path(data, "$.xs[?(@.v>1)]") == [{"v": 1.5}]
    assert select_path(data, "$.xs[?(@.v>=1)]") == [{"v": 1.0}, {"v": 1}, {"v": 1.5}]
    assert select_path(data, "$.xs[?(@.v<1)]") == [{"v": 0.999}]
    assert select_path(data, "$.xs[?(@.v>0.9995)]") == [{"v": 1.0}, {"v": 1}, {"v": 1.5}]


def test_it_applies_the_filter_object_after_the_path():
    resolved = resolver().resolve(task_ref(path="$.atoms", filter={"field": "atom_type", "operator": "eq",
                                                                   "value": "methodology"}), "x")
    assert [a["atom_id"] for a in resolved.data] == ["a2"]


def test_it_transforms_to_keys_only():
    assert resolver().resolve(task_ref(transform="keys_only"), "x").data == ["atoms", "metadata"]
    resolved = resolver().resolve(task_ref(path="$.atoms", transform="keys_only"), "x")
    assert resolved.data == {"count": 4, "keys": ["atom_id", "atom_type", "confidence", "content"]}
    assert keys_only("text") == "str"


def test_it_records_a_missing_task_in_the_seed_shape_and_skips_it():
    resolved = resolver({}).resolve(task_ref(), "scholar_output")
    assert resolved.skipped
    assert [f.as_dict() for f in resolved.failures] == [{
        "ref_type": "task_output", "task_id": "task_scholar_001", "input": "scholar_output",
        "error_code": "REF_NOT_FOUND", "error_message": "Referenced task output not found",
        "fallback_strategy": "skip", "fallback_value": None, "attempts": 1, "timestamp": "2026-02-03T10:30:00Z",
    }]


def test_it_uses_the_default_value_for_a_missing_target_when_one_is_given():
    resolved = resolver({}).resolve(task_ref(fallback_config={"default_value": {"atoms": []}}), "x")
    assert (resolved.skipped, resolved.data) == (False, {"atoms": []})
    assert resolved.failures[0].fallback_strategy == "use_default"


@pytest.mark.parametrize("path", ["$.validation_results", "$.atoms[?(@.confidence>2)]", "$.atom[*].content"])
def test_a_path_or_filter_that_selects_nothing_is_not_found_never_an_empty_value(path):
    resolved = resolver().resolve(task_ref(path=path), "x")
    assert resolved.skipped and resolved.failures[0].error_code == "REF_NOT_FOUND"
    assert resolved.failures[0].error_message == f"path '{path}' selects nothing in the output"


def test_it_returns_the_full_data_for_an_invalid_path():
    resolved = resolver().resolve(task_ref(path="$.atoms[?(@.x=~'a+')]"), "x")
    assert resolved.data == SCHOLAR
    failure = resolved.failures[0]
    assert (failure.error_code, failure.fallback_strategy) == ("REF_PATH_INVALID", "full_data")


def test_it_ignores_a_broken_filter():
    resolved = resolver().resolve(task_ref(path="$.atoms", filter={"field": "score", "operator": "gt",
                                                                   "value": ["not", "a", "number"]}), "x")
    assert resolved.data == SCHOLAR["atoms"]
    assert (resolved.failures[0].error_code, resolved.failures[0].fallback_strategy) == ("REF_FILTER_ERROR", "ignore_filter")


def test_it_aborts_on_permission_denied_by_default():
    def read_file(reference):
        raise RefError(errors.REF_PERMISSION_DENIED, "outside the workspace")

    with pytest.raises(ResolutionAborted) as caught:
        resolver(read_file=read_file).resolve({"ref_type": "file", "path": "../etc/passwd"}, "f")
    assert caught.value.failure.as_dict()["path"] == "../etc/passwd"
    assert caught.value.failure.fallback_strategy == "abort"


def test_it_converts_a_format_error_when_the_data_can_still_be_read():
    def read_file(reference):
        raise RefError(errors.REF_FORMAT_ERROR, "not a PDF", convertible="plain text after all")

    resolved = resolver(read_file=read_file).resolve({"ref_type": "file", "path": "x.pdf"}, "f")
    assert resolved.data == "plain text after all"
    assert resolved.failures[0].fallback_strategy == "convert"


def test_it_aborts_on_a_format_error_that_cannot_be_converted():
    def read_file(reference):
        raise RefError(errors.REF_FORMAT_ERROR, "binary")

    with pytest.raises(ResolutionAborted):
        resolver(read_file=read_file).resolve({"ref_type": "file", "path": "x.pdf"}, "f")


def flaky(failures_before_success, code=errors.REF_TIMEOUT):
    calls = []

    def query(reference):
        calls.append(reference)
        if len(calls) <= failures_before_success:
            raise RefError(code, f"attempt {len(calls)} timed out")
        return [{"atom_id": "a1"}]

    return query, calls


def test_it_retries_a_timeout_by_default_with_the_configured_delay():
    query, calls = flaky(2)
    made = resolver(query=query)
    resolved = made.resolve({"ref_type": "db_query", "table": "knowledge_atoms",
                             "fallback_config": {"retry_delay_ms": 250}}, "q")
    assert resolved.data == [{"atom_id": "a1"}] and resolved.failures == []
    assert len(calls) == 3 and made.test_clock.sleeps == [0.25, 0.25]


def test_it_gives_up_after_retry_count_and_applies_on_final_failure():
    query, calls = flaky(10)
    resolved = resolver(query=query).resolve(
        {"ref_type": "db_query", "table": "t", "fallback_config": {"strategy": "retry", "retry_count": 2}}, "q")
    assert resolved.skipped and len(calls) == 3
    assert (resolved.failures[0].attempts, resolved.failures[0].fallback_strategy) == (3, "skip")
    with pytest.raises(ResolutionAborted):
        resolver(query=flaky(10)[0]).resolve({"ref_type": "db_query", "table": "t", "fallback_config": {
            "strategy": "retry", "retry_count": 1, "on_final_failure": "abort"}}, "q")


@pytest.mark.parametrize("strategy, skipped, data", [("use_default", False, "fallback"), ("skip", True, None)])
def test_it_follows_an_explicit_fallback_strategy(strategy, skipped, data):
    query, calls = flaky(10, errors.REF_PERMISSION_DENIED)
    resolved = resolver(query=query).resolve(
        {"ref_type": "db_query", "table": "t", "fallback_config": {"strategy": strategy, "default_value": "fallback"}}, "q")
    assert (resolved.skipped, resolved.data, len(calls)) == (skipped, data, 1)


def test_it_aborts_when_the_fallback_says_so():
    with pytest.raises(ResolutionAborted) as caught:
        resolver({}).resolve(task_ref(fallback_config={"strategy": "abort"}), "x")
    assert caught.value.failure.error_code == "REF_NOT_FOUND"


def test_it_resolves_files_queries_and_finished_tasks_before_scheduling():
    sources = Sources(lambda task_id: NOT_READY if task_id == "later" else {"done": True})
    assert timing({"ref_type": "file", "path": "a.md"}, sources) == "before_scheduling"
    assert timing({"ref_type": "db_query", "table": "papers"}, sources) == "before_scheduling"
    assert timing({"ref_type": "task_output", "task_id": "now"}, sources) == "before_scheduling"
    assert timing({"ref_type": "task_output", "task_id": "later"}, sources) == "at_execution"


def test_it_waits_for_an_unfinished_task_and_times_out():
    clock = Clock()
    finishes_at_two = Sources(lambda task_id: {"late": "output"} if clock.t >= 2 else NOT_READY)
    made = Resolver(finishes_at_two, wait_timeout_s=5, poll_s=1, sleep=clock.sleep, clock=clock)
    resolved = made.resolve({"ref_type": "task_output", "task_id": "t"}, "t")
    assert (resolved.data, resolved.resolved_at, clock.sleeps) == ({"late": "output"}, "at_execution", [1, 1])

    clock = Clock()
    never = Resolver(Sources(lambda task_id: NOT_READY), wait_timeout_s=2, poll_s=1, sleep=clock.sleep, clock=clock)
    resolved = never.resolve({"ref_type": "task_output", "task_id": "t", "fallback_config": {"retry_count": 0}}, "t")
    assert resolved.skipped and resolved.failures[0].error_code == "REF_TIMEOUT"


def test_it_resolves_the_seed_task_output_example_filtering_the_atoms_behind_the_path():
    """§2.2: path `$.atoms[*].content` with a filter on `atom_type` keeps the methodology contents."""
    reference = task_ref(path="$.atoms[*].content", filter={"field": "atom_type", "operator": "eq",
                                                             "value": "methodology"}, transform="none")
    assert resolver().resolve(reference, "x").data == ["Scaled dot-product attention."]


def test_it_filters_objects_selected_by_a_filter_expression_and_lists_selected_by_a_wildcard():
    spec = {"field": "confidence", "operator": "gte", "value": 1}
    assert select_path(SCHOLAR, "$.atoms[?(@.confidence>0.5)]", spec) == [SCHOLAR["atoms"][2]]
    assert select_path({"groups": [[{"v": 1}, {"v": 2}]]}, "$.groups[*]", {"field": "v", "operator": "gt",
                                                                            "value": 1}) == [[{"v": 2}]]


def test_it_reports_a_broken_filter_even_when_the_path_selects_nothing():
    resolved = resolver().resolve(task_ref(path="$.atoms[?(@.confidence>5)]", filter={"field": "x", "operator": "like",
                                                                                      "value": "a"}), "x")
    # The filter's error is on the record; without it the path still selects nothing.
    assert resolved.skipped
    assert [(f.error_code, f.fallback_strategy) for f in resolved.failures] == [
        ("REF_FILTER_ERROR", "ignore_filter"), ("REF_NOT_FOUND", "skip")]


def recording_query(rows, failing_key="conditions", code=errors.REF_FILTER_ERROR):
    """A db_query source that refuses references carrying `failing_key`, as the registry
    refuses a bad condition."""
    calls = []

    def query(reference):
        calls.append(reference)
        if failing_key in reference:
            raise RefError(code, f"{failing_key}[0] (atom_type): unknown operator 'like'")
        return rows

    return query, calls


QUERY = {"ref_type": "db_query", "table": "knowledge_atoms", "select": ["atom_id"],
         "conditions": [{"field": "atom_type", "operator": "like", "value": "c%"}]}


def test_a_bad_query_condition_passes_the_unfiltered_rows_as_the_seed_says():
    query, calls = recording_query([{"atom_id": "a1"}, {"atom_id": "a2"}])
    resolved = resolver(query=query).resolve(QUERY, "q")
    assert (resolved.data, resolved.skipped) == ([{"atom_id": "a1"}, {"atom_id": "a2"}], False)
    assert calls[1] == {"ref_type": "db_query", "table": "knowledge_atoms", "select": ["atom_id"]}
    failure = resolved.failures[0].as_dict()
    assert (failure["error_code"], failure["fallback_strategy"]) == ("REF_FILTER_ERROR", "ignore_filter")
    assert "unknown operator 'like'" in failure["error_message"]


def test_bad_file_sections_pass_the_whole_file():
    read_file, calls = recording_query("# Intro\nthe whole text", failing_key="sections")
    resolved = resolver(read_file=read_file).resolve({"ref_type": "file", "path": "a.md", "sections": [3]}, "f")
    assert resolved.data == "# Intro\nthe whole text"
    assert calls[1] == {"ref_type": "file", "path": "a.md"}
    assert resolved.failures[0].fallback_strategy == "ignore_filter"


@pytest.mark.parametrize("reference", [
    dict(QUERY, fallback_config={"strategy": "abort"}),
    task_ref(path="$.atoms", filter={"field": "atom_type", "operator": "like", "value": "c"},
             fallback_config={"strategy": "abort"}),
])
def test_a_filter_error_follows_the_fallback_config(reference):
    query, calls = recording_query([{"atom_id": "a1"}])
    with pytest.raises(ResolutionAborted) as caught:
        resolver(query=query).resolve(reference, "x")
    assert (caught.value.failure.error_code, caught.value.failure.fallback_strategy) == ("REF_FILTER_ERROR", "abort")
    assert len(calls) <= 1


def test_a_filter_error_with_use_default_passes_the_default():
    query, _ = recording_query([{"atom_id": "a1"}])
    resolved = resolver(query=query).resolve(
        dict(QUERY, fallback_config={"strategy": "use_default", "default_value": []}), "q")
    assert (resolved.data, resolved.failures[0].fallback_strategy) == ([], "use_default")


@pytest.mark.parametrize("operator_name", ["eq", "ne"])
def test_a_filter_on_a_field_no_element_has_is_on_the_record_not_a_silent_guess(operator_name):
    reference = task_ref(path="$.atoms", filter={"field": "atomtype", "operator": operator_name, "value": "claim"})
    resolved = resolver().resolve(reference, "x")
    assert resolved.data == SCHOLAR["atoms"]
    failure = resolved.failures[0]
    assert (failure.error_code, failure.fallback_strategy) == ("REF_FILTER_ERROR", "ignore_filter")
    assert failure.error_message == "filter field 'atomtype' is in none of the 4 elements"


def test_a_filter_on_a_field_no_holder_has_is_on_the_record_too():
    reference = task_ref(path="$.atoms[*].content", filter={"field": "kind", "operator": "eq", "value": "claim"})
    resolved = resolver().resolve(reference, "x")
    assert resolved.data == [atom["content"] for atom in SCHOLAR["atoms"]]
    assert resolved.failures[0].error_code == "REF_FILTER_ERROR"


def test_a_single_object_the_filter_does_not_match_is_not_found_never_null():
    reference = task_ref(path="$.atoms[0]", filter={"field": "atom_type", "operator": "eq", "value": "evidence"})
    resolved = resolver().resolve(reference, "x")
    assert resolved.skipped and resolved.failures[0].error_code == "REF_NOT_FOUND"


def test_rows_cut_at_the_source_cap_are_on_the_record():
    def query(reference):
        return CappedRows([{"atom_id": "a1"}], requested=5000, cap=1, left_out=41)

    resolved = resolver(query=query).resolve({"ref_type": "db_query", "table": "knowledge_atoms", "limit": 5000}, "q")
    assert resolved.data == [{"atom_id": "a1"}]
    assert resolved.cap == {"limit_requested": 5000, "limit_applied": 1, "rows_passed": 1, "rows_left_out": 41}


@pytest.mark.parametrize("path", ["$.atoms", "$.atoms[*].content"])
def test_a_filter_that_keeps_nothing_is_not_found_never_an_empty_list(path):
    unknown = {"field": "atom_type", "operator": "eq", "value": "rumour"}
    resolved = resolver().resolve(task_ref(path=path, filter=unknown), "x")
    assert resolved.skipped and [f.error_code for f in resolved.failures] == ["REF_NOT_FOUND"]
    assert resolved.failures[0].error_message == f"the filter keeps nothing of what path '{path}' selects"
    claims = resolver().resolve(task_ref(path=path, filter={**unknown, "value": "claim"}), "x")
    assert claims.data and not claims.failures


def test_it_records_a_named_input_that_selects_nothing_in_the_run_as_not_found():
    scope = {"input": {"topic": "v2"}, "state": {}, "nodes": {"task_a": {"report": "ok"}}}
    assert resolver().resolve_named("topic", "$.input.topic", scope).data == "v2"
    assert resolver().resolve_named("report", "$.nodes.task_a.report", scope).failures == []
    missing = resolver().resolve_named("repository", "$.input.repository", scope)
    assert missing.skipped and missing.data is None
    [failure] = missing.failures
    assert failure.as_dict() == {
        "ref_type": "input_mapping", "path": "$.input.repository", "input": "repository",
        "error_code": "REF_NOT_FOUND", "error_message": "path '$.input.repository' selects nothing in this run",
        "fallback_strategy": "skip", "fallback_value": None, "attempts": 1, "timestamp": "2026-02-03T10:30:00Z"}
