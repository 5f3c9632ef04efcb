"""Tool results within a node's budget across turns (engine/context/tool_results.py)."""
import pytest

from engine.context.tool_results import ToolBudget, ToolResultsOverBudget
from engine.tokens import TokenCounter

COUNTER = TokenCounter("cl100k_base")


def text(tokens):
    return " ".join(f"w{n}" for n in range(tokens // 2))  # about two tokens a word


def budget(limit, prompt_tokens=100):
    return ToolBudget(limit=limit, prompt_tokens=prompt_tokens, counter=COUNTER)


def test_a_small_result_is_passed_whole_and_recorded_against_the_limit():
    tools = budget(10_000)
    [passed], record = tools.add(1, [("c1", "builtin.read_file", {"rows": [1, 2, 3]})])
    assert passed == {"rows": [1, 2, 3]}
    assert record["resolution"] == {"strategy": "none", "actions": [], "final_tokens": tools.used(),
                                    "within_limit": True}
    assert record["total_input_data"]["builtin.read_file result (c1)"]["transfer_mode"] == "full"
    assert record["context_limit"] == 10_000 and record["tokens_before"] == 100


def test_a_middling_result_is_summarised_and_a_large_one_passed_by_reference():
    tools = budget(100_000)
    middling, large = text(5_000), text(20_000)
    [summary, reference], record = tools.add(1, [("c1", "t.a", middling), ("c2", "t.b", large)])
    summarised, referenced = record["resolution"]["actions"]
    assert summarised["action"] == "summarize" and summarised["reduced_tokens"] < summarised["original_tokens"]
    assert COUNTER.count(summary) <= summarised["reduced_tokens"] + 5
    assert referenced["action"] == "reference" and reference["tool_call"] == "c2"
    assert reference["preview"] and large.startswith(reference["preview"].rstrip("…").strip()[:50])


def test_earlier_results_are_trimmed_oldest_first_before_this_turns_are_shortened():
    tools = budget(4_000, prompt_tokens=500)  # room for two results of 1,500, not three
    tools.add(1, [("c1", "t.a", text(1_500))])
    tools.add(2, [("c2", "t.a", text(1_500))])
    [latest], record = tools.add(3, [("c3", "t.a", text(1_500))])
    trims = [action for action in record["resolution"]["actions"] if action["action"] == "trim"]
    assert [action["data"] for action in trims] == ["t.a result (c1)"]  # the oldest went, the turn-2 one stayed
    assert latest == text(1_500) and record["resolution"]["within_limit"]
    modes = {name: entry["transfer_mode"] for name, entry in record["total_input_data"].items()}
    assert modes == {"prompt data": "full", "t.a result (c1)": "trimmed", "t.a result (c2)": "full",
                     "t.a result (c3)": "full"}


def test_results_that_cannot_fit_even_as_references_fail_naming_the_limit():
    tools = budget(300, prompt_tokens=290)
    with pytest.raises(ToolResultsOverBudget) as caught:
        tools.add(1, [("c1", "t.a", text(1_800))])
    assert caught.value.code == "CONTEXT_BUDGET_EXCEEDED" and "300 tokens" in str(caught.value)
