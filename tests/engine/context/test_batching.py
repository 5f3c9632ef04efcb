import json
import math
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.context.batching import aggregate, plan_batches
from engine.context.content import render
from engine.tokens import TokenCounter

COUNTER = TokenCounter()


def cost(element):
    return COUNTER.count(json.dumps(element, ensure_ascii=False))


def atoms(count, words=12):
    return [{"atom_id": f"a{i}", "content": " ".join(f"word{i}x{j}" for j in range(words))} for i in range(count)]


def new_elements(plan):
    """The elements in the order the batches introduce them, overlaps left out."""
    return [element for batch, repeated in zip(plan.batches, plan.overlaps, strict=True) for element in batch[repeated:]]


def rebuilt_text(plan):
    return "".join(batch[repeated:] for batch, repeated in zip(plan.batches, plan.overlaps, strict=True))


# ---------------------------------------------------------------- lists


def test_it_splits_a_list_into_batches_that_fit_with_exact_counts():
    data = atoms(30)
    plan = plan_batches(data, counter=COUNTER, batch_size_tokens=400, overlap_tokens=0)
    assert len(plan.batches) > 1
    assert plan.tokens == [COUNTER.count(render(batch)) for batch in plan.batches]
    assert all(count <= 400 for count in plan.tokens)
    assert new_elements(plan) == data and plan.overlaps == [0] * len(plan.batches)
    assert plan.total_tokens == COUNTER.count(render(data))
    assert (plan.left_out, plan.order) == (0, "chronological")


def test_it_fills_each_batch_until_the_next_element_would_not_fit():
    data = atoms(30)
    plan = plan_batches(data, counter=COUNTER, batch_size_tokens=400, overlap_tokens=0)
    for batch, following in pairwise(plan.batches):
        assert COUNTER.count(render(batch + following[:1])) > 400 - 5


def test_it_starts_each_batch_with_the_end_of_the_previous_one():
    data = atoms(30)
    plan = plan_batches(data, counter=COUNTER, batch_size_tokens=400, overlap_tokens=2 * cost(data[0]) + 5)
    assert plan.overlaps[0] == 0 and set(plan.overlaps[1:]) == {2}
    for (previous, batch), repeated in zip(pairwise(plan.batches), plan.overlaps[1:], strict=True):
        assert batch[:repeated] == previous[-repeated:]
    assert new_elements(plan) == data
    assert all(count <= 400 for count in plan.tokens)


def test_it_stops_at_max_batches_and_counts_the_elements_left_out():
    data = atoms(30)
    whole = plan_batches(data, counter=COUNTER, batch_size_tokens=400, overlap_tokens=0)
    plan = plan_batches(data, counter=COUNTER, batch_size_tokens=400, overlap_tokens=0, max_batches=2)
    assert plan.batches == whole.batches[:2]
    assert plan.left_out == len(data) - len(plan.batches[0]) - len(plan.batches[1]) > 0


def test_it_puts_an_element_too_big_for_a_batch_alone_in_its_own():
    big = {"atom_id": "big", "content": "lorem ipsum " * 200}
    data = atoms(2) + [big] + atoms(2)
    plan = plan_batches(data, counter=COUNTER, batch_size_tokens=100, overlap_tokens=30)
    assert [big] in plan.batches
    assert plan.tokens[plan.batches.index([big])] == COUNTER.count(render([big])) > 100
    assert new_elements(plan) == data


def test_it_orders_by_importance_then_confidence_keeping_ties_in_place():
    data = [
        {"id": 1, "atom_type": "background"},
        {"id": 2, "atom_type": "evidence", "confidence": 0.2},
        {"id": 3, "priority": 1},
        {"id": 4},
        {"id": 5, "atom_type": "evidence", "score": 0.9},
        {"id": 6, "atom_type": "citations", "confidence": 1.0},
        {"id": 7, "atom_type": "evidence", "confidence": 0.2},
        "plain text counts as important",
    ]
    plan = plan_batches(data, counter=COUNTER, batch_size_tokens=10_000, batch_priority="importance")
    assert [e["id"] if isinstance(e, dict) else e for e in plan.batches[0]] == [
        3, 5, 2, 7, 4, "plain text counts as important", 1, 6,
    ]
    assert plan.order == "importance"
    assert plan.total_tokens == COUNTER.count(render(data))


def test_it_shuffles_the_same_way_for_the_same_seed():
    data = list(range(50))
    first = plan_batches(data, counter=COUNTER, batch_priority="random", seed=7)
    again = plan_batches(data, counter=COUNTER, batch_priority="random", seed=7)
    other = plan_batches(data, counter=COUNTER, batch_priority="random", seed=8)
    assert first.batches == again.batches and first.order == "random"
    assert sorted(first.batches[0]) == data and first.batches[0] != data
    assert other.batches != first.batches


def test_it_plans_no_batch_for_empty_data():
    assert plan_batches([], counter=COUNTER).batches == []
    assert plan_batches("", counter=COUNTER).batches == []


@pytest.mark.parametrize(
    "arguments, named",
    [
        ({"batch_size_tokens": 0}, "batch_size_tokens"),
        ({"batch_size_tokens": 10.5}, "batch_size_tokens"),
        ({"overlap_tokens": -1}, "overlap_tokens"),
        ({"batch_size_tokens": 100, "overlap_tokens": 100}, "overlap_tokens"),
        ({"max_batches": 0}, "max_batches"),
        ({"max_batches": True}, "max_batches"),
        ({"batch_priority": "newest"}, "batch_priority"),
    ],
)
def test_it_refuses_bad_arguments_naming_them(arguments, named):
    with pytest.raises(ValueError, match=named):
        plan_batches(["x"], counter=COUNTER, **arguments)


def test_it_refuses_to_split_what_is_neither_a_list_nor_text():
    with pytest.raises(ValueError, match="data"):
        plan_batches({"a": 1}, counter=COUNTER)


SIZED_ELEMENTS = st.lists(
    st.one_of(
        st.integers(0, 120).map(lambda n: "word " * n),
        st.integers(0, 60).map(lambda n: {"text": "lorem ipsum " * n}),
        st.integers(-10**6, 10**6),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(SIZED_ELEMENTS, st.integers(10, 400), st.floats(0, 0.9), st.integers(1, 12))
def test_it_never_makes_a_batch_too_big_unless_a_lone_element_is(data, size, overlap_share, max_batches):
    overlap = int(size * overlap_share)
    plan = plan_batches(data, counter=COUNTER, batch_size_tokens=size, overlap_tokens=overlap, max_batches=max_batches)
    assert len(plan.batches) <= max_batches
    for batch, count, repeated in zip(plan.batches, plan.tokens, plan.overlaps, strict=True):
        assert count == COUNTER.count(render(batch))
        assert count <= size or len(batch) == 1
        assert repeated < len(batch)
        assert sum(cost(element) for element in batch[:repeated]) <= overlap
    assert new_elements(plan) + data[len(data) - plan.left_out:] == data


# ---------------------------------------------------------------- text

TEXT = "".join(f"Параграф {i}: 数据传递协议 handles long documents 🙂 in windows.\n" for i in range(120))


def test_it_splits_text_into_token_windows_that_rebuild_the_text():
    plan = plan_batches(TEXT, counter=COUNTER, batch_size_tokens=200, overlap_tokens=20, max_batches=100)
    assert len(plan.batches) > 5
    assert all(isinstance(batch, str) for batch in plan.batches)
    assert plan.tokens == [COUNTER.count(batch) for batch in plan.batches]
    assert all(count <= 200 for count in plan.tokens)
    assert rebuilt_text(plan) == TEXT
    assert plan.total_tokens == COUNTER.count(TEXT) and plan.left_out == 0


def test_it_overlaps_text_windows():
    plan = plan_batches(TEXT, counter=COUNTER, batch_size_tokens=200, overlap_tokens=20, max_batches=100)
    assert plan.overlaps[0] == 0 and all(repeated > 0 for repeated in plan.overlaps[1:])
    for (previous, batch), repeated in zip(pairwise(plan.batches), plan.overlaps[1:], strict=True):
        assert previous.endswith(batch[:repeated])
        assert COUNTER.count(batch[:repeated]) <= 20 + 2


def test_it_counts_the_tokens_of_text_left_out_by_max_batches():
    plan = plan_batches(TEXT, counter=COUNTER, batch_size_tokens=200, overlap_tokens=0, max_batches=3)
    assert len(plan.batches) == 3
    covered = COUNTER.encoding.encode("".join(plan.batches), disallowed_special=())
    assert plan.left_out == plan.total_tokens - len(covered) > 0


def test_it_encodes_the_whole_text_only_once():
    counter = TokenCounter()
    real = counter.encoding
    whole = []

    class Spy:
        def __getattr__(self, name):
            return getattr(real, name)

        def encode(self, text, **kwargs):
            whole.extend([text] if text == TEXT else [])
            return real.encode(text, **kwargs)

    counter.encoding = Spy()
    plan = plan_batches(TEXT, counter=counter, batch_size_tokens=300, overlap_tokens=10)
    assert len(plan.batches) > 1 and len(whole) == 1


@settings(max_examples=150, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("ab cд数据🙂\n\t\"'é")) | st.characters(exclude_categories=["Cs"]), max_size=400
    ),
    st.integers(4, 60),
    st.floats(0, 0.9),
)
def test_it_rebuilds_any_text_from_windows_that_fit(text, size, overlap_share):
    overlap = int(size * overlap_share)
    plan = plan_batches(text, counter=COUNTER, batch_size_tokens=size, overlap_tokens=overlap, max_batches=1000)
    assert rebuilt_text(plan) == text
    assert all(count <= size for count in plan.tokens)
    assert plan.tokens == [COUNTER.count(batch) for batch in plan.batches]


def test_it_passes_a_lone_surrogate_as_the_tokenizer_sees_it():
    """Text with a lone surrogate is not valid UTF-8; tiktoken encodes it as U+FFFD."""
    plan = plan_batches("a\ud800b", counter=COUNTER, batch_size_tokens=10, overlap_tokens=0)
    assert plan.batches == ["a\ufffdb"]


# ---------------------------------------------------------------- aggregation


def test_it_merges_lists_dropping_duplicates_by_id_or_value():
    merged = aggregate(
        [
            [{"atom_id": "a1", "text": "first"}, {"id": 7}, "x"],
            [{"atom_id": "a1", "text": "again"}, {"relation_id": "r1"}, "x", {"id": 7}, {"atom_id": "a2"}],
        ],
        "merge",
    )
    assert merged == [{"atom_id": "a1", "text": "first"}, {"id": 7}, "x", {"relation_id": "r1"}, {"atom_id": "a2"}]


def test_it_deep_merges_objects():
    merged = aggregate(
        [
            {"summary": "one", "atoms": [{"atom_id": "a1"}], "meta": {"pages": 3, "title": "T"}},
            {"summary": "two", "atoms": [{"atom_id": "a1"}, {"atom_id": "a2"}], "meta": {"pages": 5}, "year": None},
            {"year": 2020, "meta": {"title": None}},
        ],
        "merge",
    )
    assert merged == {
        "summary": "two",
        "atoms": [{"atom_id": "a1"}, {"atom_id": "a2"}],
        "meta": {"pages": 5, "title": "T"},
        "year": 2020,
    }


def test_it_merges_texts_with_blank_lines_and_skips_empty_results():
    assert aggregate(["first part", None, "", "second part"], "merge") == "first part\n\nsecond part"


def test_it_refuses_to_merge_results_of_different_kinds():
    with pytest.raises(ValueError, match="different kinds"):
        aggregate([{"a": 1}, [1]], "merge")


def test_it_votes_for_the_most_common_result_and_breaks_ties_by_order():
    assert aggregate(["yes", "no", "no"], "vote") == "no"
    assert aggregate([{"label": "b", "p": 1}, {"label": "a"}, {"p": 1, "label": "b"}], "vote") == {"label": "b", "p": 1}
    assert aggregate(["no", "yes", "yes", "no"], "vote") == "no"
    assert aggregate([1, True, True], "vote") is True


def test_it_takes_the_latest_result():
    assert aggregate([{"v": 1}, {"v": 2}], "latest") == {"v": 2}


def test_it_weights_numbers_and_objects():
    assert aggregate([1.0, 3.0], "weighted", weights=[1, 3]) == pytest.approx(2.5)
    merged = aggregate(
        [{"score": 0.2, "label": "a", "only": "x"}, {"score": 0.8, "label": "b"}], "weighted", weights=[1, 3]
    )
    assert merged == {"score": pytest.approx(0.65), "label": "b", "only": "x"}
    assert aggregate(["a", "b", "c"], "weighted", weights=[1, 2, 2]) == "b"


def test_it_weights_by_each_results_own_confidence_else_equally():
    by_confidence = aggregate([{"score": 0.0, "confidence": 0.25}, {"score": 1.0, "confidence": 0.75}], "weighted")
    assert by_confidence["score"] == pytest.approx(0.75)
    assert aggregate([{"score": 0.0, "confidence": 0.9}, {"score": 1.0}], "weighted")["score"] == pytest.approx(0.5)
    assert aggregate([2, 4], "weighted") == pytest.approx(3)


@pytest.mark.parametrize(
    "weights, named",
    [([1], "one weight per result"), ([1, -1], r"weights\[1\]"), ([0, 0], "all are zero"),
     ([1, math.nan], r"weights\[1\]"), ([True, 1], r"weights\[0\]")],
)
def test_it_refuses_bad_weights(weights, named):
    with pytest.raises(ValueError, match=named):
        aggregate([1, 2], "weighted", weights=weights)


def test_it_refuses_an_unknown_strategy_or_no_results():
    with pytest.raises(ValueError, match="'average'"):
        aggregate([1], "average")
    with pytest.raises(ValueError, match="non-empty"):
        aggregate([], "merge")
    with pytest.raises(ValueError, match="weighted"):
        aggregate([1], "vote", weights=[1])
