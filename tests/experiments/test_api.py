"""The /api/datasets operations: reads for every signed-in user, writes for authors, refusals
as {code, message, details} with where."""
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.experiments.conftest import nothing_stored

pytestmark = pytest.mark.django_db

JSONL = b'{"id": "a", "input": {"q": "one"}, "expected": 1}\n{"id": "b", "input": {"q": "two"}}\n'


def upload(client, name, data, filename="items.jsonl", **fields):
    return client.client.post(f"/api/datasets/{name}/import",
                              {"file": SimpleUploadedFile(filename, data), **fields})


def test_an_author_imports_a_file_and_everyone_reads_it(api):
    response = upload(api.author, "qa", JSONL, note="first")
    assert response.status_code == 201, response.content
    assert response.json() == {"dataset": "qa", "version": 1, "items": 2}
    listed = api.viewer.get("/api/datasets").json()
    assert [(d["name"], d["latest_version"], d["item_count"]) for d in listed["items"]] == [("qa", 1, 2)]
    assert api.viewer.get("/api/datasets/qa").json()["created_by"] == "author-user"
    versions = api.viewer.get("/api/datasets/qa/versions").json()["items"]
    assert [(v["number"], v["change"], v["note"]) for v in versions] == [(1, "import", "first")]
    items = api.viewer.get("/api/datasets/qa/items").json()
    assert items["count"] == 2
    assert items["items"] == [{"id": "a", "input": {"q": "one"}, "expected": 1}, {"id": "b", "input": {"q": "two"}}]
    assert api.viewer.get("/api/datasets/qa/items", q="TWO").json()["items"][0]["id"] == "b"


def test_it_imports_csv_with_a_mapping_and_appends(api):
    assert upload(api.author, "qa", b"key,question\nk1,why\n", "a.csv", column=["key=id"]).status_code == 201
    response = upload(api.author, "qa", b"key,question\nk2,how\n", "a.csv", column=["key=id"], append="true")
    assert response.json() == {"dataset": "qa", "version": 2, "items": 2}
    export = api.viewer.get("/api/datasets/qa/export", format="csv")
    assert export.status_code == 200
    assert export["Content-Type"].startswith("text/csv")
    assert export.content.decode() == "key,question\nk1,why\nk2,how\n"


def test_it_refuses_a_bad_file_with_its_line_and_stores_nothing(api):
    response = upload(api.author, "qa", b'{"id": "a", "input": {}}\n{"id": "a", "input": {}}\n')
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "INVALID_DOCUMENT"
    assert body["details"]["where"] == "line 2, id"
    assert "also on line 1" in body["message"]
    response = upload(api.author, "qa", b"id,q\na,1\n", "a.csv", column=["question=input.q"])
    assert response.status_code == 422
    assert response.json()["details"]["where"] == "line 1, column 'question'"
    assert nothing_stored()


def test_it_refuses_a_file_over_the_limit_with_413(api, settings):
    settings.DATASET_MAX_BYTES = 10
    response = upload(api.author, "qa", JSONL)
    assert response.status_code == 413
    assert response.json()["code"] == "PAYLOAD_TOO_LARGE"
    assert response.json()["details"]["limit_bytes"] == 10
    assert nothing_stored()


def test_a_viewer_may_not_change_a_dataset(api, finished_run):
    assert upload(api.viewer, "qa", JSONL).status_code == 403
    assert nothing_stored()
    upload(api.author, "qa", JSONL)
    assert api.viewer.post("/api/datasets/qa/items/from-run", {"execution_id": "run_1"}).status_code == 403
    assert api.viewer.delete("/api/datasets/qa/items/a").status_code == 403
    assert api.anonymous.get("/api/datasets").status_code == 401


def test_an_author_adds_a_run_and_removes_an_item(api, finished_run):
    upload(api.author, "qa", JSONL)
    response = api.author.post("/api/datasets/qa/items/from-run",
                               {"execution_id": "run_1", "use_output_as_expected": True})
    assert response.status_code == 201, response.content
    assert response.json() == {"dataset": "qa", "version": 2, "items": 3}
    added = api.viewer.get("/api/datasets/qa/items", q="run_1").json()["items"][0]
    assert added["id"] == "run_1" and added["expected"]["state"] == {"verdict": "ok"}
    assert api.author.post("/api/datasets/qa/items/from-run", {"execution_id": "run_1"}).status_code == 409
    assert api.author.post("/api/datasets/qa/items/from-run", {"execution_id": "nope"}).status_code == 404
    response = api.author.delete("/api/datasets/qa/items/a")
    assert response.json() == {"dataset": "qa", "version": 3, "items": 2}
    assert api.author.delete("/api/datasets/qa/items/a").status_code == 404
    assert api.viewer.get("/api/datasets/qa/items", version=1).json()["count"] == 2
    upload(api.author, "qa", b'{"id": "with/slash", "input": {}}\n', append="true")
    assert api.author.delete("/api/datasets/qa/items/with/slash").json()["version"] == 5


def test_it_answers_404_for_what_does_not_exist(api):
    assert api.viewer.get("/api/datasets/nope").status_code == 404
    upload(api.author, "qa", JSONL)
    response = api.viewer.get("/api/datasets/qa/items", version=7)
    assert response.status_code == 404
    assert "its versions are 1 to 1" in response.json()["message"]
    assert api.viewer.get("/api/datasets/qa/export", version=7).status_code == 404


def test_it_exports_json_and_jsonl(api):
    upload(api.author, "qa", JSONL)
    jsonl = api.viewer.get("/api/datasets/qa/export").content
    assert [json.loads(line) for line in jsonl.decode().splitlines()] == [
        json.loads(line) for line in JSONL.decode().splitlines()]
    response = api.viewer.client.get("/api/datasets/qa/export", {"format": "json", "version": 1})
    assert response["Content-Disposition"] == 'attachment; filename="qa-v1.json"'
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert [item["id"] for item in json.loads(b"".join(response.streaming_content))] == ["a", "b"]
