"""Dataset versions: every change makes a new one and none is ever changed; a refused file
stores nothing; an export gives back what was imported."""
import json

import pytest

from core.errors import DocumentError, SwitchyardError
from experiments import dataset_selectors as selectors
from experiments.dataset_services import dataset_add_run, dataset_import, dataset_remove_item, run_output
from experiments.models import Dataset, DatasetItem, DatasetVersion
from tests.experiments.conftest import nothing_stored

pytestmark = pytest.mark.django_db

JSONL = (b'{"id": "a", "input": {"q": "why?", "n": [1, 2.5]}, "expected": null, "metadata": {"tag": "x"}}\n'
         b'{"id": "b", "input": {"q": "42"}, "expected": {"answer": 42}}\n'
         b'{"id": "c", "input": {}}\n')


def exported(version, fmt: str) -> str:
    return "".join(selectors.dataset_export(version, fmt).chunks)


def documents(version) -> list[dict]:
    return [item.document() for item in version.items.order_by("position")]


@pytest.mark.parametrize(("data", "fmt"), [
    (b'{"id": "a", "input": {}}\n{"id": "a", "input": {}}\n', "jsonl"),
    (b'{"input": {"x": NaN}}\n', "jsonl"),
    (b'[{"input": {}}, 3]', "json"),
    (b'{"input": []}\n', "jsonl"),
    (b'{"input": {}}\n\xc3\x28\n', "jsonl"),
    (b'{"input": {"a": }}\n', "jsonl"),
    (b'id,q\na,Infinity\n', "csv"),
])
def test_it_stores_nothing_when_a_file_is_refused(data, fmt):
    with pytest.raises(DocumentError):
        dataset_import(name="qa", data=data, fmt=fmt)
    assert nothing_stored()


def test_it_refuses_a_file_over_the_limit_before_reading_it(settings):
    settings.DATASET_MAX_BYTES = 20
    with pytest.raises(DocumentError) as raised:
        dataset_import(name="qa", data=JSONL, fmt="jsonl")
    assert raised.value.code == "PAYLOAD_TOO_LARGE"
    assert "the limit is 20 bytes" in str(raised.value)
    assert nothing_stored()


def test_it_refuses_a_name_that_is_not_one_or_is_a_page():
    for name in ("has space", "upload", ""):
        with pytest.raises(DocumentError) as raised:
            dataset_import(name=name, data=JSONL, fmt="jsonl")
        assert raised.value.where == "name"
    assert nothing_stored()


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_it_gives_back_what_was_imported_as_json_and_jsonl(fmt):
    version = dataset_import(name="qa", data=JSONL, fmt="jsonl")
    again = dataset_import(name="copy", data=exported(version, fmt).encode(), fmt=fmt)
    assert documents(again) == documents(version)
    assert documents(version) == [json.loads(line) for line in JSONL.decode().splitlines()]
    assert "expected" not in documents(version)[2]  # absent stays absent; null stays null
    assert documents(version)[0]["expected"] is None


def test_it_gives_back_a_csv_with_the_columns_it_was_imported_with():
    data = ('key,question,answer,metadata.source,count\n'
            'k1,"Why, then?",yes,web,3\n'
            'k2,"{""nested"": [1, null]}",null,,"""3"""\n'
            'k3,plain,,book,\n')
    version = dataset_import(name="qa", data=data.encode(), fmt="csv", columns=["key=id", "answer=expected"])
    assert documents(version) == [
        {"id": "k1", "input": {"question": "Why, then?", "count": 3}, "expected": "yes", "metadata": {"source": "web"}},
        {"id": "k2", "input": {"question": {"nested": [1, None]}, "count": "3"}, "expected": None},
        {"id": "k3", "input": {"question": "plain"}, "metadata": {"source": "book"}},
    ]
    text = exported(version, "csv")
    assert text.splitlines()[0] == "key,question,answer,metadata.source,count"
    again = dataset_import(name="copy", data=text.encode(), fmt="csv", columns=["key=id", "answer=expected"])
    assert documents(again) == documents(version)


def test_every_change_makes_a_new_version_and_leaves_the_old_ones_as_they_were(finished_run):
    first = dataset_import(name="qa", data=JSONL, fmt="jsonl", note="first", actor="ada")
    before = documents(first)
    appended = dataset_import(name="qa", data=b'{"id": "d", "input": {"q": "new"}}\n', fmt="jsonl", append=True)
    added = dataset_add_run(name="qa", execution=finished_run, use_output=True)
    removed = dataset_remove_item(dataset=Dataset.objects.get(name="qa"), item_id="b")
    replaced = dataset_import(name="qa", data=b'{"id": "z", "input": {}}\n', fmt="jsonl")
    assert [v.number for v in (first, appended, added, removed, replaced)] == [1, 2, 3, 4, 5]
    assert [v.change for v in (first, appended, added, removed, replaced)] == [
        "import", "append", "add_run", "remove", "import"]
    assert [v.item_count for v in (first, appended, added, removed, replaced)] == [3, 4, 5, 4, 1]
    assert [i["id"] for i in documents(removed)] == ["a", "c", "d", "run_1"]
    first.refresh_from_db()
    assert documents(first) == before
    assert (first.note, first.created_by) == ("first", "ada")


def test_a_version_and_its_items_refuse_to_be_saved_again():
    version = dataset_import(name="qa", data=JSONL, fmt="jsonl")
    item = version.items.first()
    item.input = {"changed": True}
    with pytest.raises(ValueError, match="never changed"):
        item.save()
    with pytest.raises(ValueError, match="never changed"):
        version.save()
    assert DatasetItem.objects.get(pk=item.pk).input != {"changed": True}


def test_an_append_refuses_an_id_the_dataset_has_naming_the_line():
    dataset_import(name="qa", data=JSONL, fmt="jsonl")
    with pytest.raises(DocumentError) as raised:
        dataset_import(name="qa", data=b'{"id": "new", "input": {}}\n{"id": "b", "input": {}}\n', fmt="jsonl",
                       append=True)
    assert raised.value.where == "line 2, id"
    assert "already in version 1" in raised.value.problem
    assert DatasetVersion.objects.count() == 1


def test_a_run_becomes_an_item_with_its_input_and_optionally_its_output(finished_run):
    version = dataset_add_run(name="from-runs", execution=finished_run, item_id="case-1", use_output=True)
    item = version.items.get()
    assert item.item_id == "case-1"
    assert item.input == {"topic": "billing", "draft": "v1"}
    assert item.expected == run_output(finished_run)
    assert item.expected["state"] == {"verdict": "ok"}
    assert item.metadata["execution_id"] == "run_1"
    second = dataset_add_run(name="from-runs", execution=finished_run, item_id="case-2")
    assert documents(second)[1] == {"id": "case-2", "input": item.input, "metadata": item.metadata}
    with pytest.raises(SwitchyardError) as raised:
        dataset_add_run(name="from-runs", execution=finished_run, item_id="case-1")
    assert raised.value.code == "CONFLICT"
    assert DatasetVersion.objects.count() == 2


def test_it_searches_a_version_by_id_and_by_text_in_its_json():
    version = dataset_import(name="qa", data=JSONL, fmt="jsonl")
    assert [i.item_id for i in selectors.version_items(version, q="WHY")] == ["a"]
    assert [i.item_id for i in selectors.version_items(version, q="answer")] == ["b"]
    assert [i.item_id for i in selectors.version_items(version, q="tag")] == ["a"]
    assert [i.item_id for i in selectors.version_items(version, q="c")] == ["c"]


def test_a_large_version_is_copied_in_batches_and_read_a_page_at_a_time(django_assert_max_num_queries):
    lines = b"".join(b'{"id": "i%d", "input": {"n": %d}}\n' % (n, n) for n in range(10_000))
    first = dataset_import(name="big", data=lines, fmt="jsonl")
    second = dataset_import(name="big", data=b'{"id": "last", "input": {}}\n', fmt="jsonl", append=True)
    assert second.item_count == 10_001 == second.items.count()
    with django_assert_max_num_queries(2):
        page = list(selectors.version_items(second, q="i99")[100:150])
        assert selectors.version_items(second, q="i99").count() == 111
    assert [item.item_id for item in page] == [f"i{n}" for n in range(9989, 10_000)]  # i99, i990…, i9900…: 111
    assert first.items.count() == 10_000
