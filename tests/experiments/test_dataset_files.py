"""Reading dataset files (JSONL, JSON, CSV) and writing them back; every refusal names its line."""
import pytest

from core.errors import DocumentError
from experiments.dataset_files import ABSENT, cell_text, format_of, parse, read_cell, write_csv


def refusal(data: bytes, fmt: str, **options) -> DocumentError:
    with pytest.raises(DocumentError) as raised:
        parse(data, fmt, **options)
    return raised.value


def test_it_reads_jsonl_keeping_an_absent_expected_apart_from_null():
    parsed = parse(b'{"id": "a", "input": {"q": 1}, "expected": null}\n\n'
                   b'{"id": "b", "input": {}, "metadata": {"m": [1]}}\n', "jsonl")
    first, second = parsed.items
    assert (first.item_id, first.input, first.expected, first.line) == ("a", {"q": 1}, None, 1)
    assert (second.expected, second.metadata, second.line) == (ABSENT, {"m": [1]}, 3)


def test_it_reads_a_json_array_naming_each_item_by_its_line():
    parsed = parse(b'[\n  {"id": "a", "input": {}},\n  {"input": {"x": 2}, "expected": "t"}\n]\n', "json")
    assert [(item.item_id, item.line) for item in parsed.items] == [("a", 2), ("item-2", 3)]


def test_it_reads_csv_by_the_cell_rule_and_the_default_columns():
    parsed = parse(b'id,question,expected,metadata.source,input.n,flag\n'
                   b'a,"hi, there",42,web,"""7""",true\n'
                   b'b,"{""k"": [1]}",,,null,\n', "csv")
    first, second = parsed.items
    assert first.input == {"question": "hi, there", "n": "7", "flag": True}
    assert (first.expected, first.metadata) == (42, {"source": "web"})
    assert second.input == {"question": {"k": [1]}, "n": None}
    assert (second.expected, second.metadata) == (ABSENT, None)
    assert [entry["target"] for entry in parsed.columns] == ["id", "input.question", "expected", "metadata.source",
                                                            "input.n", "input.flag"]


def test_it_maps_csv_columns_as_told():
    parsed = parse(b"key,answer,q\nk1,yes,why\n", "csv", columns=["key=id", "answer=expected"])
    item = parsed.items[0]
    assert (item.item_id, item.expected, item.input) == ("k1", "yes", {"q": "why"})


@pytest.mark.parametrize(("data", "fmt", "where", "words"), [
    (b'{"id": "a", "input": {}}\n{"id": "b", "input": {}}\n{"id": "a", "input": {}}\n', "jsonl", "line 3, id",
     "also on line 1"),
    (b'[{"id": "a", "input": {}},\n {"id": "a", "input": {}}]', "json", "line 2, id", "also on line 1"),
    (b'id,q\nx,1\nx,2\n', "csv", "line 3, id", "also on line 2"),
    (b'{"input": {}}\n[1, 2]\n', "jsonl", "line 2", "must be a JSON object, got an array"),
    (b'{"input": {}}\n{"input": "text"}\n', "jsonl", "line 2, input", "must be a JSON object, got a string"),
    (b'{"id": "a"}\n', "jsonl", "line 1, input", "needs an input"),
    (b'{"input": {}, "extra": 1}\n', "jsonl", "line 1, extra", "unknown field"),
    (b'{"input": {}, "metadata": [1]}\n', "jsonl", "line 1, metadata", "must be a JSON object"),
    (b'{"input": {}}\n{"input": {"a": NaN}}\n', "jsonl", "line 2", "NaN is not a JSON number"),
    (b'{"input": {"a": Infinity}}\n', "jsonl", "line 1", "Infinity is not a JSON number"),
    (b'{"input": {"a": 1e999}}\n', "jsonl", "line 1", "not a finite number"),
    (b'[{"input": {}},\n {"input": {"a": -Infinity}}]', "json", "line 2", "-Infinity is not a JSON number"),
    (b'id,score\na,NaN\n', "csv", "line 2, column 'score'", "NaN is not a JSON number"),
    (b'{"input": {}}\n{"input": {"a": 1,}}\n', "jsonl", "line 2", "invalid JSON at column 19"),
    (b'[{"input": {}}\n {"input": {}}]', "json", "line 2", "expected ',' or ']'"),
    (b'{"input": {}}\n{"input": {\xff}}\n', "jsonl", "line 2", "not UTF-8"),
    (b'id,q\na,b\nc,\xe9t\xe9\n', "csv", "line 3", "not UTF-8"),
    (b'id,q\na,{"x": }\n', "csv", "line 2, column 'q'", "not valid JSON"),
    (b'id,q\na\n', "csv", "line 2", "has 1 cells but the header has 2 columns"),
    (b'{"id": 7, "input": {}}\n', "jsonl", "line 1, id", "must be a string"),
    (b'{"input": {"a": "\\u0000"}}\n', "jsonl", "line 1, input.a", "NUL"),
    (b'{"id": "a", "input": {}}', "json", "line 1", "this is one object"),
])
def test_it_refuses_a_bad_file_naming_the_line_and_field(data, fmt, where, words):
    error = refusal(data, fmt)
    assert error.where == where
    assert words in error.problem
    assert error.details["where"] == where


def test_it_refuses_a_mapping_that_names_a_column_the_header_lacks():
    error = refusal(b"id,q\na,b\n", "csv", columns=["question=input.q"])
    assert error.where == "line 1, column 'question'"
    assert "the header lacks" in error.problem


def test_it_refuses_a_mapping_to_a_target_that_is_not_one():
    error = refusal(b"id,q\na,b\n", "csv", columns=["q=answer"])
    assert error.where == "column 'q'"
    assert "not id, expected, input.KEY or metadata.KEY" in error.problem


def test_it_refuses_two_columns_filling_one_target():
    error = refusal(b"id,q,input.q\na,b,c\n", "csv")
    assert "both fill input.q" in error.problem


def test_it_refuses_a_column_mapping_for_json():
    assert "CSV files only" in refusal(b"[]", "json", columns=["a=id"]).problem


def test_it_tells_the_format_by_the_name_or_refuses():
    assert [format_of(name) for name in ("a.jsonl", "b.JSON", "c.csv", "d.ndjson")] == ["jsonl", "json", "csv", "jsonl"]
    assert format_of("x.txt", "csv") == "csv"
    with pytest.raises(DocumentError, match="cannot tell the format"):
        format_of("x.txt")


@pytest.mark.parametrize("value", ["", "plain", "42", "true", "null", '"quoted"', "{", "[1", " 7", "NaN", "Infinity",
                                   "é ü", 0, -1.5, True, None, [1, "a"], {"k": {"n": None}}])
def test_it_writes_every_value_as_a_cell_that_reads_back_as_it(value):
    assert read_cell(cell_text(value)) == value


def test_it_writes_csv_with_the_columns_imported_and_a_column_for_each_key_they_miss():
    items = [{"id": "a", "input": {"q": "x", "extra": 1}, "expected": None, "metadata": {"m": 2}}]
    columns = [{"column": "key", "target": "id"}, {"column": "question", "target": "input.q"}]
    assert "".join(write_csv(items, columns)) == "key,question,input.extra,expected,metadata.m\na,x,1,null,2\n"
