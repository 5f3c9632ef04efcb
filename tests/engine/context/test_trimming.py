"""Priority trimming (data-transfer-protocol §6.3) and the §7.2 example."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.context.assembler import ContextBuilder
from engine.context.content import render
from engine.context.limits import ContextLimits
from engine.context.resolution import Sources
from engine.context.trimming import InstructionsTooLarge, Item, Shrinker, trim
from tests.engine.context.helpers import COUNTER, atoms_of, text_of

SHRINKER = Shrinker(COUNTER)


def item(name, tokens, priority, data_type="text", seed=0):
    return Item(name, text_of(tokens, seed), tokens, priority, data_type)


def builder(**limits):
    return ContextBuilder(limits=ContextLimits(**limits), counter=COUNTER, sources=Sources())


def test_it_fits_the_seed_example_of_section_7_2_within_the_limit():
    """45,000 / 8,000 / 35,000 / 5,000 / 2,000 tokens against 100K − 5K − 3K × 0.9 = 82,800."""
    items = [
        {"name": "scholar_output", "content": atoms_of(45_000, ("claim",), seed=1), "priority": 1},
        {"name": "validator_output", "content": text_of(8_000, seed=2), "priority": 1},
        {"name": "db_query_result", "content": atoms_of(35_000, ("evidence", "methodology", "background"), seed=3),
         "priority": 2},
        {"name": "system_prompt", "content": text_of(5_000, seed=4), "priority": 1, "data_type": "system_prompt"},
        {"name": "task_instructions", "content": text_of(2_000, seed=5), "priority": 1, "data_type": "instructions"},
    ]
    assembly = builder().assemble(task_id="task_vault_001", items=items)
    record = assembly.record
    assert {name: (entry["tokens"], entry["priority"]) for name, entry in record["total_input_data"].items()} == {
        "scholar_output": (45_000, 1), "validator_output": (8_000, 1), "db_query_result": (35_000, 2),
        "system_prompt": (5_000, 1), "task_instructions": (2_000, 1),
    }
    assert (record["total_tokens"], record["context_limit"], record["overflow"]) == (95_000, 82_800, 12_200)
    resolution = record["resolution"]
    assert resolution["strategy"] == "priority_based_trimming"
    assert [(a["data"], a["action"]) for a in resolution["actions"]] == [
        ("db_query_result", "filter_by_priority"), ("db_query_result", "summarize")]
    assert resolution["actions"][0]["filter"] == "priority <= 2"
    summary = resolution["actions"][1]
    assert summary["original_tokens"] < 35_000 and summary["reduced_tokens"] < 0.8 * 82_800 - 60_000
    assert resolution["within_limit"] and resolution["final_tokens"] <= 82_800
    assert resolution["final_tokens"] == sum(COUNTER.count(text) for _, text in assembly.texts())
    passed = {i.name: i for i in assembly.items}
    assert passed["scholar_output"].content == items[0]["content"], "priority 1 passes untouched"
    assert all(a["atom_type"] != "background" for a in passed["db_query_result"].content["db_query_result_summary"])


def test_it_keeps_everything_when_nothing_overflows():
    kept, actions = trim([item("a", 100, 4), item("b", 100, 3)], 1_000, SHRINKER)
    # trim is only called on overflow, but it must not drop what fits under the thresholds either
    assert [i.name for i in kept] == ["b", "a"] and actions == []


def test_it_drops_supplementary_and_optional_items_past_their_thresholds():
    kept, actions = trim([item("p1", 700, 1), item("p3", 250, 3, seed=1), item("p4", 260, 4, seed=2)], 1_000, SHRINKER)
    assert [i.name for i in kept] == ["p1"]
    assert [(a["data"], a["action"]) for a in actions] == [("p3", "drop"), ("p4", "drop")]
    assert "0.9 × limit" in actions[0]["reason"] and "0.95 × limit" in actions[1]["reason"]


def test_it_keeps_optional_items_while_under_095_of_the_limit():
    kept, _ = trim([item("p1", 800, 1), item("p4", 140, 4, seed=1), item("p3", 200, 3, seed=2)], 1_000, SHRINKER)
    assert [i.name for i in kept] == ["p1", "p4"]


def test_it_summarises_an_important_item_into_the_room_under_08():
    kept, actions = trim([item("p1", 500, 1), item("p2", 600, 2, seed=1)], 1_000, SHRINKER)
    assert [a["action"] for a in actions] == ["summarize"]
    assert kept[1].tokens < 300 and kept[1].tokens == COUNTER.count(render(kept[1].content))


def test_it_never_summarises_code_and_drops_it_instead():
    kept, actions = trim([item("p1", 500, 1), item("code", 600, 2, "code", seed=1)], 1_000, SHRINKER)
    assert [i.name for i in kept] == ["p1"] and actions[0]["action"] == "drop"


def test_it_compresses_priority_1_items_that_alone_exceed_the_limit_without_dropping_any():
    items = [item("instructions", 100, 1, "instructions"), item("a", 2_000, 1, seed=1), item("b", 1_000, 1, seed=2)]
    kept, actions = trim(items, 1_000, SHRINKER)
    assert [i.name for i in kept] == ["instructions", "a", "b"]
    assert kept[0].tokens == 100, "instructions are passed whole"
    assert sum(i.tokens for i in kept) <= 1_000
    assert {a["action"] for a in actions} <= {"compress", "truncate"} and actions


priority_items = st.lists(
    st.tuples(st.integers(1, 4), st.integers(0, 1_500), st.sampled_from(["text", "code", "structured"])),
    min_size=1, max_size=8,
)


@settings(max_examples=40, deadline=None)
@given(priority_items, st.integers(50, 5_000))
def test_it_keeps_every_priority_1_item_and_tells_the_truth_about_the_limit(specs, limit):
    items = [{"name": f"i{n}", "content": text_of(tokens, seed=n), "priority": p, "data_type": kind}
             for n, (p, tokens, kind) in enumerate(specs)]
    assembly = builder(max_input_tokens=limit, reserved_for_system_prompt=0, reserved_for_instructions=0,
                       safety_margin=1.0).assemble(items=items)
    resolution = assembly.record["resolution"]
    passed = {i.name for i in assembly.items}
    assert {f"i{n}" for n, (p, _, _) in enumerate(specs) if p == 1} <= passed
    final = sum(COUNTER.count(text) for _, text in assembly.texts())
    assert resolution["final_tokens"] == final
    assert resolution["within_limit"] == (final <= limit)
    if sum(tokens for p, tokens, _ in specs if p == 1) <= limit:
        assert resolution["within_limit"]


def test_an_important_item_is_summarised_under_the_limit_before_it_is_dropped():
    """Priority 1 leaves no room for a summary under 0.8 × limit: the seed still summarises
    a priority-2 input, so it goes into the room left under the limit itself."""
    kept, actions = trim([item("p1", 790, 1), item("p2", 600, 2, seed=1)], 1_000, SHRINKER)
    assert [i.name for i in kept] == ["p1", "p2"]
    (action,) = actions
    assert action["action"] == "summarize"
    assert "the 210 tokens left under the limit" in action["reason"]
    assert 0 < kept[1].tokens <= 210 and sum(i.tokens for i in kept) <= 1_000


def test_an_important_item_is_dropped_only_when_no_summary_fits_under_the_limit():
    kept, actions = trim([item("p1", 990, 1), item("p2", 600, 2, seed=1)], 1_000, SHRINKER)
    assert [i.name for i in kept] == ["p1"]
    assert actions[0]["action"] == "drop" and "only 10 tokens left under the limit" in actions[0]["reason"]


def test_task_instructions_are_never_truncated_even_as_a_last_resort():
    items = [item("task_instructions", 900, 1, "instructions"), item("code", 300, 1, "code", seed=1)]
    kept, actions = trim(items, 1_000, SHRINKER)
    assert kept[0].content == items[0].content and kept[0].tokens == 900
    assert [(a["data"], a["action"]) for a in actions] == [("code", "truncate")]
    assert sum(i.tokens for i in kept) <= 1_000


def test_a_node_whose_instructions_alone_exceed_the_limit_fails_with_a_named_code():
    items = [{"name": "task_instructions", "content": text_of(1_200, seed=5), "data_type": "instructions"},
             {"name": "data", "content": text_of(300, seed=6), "priority": 1}]
    made = builder(max_input_tokens=1_000, reserved_for_system_prompt=0, reserved_for_instructions=0,
                   safety_margin=1.0)
    with pytest.raises(InstructionsTooLarge) as caught:
        made.assemble(items=items)
    assert caught.value.code == "INSTRUCTIONS_EXCEED_CONTEXT"
    assert caught.value.details == {"instruction_tokens": 1_200, "context_limit": 1_000}
    assert "never truncated" in caught.value.message
