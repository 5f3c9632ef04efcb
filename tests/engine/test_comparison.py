"""engine.comparison: the JSON diff, and two runs' node runs aligned and compared."""
import copy
import json

from hypothesis import given
from hypothesis import strategies as st

from engine.comparison import (
    MAX_OUTPUT_DIFFERENCES,
    compare_runs,
    json_diff,
    pointer_token,
    run_keys,
    same,
    tool_call_differences,
)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=4),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(alphabet="ab/~", max_size=3), children,
                                                                        max_size=4),
    max_leaves=20,
)


def canonical(value):
    """JSON text that is the same for equal values: 1.0 written as 1, keys sorted."""
    def plain(v):
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, list):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {key: plain(x) for key, x in v.items()}
        return v
    return json.dumps(plain(value), sort_keys=True)


def diff(a, b):
    return list(json_diff(a, b))


def unescape(token):
    return token.replace("~1", "/").replace("~0", "~")


def apply(document, differences):
    """What a reader of the diff would do with it: a patched to b."""
    document = copy.deepcopy(document)
    root = {"": document}
    for entry in [*[e for e in differences if e["op"] != "removed"], *reversed([e for e in differences if e["op"] == "removed"])]:
        tokens = [""] + [unescape(token) for token in entry["path"].split("/")[1:]]
        parent = root
        for token in tokens[:-1]:
            parent = parent[int(token) if isinstance(parent, list) else token]
        last = int(tokens[-1]) if isinstance(parent, list) else tokens[-1]
        if entry["op"] == "removed":
            del parent[last]
        elif isinstance(parent, list) and last == len(parent):
            parent.append(copy.deepcopy(entry["b"]))
        else:
            parent[last] = copy.deepcopy(entry["b"])
    return root[""]


# -- the JSON diff ---------------------------------------------------------------------------


@given(JSON)
def test_it_finds_no_difference_between_a_value_and_itself(value):
    assert diff(value, copy.deepcopy(value)) == []


@given(JSON, JSON)
def test_it_lists_exactly_what_turns_one_value_into_the_other(a, b):
    differences = diff(a, b)
    assert canonical(apply(a, differences)) == canonical(b)
    assert (differences == []) == (canonical(a) == canonical(b)) == same(a, b)


def test_it_names_each_kind_of_change_with_its_pointer():
    a = {"title": "Draft", "tags": ["x", "y", "z"], "meta": {"score": 1, "old": True}}
    b = {"title": "Final", "tags": ["x", "y"], "meta": {"score": 1, "new": None}, "extra": [1]}
    assert diff(a, b) == [
        {"path": "/title", "op": "changed", "a": "Draft", "b": "Final"},
        {"path": "/tags/2", "op": "removed", "a": "z", "b": None},
        {"path": "/meta/old", "op": "removed", "a": True, "b": None},
        {"path": "/meta/new", "op": "added", "a": None, "b": None},
        {"path": "/extra", "op": "added", "a": None, "b": [1]},
    ]


def test_it_escapes_tilde_and_slash_in_pointers():
    assert pointer_token("a/b~c") == "a~1b~0c"
    assert diff({"a/b": {"~": 1}}, {"a/b": {"~": 2}}) == [{"path": "/a~1b/~0", "op": "changed", "a": 1, "b": 2}]
    assert diff({"~1": 0}, {"~1": 1})[0]["path"] == "/~01"  # not read back as "/"


def test_it_tells_booleans_from_numbers_but_not_ints_from_floats():
    assert diff({"x": 1}, {"x": True}) == [{"path": "/x", "op": "changed", "a": 1, "b": True}]
    assert diff([0], [False]) == [{"path": "/0", "op": "changed", "a": 0, "b": False}]
    assert diff({"x": 1}, {"x": 1.0}) == []


def test_it_changes_the_whole_value_when_its_type_changes():
    assert diff({"x": [1]}, {"x": {"0": 1}}) == [{"path": "/x", "op": "changed", "a": [1], "b": {"0": 1}}]
    assert diff("old text", "new text") == [{"path": "", "op": "changed", "a": "old text", "b": "new text"}]
    assert diff(None, {}) == [{"path": "", "op": "changed", "a": None, "b": {}}]


def test_it_diffs_values_nested_deeper_than_the_recursion_limit():
    deep_a, deep_b = 1, 2
    for _ in range(5000):
        deep_a, deep_b = [deep_a], [deep_b]
    assert diff(deep_a, deep_b) == [{"path": "/0" * 5000, "op": "changed", "a": 1, "b": 2}]


# -- aligning node runs ------------------------------------------------------------------------


def run(node_id, kind="first", attempt=1, **fields):
    return {"node_id": node_id, "kind": kind, "attempt": attempt, "status": "success", "output": None, **fields}


def test_it_counts_rounds_by_first_reused_and_edited_runs_and_keeps_retries_in_theirs():
    runs = [run("draft"), run("review", status="failed"), run("review", "retry", 2), run("review", "fallback", 3),
            run("draft"), run("review", "reused"), run("review", "manual", 1), run("publish", "retry", 2),
            run("publish", "edited")]
    assert run_keys(runs) == [("draft", 1, 1), ("review", 1, 1), ("review", 1, 2), ("review", 1, 3),
                              ("draft", 2, 1), ("review", 2, 1), ("review", 2, 1), ("publish", 1, 2), ("publish", 2, 1)]


def test_it_pairs_the_runs_of_a_loop_round_by_round_and_attempt_by_attempt():
    a = [run("draft", output="d1"), run("review", status="failed", error_code="TIMEOUT"), run("review", "retry", 2),
         run("draft", output="d2"), run("review")]
    b = [run("draft", output="d1"), run("review"), run("draft", output="d2 changed"), run("review"),
         run("draft", output="d3"), run("review")]
    compared = compare_runs(a, b)
    keys = [(p["node_id"], p["round"], p["attempt"], p["verdict"]) for p in compared["pairs"]]
    assert keys == [("draft", 1, 1, "same"), ("draft", 2, 1, "differs"), ("draft", 3, 1, "only_b"),
                    ("review", 1, 1, "differs"), ("review", 1, 2, "only_a"), ("review", 2, 1, "same"),
                    ("review", 3, 1, "only_b")]
    review = compared["pairs"][3]
    assert review["changed"] == ["status", "error_code"]
    assert (review["a"]["status"], review["b"]["status"]) == ("failed", "success")
    assert compared["pairs"][1]["output_diff"] == [{"path": "", "op": "changed", "a": "d2", "b": "d2 changed"}]
    assert compared["counts"]["pairs"] == {"same": 2, "differs": 2, "only_a": 1, "only_b": 2, "unverified": 0}


def test_it_pairs_two_runs_with_one_key_in_their_order():
    # A skipped run carries the number of the attempt that failed before it.
    a = [run("x", status="failed"), run("x", "manual", 1, status="skipped")]
    b = [run("x", status="failed"), run("x", "manual", 1, status="skipped")]
    assert [p["verdict"] for p in compare_runs(a, b)["pairs"]] == ["same", "same"]
    assert [p["a"]["status"] for p in compare_runs(a, b)["pairs"]] == ["failed", "skipped"]


def test_it_gives_each_node_its_verdict():
    a = [run("shared"), run("changed", output={"n": 1}), run("only_here"), run("looped"), run("looped")]
    b = [run("shared"), run("changed", output={"n": 2}), run("looped"), run("elsewhere")]
    compared = compare_runs(a, b)
    assert [(n["node_id"], n["verdict"], n["pairs"]) for n in compared["nodes"]] == [
        ("shared", "same", 1), ("changed", "differs", 1), ("only_here", "only_a", 1), ("looped", "differs", 2),
        ("elsewhere", "only_b", 1)]
    assert compared["counts"]["nodes"] == {"same": 1, "differs": 2, "only_a": 1, "only_b": 1, "unverified": 0}


def test_it_flags_duration_and_kind_without_calling_the_pair_different():
    a = [run("x", duration_ms=10, output={"v": 1})]
    b = [run("x", "reused", duration_ms=0, output={"v": 1})]
    pair = compare_runs(a, b)["pairs"][0]
    assert pair["changed"] == ["kind", "duration_ms"] and pair["differs"] is False and pair["verdict"] == "same"
    edited = compare_runs(a, [run("x", "edited", output={"v": 2})])["pairs"][0]
    assert edited["differs"] is True and edited["output_diff"] == [{"path": "/v", "op": "changed", "a": 1, "b": 2}]


def test_it_does_not_hold_a_copys_tokens_against_it():
    # A re-run's copy was not run: it spent no token, by design.
    a = [run("x", tokens_in=900, tokens_out=50, duration_ms=8, output={"v": 1})]
    b = [run("x", "reused", tokens_in=0, tokens_out=0, duration_ms=0, output={"v": 1})]
    pair = compare_runs(a, b)["pairs"][0]
    assert pair["changed"] == ["kind", "duration_ms", "tokens_in", "tokens_out"] and pair["verdict"] == "same"
    fresh = compare_runs(a, [run("x", tokens_in=0, tokens_out=0, output={"v": 1})])["pairs"][0]
    assert fresh["verdict"] == "differs"  # a run that ran and spent nothing did differ


def test_it_marks_the_attempts_a_copy_did_not_repeat_and_keeps_them_from_the_nodes_verdict():
    # The past run failed once and succeeded on its retry; the re-run copied the retry.
    a = [run("draft", status="failed", error_code="TIMEOUT"), run("draft", "retry", 2, output="d"), run("review")]
    b = [run("draft", "reused", 2, output="d"), run("review", output="another")]
    compared = compare_runs(a, b)
    assert [(p["node_id"], p["attempt"], p["verdict"], p["not_repeated"]) for p in compared["pairs"]] == [
        ("draft", 1, "only_a", True), ("draft", 2, "same", False), ("review", 1, "differs", False)]
    assert [(n["node_id"], n["verdict"]) for n in compared["nodes"]] == [("draft", "same"), ("review", "differs")]
    # A run that ran the node afresh, and needed no retry, did differ from one that did.
    fresh = compare_runs(a, [run("draft", output="d"), run("review")])
    assert [(p["attempt"], p["verdict"], p["not_repeated"]) for p in fresh["pairs"][:2]] == [
        (1, "differs", False), (2, "only_a", False)]
    assert fresh["nodes"][0]["verdict"] == "differs"


def test_it_calls_a_different_agent_version_or_token_count_a_difference():
    for field, a_value, b_value in (("agent_version", "1.0", "1.1"), ("tokens_in", 900, 901), ("tokens_out", None, 5)):
        pair = compare_runs([run("x", **{field: a_value})], [run("x", **{field: b_value})])["pairs"][0]
        assert pair["changed"] == [field] and pair["verdict"] == "differs", field


def test_it_stops_listing_differences_of_one_output_at_the_maximum():
    count = MAX_OUTPUT_DIFFERENCES + 50
    pair = compare_runs([run("x", output=list(range(count)))], [run("x", output=[-1] * count)])["pairs"][0]
    assert len(pair["output_diff"]) == MAX_OUTPUT_DIFFERENCES and pair["output_diff_truncated"] is True
    assert pair["output_diff"][-1]["path"] == f"/{MAX_OUTPUT_DIFFERENCES - 1}"


# -- the context decisions ----------------------------------------------------------------------


def context(actions):
    return {"context_limit": 4050, "resolution": {"strategy": "transfer_modes", "actions": actions}}


def test_it_compares_the_context_decisions_input_by_input_action_by_action_failure_by_failure():
    a = run("x",
            resolved_inputs=[{"name": "notes", "transfer_mode": "full", "reason": "fits", "resolved_tokens": 900,
                              "passed_tokens": 900, "batches": 0, "passed": True, "content": "n" * 50},
                             {"name": "rules", "transfer_mode": "full", "reason": "small", "resolved_tokens": 40,
                              "passed_tokens": 40, "batches": 0, "passed": True}],
            context_record=context([{"data": "rows", "action": "batch", "original_tokens": 5000, "reduced_tokens": 2000,
                                     "reason": "3 batches", "stage": "transfer"}]),
            resolution_failures=[{"input": "extra", "error_code": "REF_NOT_FOUND", "fallback_strategy": "use_default",
                                  "fallback_value": [], "error_message": "at 10:00"}])
    b = run("x",
            resolved_inputs=[{"name": "notes", "transfer_mode": "summary", "reason": "over the budget",
                              "resolved_tokens": 900, "passed_tokens": 300, "batches": 0, "passed": True},
                             {"name": "rules", "transfer_mode": "full", "reason": "small", "resolved_tokens": 40,
                              "passed_tokens": 40, "batches": 0, "passed": True}],
            context_record=context([{"data": "notes", "action": "summarize", "original_tokens": 900,
                                     "reduced_tokens": 300, "reason": "summary", "stage": "transfer"},
                                    {"data": "rows", "action": "batch", "original_tokens": 5000,
                                     "reduced_tokens": 2000, "reason": "3 batches", "stage": "transfer"}]),
            resolution_failures=[{"input": "extra", "error_code": "REF_NOT_FOUND", "fallback_strategy": "use_default",
                                  "fallback_value": [], "error_message": "at 10:01"}])
    pair = compare_runs([a], [b])["pairs"][0]
    notes, rules = pair["inputs"]
    assert notes["name"] == "notes" and notes["changed"] == ["transfer_mode", "reason", "passed_tokens"]
    assert (notes["a"]["transfer_mode"], notes["b"]["transfer_mode"]) == ("full", "summary")
    assert "content" not in notes["a"]  # the input itself is not part of the decision
    assert rules["differs"] is False
    batch, summarise = pair["actions"]
    assert (batch["data"], batch["action"], batch["differs"]) == ("rows", "batch", False)
    assert (summarise["data"], summarise["action"], summarise["a"], summarise["differs"]) == ("notes", "summarize", None, True)
    assert summarise["b"] == {"original_tokens": 900, "reduced_tokens": 300, "reason": "summary", "stage": "transfer"}
    (failure,) = pair["failures"]
    assert failure["input"] == "extra" and failure["differs"] is False  # only the message's time differs
    assert failure["a"]["error_message"] == "at 10:00"
    assert pair["differs"] is True and pair["changed"] == [] and pair["output_diff"] == []


def test_it_notices_a_different_fallback_and_a_failure_in_one_run_only():
    failure = {"input": "extra", "error_code": "REF_NOT_FOUND", "fallback_strategy": "use_default", "fallback_value": []}
    other = {**failure, "fallback_strategy": "skip_field", "fallback_value": None}
    pair = compare_runs([run("x", resolution_failures=[failure])], [run("x", resolution_failures=[other])])["pairs"][0]
    assert pair["failures"][0]["changed"] == ["fallback_strategy", "fallback_value"] and pair["verdict"] == "differs"
    pair = compare_runs([run("x", resolution_failures=[failure])], [run("x")])["pairs"][0]
    assert pair["failures"][0]["b"] is None and pair["verdict"] == "differs"


def test_it_reads_records_of_any_shape_without_failing():
    odd = run("x", context_record={"resolution": "none"}, resolved_inputs=["text", {"name": "a"}],
              resolution_failures=None)
    pair = compare_runs([odd], [run("x", context_record=None)])["pairs"][0]
    assert pair["actions"] == [] and [entry["name"] for entry in pair["inputs"]] == ["a"]


def test_tool_calls_pair_by_tool_and_arguments_and_compare_by_how_they_ended_and_their_digest():
    def call(id, query, status="success", digest="sha256:1"):
        return {"id": id, "turn": 1, "name": "builtin.knowledge_search", "arguments": {"query": query},
                "status": status, "result_digest": None if status == "awaiting_approval" else digest}

    a = {"tool_calls": [call("a1", "x"), call("a2", "y", digest="sha256:2"), call("a3", "w", "awaiting_approval"),
                        call("a4", "x")]}
    b = {"tool_calls": [call("b1", "x"), call("b2", "y", digest="sha256:3"), call("b3", "w", "awaiting_approval"),
                        call("b4", "z")]}
    found = [(entry["arguments"]["query"], entry["verdict"], (entry["a"] or {}).get("id"), (entry["b"] or {}).get("id"))
             for entry in tool_call_differences(a, b)]
    assert found == [("x", "same_result", "a1", "b1"), ("y", "different_result", "a2", "b2"),
                     ("w", "same_result", "a3", "b3"), ("x", "only_a", "a4", None), ("z", "only_b", None, "b4")]
    waiting_here_only = {"tool_calls": [call("b3", "w", "TOOL_CALL_REJECTED", digest=None)]}
    assert tool_call_differences({"tool_calls": [call("a3", "w", "awaiting_approval")]},
                                 waiting_here_only)[0]["verdict"] == "different_result"
    assert tool_call_differences(None, {"tool_calls": []}) == []
