"""import_dataset and export_dataset."""
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.experiments.conftest import nothing_stored

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_it_imports_and_exports_a_csv_with_its_mapping(tmp_path):
    path = tmp_path / "sheet.csv"
    path.write_text('key,question,answer\nk1,"why, then",42\nk2,how,\n', encoding="utf-8")
    printed = run("import_dataset", "qa", str(path), "--column", "key=id", "--column", "answer=expected",
                  "--version-note", "from the sheet")
    assert json.loads(printed) == {"dataset": "qa", "version": 1, "items": 2}
    assert run("export_dataset", "qa", "--format", "csv") == 'key,question,answer\nk1,"why, then",42\nk2,how,\n'
    lines = run("export_dataset", "qa", "--version", "1").splitlines()
    assert [json.loads(line) for line in lines] == [
        {"id": "k1", "input": {"question": "why, then"}, "expected": 42}, {"id": "k2", "input": {"question": "how"}}]


def test_it_appends_with_the_format_named(tmp_path):
    path = tmp_path / "items.txt"
    path.write_text('[{"id": "a", "input": {}}]', encoding="utf-8")
    run("import_dataset", "qa", str(path), "--format", "json")
    path.write_text('[{"id": "b", "input": {}}]', encoding="utf-8")
    assert json.loads(run("import_dataset", "qa", str(path), "--format", "json", "--append"))["items"] == 2


def test_it_refuses_a_bad_file_with_exit_2_naming_the_line(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_bytes(b'{"id": "a", "input": {}}\n{"id": "a", "input": {}}\n')
    with pytest.raises(CommandError, match="line 2, id: item id 'a' is also on line 1") as raised:
        run("import_dataset", "qa", str(path))
    assert raised.value.returncode == 2
    with pytest.raises(CommandError, match="cannot read"):
        run("import_dataset", "qa", str(tmp_path / "missing.jsonl"))
    assert nothing_stored()


def test_export_refuses_an_unknown_dataset_or_version(tmp_path):
    with pytest.raises(CommandError, match="no dataset 'nope'"):
        run("export_dataset", "nope")
    path = tmp_path / "items.jsonl"
    path.write_bytes(b'{"input": {}}\n')
    run("import_dataset", "qa", str(path))
    with pytest.raises(CommandError, match="has no version 3"):
        run("export_dataset", "qa", "--version", "3")
