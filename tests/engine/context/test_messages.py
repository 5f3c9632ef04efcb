import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.context.messages import DataMessage, MessageError, merge_messages, parse_message

STATE_SCHEMA = {
    "type": "object",
    "properties": {
        "step": {"type": "integer", "minimum": 0},
        "notes": {"type": "array", "items": {"type": "string"}},
        "progress": {"type": "object", "properties": {"done": {"type": "integer"}}},
    },
    "required": ["step"],
}


def state(data, **extra):
    return parse_message({"kind": "state", "data": data, **extra})


def test_it_parses_a_message_with_data_schema_kind_and_instance():
    message = parse_message({"data": {"step": 1}, "schema": STATE_SCHEMA, "kind": "state", "_instance": "doc-1"})
    assert message == DataMessage(data={"step": 1}, schema=STATE_SCHEMA, kind="state", instance="doc-1")
    assert message.identity == ("state", "doc-1")
    assert parse_message({"data": [1, "two"]}) == DataMessage(data=[1, "two"])
    assert parse_message({"data": None}).identity is None


def test_it_takes_the_instance_from_the_data_when_the_message_has_none():
    message = parse_message({"kind": "input", "data": {"_instance": "b", "x": 1}})
    assert message.identity == ("input", "b")


@pytest.mark.parametrize(
    "raw, named",
    [
        (["data"], "must be an object"),
        ({"kind": "state"}, "'data' is required"),
        ({"data": 1, "type": "state"}, "'type'"),
        ({"data": 1, "kind": 3}, "'kind'"),
        ({"data": 1, "kind": ""}, "'kind'"),
        ({"data": 1, "_instance": 2}, "'_instance'"),
        ({"data": {"_instance": 2}}, "data._instance"),
        ({"data": {"_instance": "a"}, "_instance": "b"}, "disagree"),
        ({"data": 1, "schema": "integer"}, "'schema'"),
    ],
)
def test_it_refuses_a_malformed_message_saying_which(raw, named):
    with pytest.raises(MessageError) as caught:
        parse_message(raw, index=4)
    assert str(caught.value).startswith("data message 4: ")
    assert named in str(caught.value)
    assert caught.value.index == 4


def test_it_refuses_a_schema_that_is_not_a_json_schema_naming_where():
    with pytest.raises(MessageError, match=r"not a valid JSON Schema \(at \$\.properties\.step\.minimum\)"):
        parse_message({"data": {}, "schema": {"properties": {"step": {"minimum": "zero"}}}}, index=2)


def test_it_refuses_a_schema_whose_pattern_re2_cannot_take_naming_the_message_and_the_pattern():
    schema = {"properties": {"code": {"pattern": "^(?!tmp)[a-z]+$"}}}
    with pytest.raises(MessageError, match=r"data message 3: 'schema' is not a valid JSON Schema "
                                           r"\(at \$\.properties\.code\.pattern\): the pattern '\^\(\?!tmp\)"):
        parse_message({"data": {"code": "abc"}, "schema": schema}, index=3)


def test_it_refuses_data_that_does_not_match_its_schema_naming_the_path():
    with pytest.raises(MessageError) as caught:
        state({"step": 1, "notes": ["ok", 7], "progress": {"done": "all"}}, schema=STATE_SCHEMA)
    text = str(caught.value)
    assert "$.notes[1]: 7 is not of type 'string'" in text
    assert "$.progress.done: 'all' is not of type 'integer'" in text


def test_it_never_fetches_a_remote_schema():
    with pytest.raises(MessageError, match="cannot be resolved"):
        parse_message({"data": 1, "schema": {"$ref": "https://example.com/schema.json"}})


def test_it_merges_a_series_of_state_updates_into_one():
    updates = [
        state({"step": 0, "notes": ["start"], "progress": {"done": 0, "of": 3}}, schema=STATE_SCHEMA),
        parse_message({"kind": "input", "data": {"question": "why?"}}),
        state({"step": 1, "progress": {"done": 1}}),
        state({"step": 2, "notes": ["replaced"], "progress": {"done": 2}}),
    ]
    merged = merge_messages(updates)
    assert merged == [
        DataMessage(
            data={"step": 2, "notes": ["replaced"], "progress": {"done": 2, "of": 3}}, schema=STATE_SCHEMA, kind="state"
        ),
        updates[1],
    ]


def test_it_does_not_change_the_messages_it_merges():
    updates = [state({"progress": {"done": 0}}), state({"progress": {"done": 1}})]
    before = copy.deepcopy(updates)
    merged = merge_messages(updates)
    merged[0].data["progress"]["done"] = 99
    assert updates == before


def test_it_replaces_data_that_is_not_an_object():
    merged = merge_messages([state([1, 2]), state({"a": 1}), state("final")])
    assert [message.data for message in merged] == ["final"]


def test_it_keeps_parallel_instances_apart():
    messages = [
        state({"step": 1}, _instance="a"),
        state({"step": 1, "_instance": "b"}),
        state({"step": 2}, _instance="a"),
        state({"step": 5}),
        state({"step": 3, "_instance": "b"}),
    ]
    merged = merge_messages(messages)
    assert [(message.instance, message.data["step"]) for message in merged] == [("a", 2), ("b", 3), (None, 5)]


def test_it_never_merges_messages_without_a_kind():
    messages = [parse_message({"data": {"a": 1}}), parse_message({"data": {"a": 2}}), state({"a": 3})]
    assert merge_messages(messages) == messages


def test_it_checks_the_merged_data_against_the_latest_schema():
    strict = {"type": "object", "properties": {"step": {"type": "integer"}}, "additionalProperties": False}
    messages = [
        state({"step": 1, "scratch": "x"}, _instance="a"),
        state({"step": 2}, _instance="a", schema=strict),
    ]
    with pytest.raises(MessageError) as caught:
        merge_messages(messages)
    text = str(caught.value)
    assert "data messages 0, 1 (kind 'state', _instance 'a')" in text
    assert "$: Additional properties are not allowed ('scratch' was unexpected)" in text
    assert caught.value.identity == ("state", "a")


def test_it_keeps_an_earlier_schema_when_later_updates_give_none():
    merged = merge_messages([state({"step": 0}, schema=STATE_SCHEMA), state({"notes": ["n"]})])
    assert merged[0].schema == STATE_SCHEMA
    with pytest.raises(MessageError, match=r"\$\.step: -1 is less than the minimum of 0"):
        merge_messages([state({"step": 0}, schema=STATE_SCHEMA), state({"step": -1})])


MESSAGES = st.lists(
    st.builds(
        DataMessage,
        data=st.dictionaries(st.sampled_from("xyz"), st.integers(0, 9), max_size=3),
        kind=st.sampled_from([None, "state", "input"]),
        instance=st.sampled_from([None, "a", "b"]),
    ),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(MESSAGES)
def test_it_merges_in_order_of_first_appearance(messages):
    merged = merge_messages(messages)
    expected = []  # a message without an identity, or the identity its merged message has
    for message in messages:
        if message.identity is None:
            expected.append(message)
        elif message.identity not in expected:
            expected.append(message.identity)
    assert len(merged) == len(expected)
    for result, wanted in zip(merged, expected, strict=True):
        if isinstance(wanted, DataMessage):
            assert result is wanted
        else:
            assert result.identity == wanted
            folded = {}
            for message in messages:
                if message.identity == wanted:
                    folded.update(message.data)
            assert result.data == folded


@settings(max_examples=100, deadline=None)
@given(MESSAGES.filter(len).map(lambda messages: messages[:1]))
def test_it_leaves_a_single_message_as_it_is(one):
    assert merge_messages(one) == one
