"""The JSON checks every write shares: what no database stores or page shows, and JSON
text Python's parser would crash on or accept wrongly."""
import pytest

from core.errors import DocumentError
from core.jsonutil import MAX_NESTING, check_storable, parse_json


def nested(levels):
    value = "x"
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("value, message", [
    ({"notes": ["ok", "lone \ud800"]}, "input.notes[1]: is not valid Unicode (it contains a lone surrogate)"),
    ({"notes": {"key \udc00": 1}}, "input.notes: a key is not valid Unicode (it contains a lone surrogate)"),
    ({"notes": "nul \x00"}, "input.notes: contains a NUL character (\\u0000)"),
    ({"score": float("nan")}, "input.score: nan is not a finite number"),
    ({"deep": nested(MAX_NESTING)}, f"input.deep{'[0]' * (MAX_NESTING - 1)}: is nested more than 64 levels deep"),
])
def test_it_refuses_what_no_database_stores_or_page_shows_naming_where(value, message):
    with pytest.raises(DocumentError) as refused:
        check_storable(value, "input")
    assert refused.value.message == message
    refused.value.message.encode("utf-8")  # the message itself can always be shown


def test_it_accepts_text_in_any_script_and_nesting_up_to_the_limit():
    check_storable({"名前": ["Grüße", "🙂"], "deep": nested(MAX_NESTING - 1)}, "input")


@pytest.mark.parametrize("text, message", [
    ("[" * 100_000 + "]" * 100_000, "the JSON is nested too deeply"),
    ('{"a": NaN}', "NaN is not a JSON number"),
    ('{"a": [-Infinity]}', "-Infinity is not a JSON number"),
    ('{"a": ' + "9" * 5000 + "}", "an integer of 5000 digits is too long (the limit is 4300 digits)"),
    ('{"a": 1', "malformed JSON at line 1, column 8"),
])
def test_it_refuses_json_text_with_a_message_instead_of_a_crash(text, message):
    with pytest.raises(DocumentError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_json(text)


def test_it_reads_long_but_reasonable_numbers():
    assert parse_json('{"a": ' + "9" * 4300 + ', "b": 1.5}') == {"a": int("9" * 4300), "b": 1.5}
