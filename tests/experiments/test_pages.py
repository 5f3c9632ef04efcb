"""The dataset pages through Django's client: list, a dataset with its versions and items
(searched, paged), export, the upload form (a bad file shows its line and stores nothing),
adding a run from its page, and what viewers may not do."""
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from experiments.dataset_services import dataset_import
from experiments.models import Dataset
from tests.experiments.conftest import nothing_stored

pytestmark = pytest.mark.django_db


def many_items(count: int) -> bytes:
    return b"".join(b'{"id": "item%03d", "input": {"text": "<b>n%d</b>"}}\n' % (n, n) for n in range(count))


def test_every_page_needs_a_signed_in_user(finished_run):
    dataset_import(name="qa", data=many_items(1), fmt="jsonl")
    for path in ("/datasets/", "/datasets/qa/", "/datasets/upload/", "/datasets/add-run/run_1/",
                 "/datasets/qa/export/"):
        response = Client().get(path)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), path


def test_the_list_shows_each_dataset_with_its_latest_version(viewer):
    dataset_import(name="qa", data=many_items(3), fmt="jsonl")
    dataset_import(name="qa", data=many_items(2), fmt="jsonl")
    page = viewer.get("/datasets/").content.decode()
    assert 'data-dataset="qa"' in page and "<td>2</td><td>2</td>" in page
    assert 'id="upload-dataset"' not in page  # viewers import nothing


def test_a_dataset_page_pages_and_searches_its_items_escaped(viewer):
    dataset_import(name="qa", data=many_items(120), fmt="jsonl")
    page = viewer.get("/datasets/qa/").content.decode()
    assert page.count('data-item="') == 50
    assert "&lt;b&gt;n0&lt;/b&gt;" in page and "<b>n0</b>" not in page
    assert "page 1 of 3" in page
    third = viewer.get("/datasets/qa/", {"page": 3}).content.decode()
    assert third.count('data-item="') == 20 and 'data-item="item119"' in third
    found = viewer.get("/datasets/qa/", {"q": "N11"}).content.decode()
    assert found.count('data-item="') == 11  # n11, n110 … n119
    assert "Remove" not in found


def test_a_dataset_page_shows_an_older_version_and_its_items(viewer):
    dataset_import(name="qa", data=many_items(3), fmt="jsonl")
    dataset_import(name="qa", data=many_items(1), fmt="jsonl")
    page = viewer.get("/datasets/qa/", {"version": 1}).content.decode()
    assert page.count('data-item="') == 3 and "the latest is" in page
    assert viewer.get("/datasets/qa/", {"version": 9}).status_code == 404
    assert viewer.get("/datasets/nope/").status_code == 404


def test_export_downloads_a_version(viewer):
    dataset_import(name="qa", data=b"id,question\na,why\n", fmt="csv")
    response = viewer.get("/datasets/qa/export/", {"format": "csv", "version": 1})
    assert response["Content-Disposition"] == 'attachment; filename="qa-v1.csv"'
    assert b"".join(response.streaming_content) == b"id,question\na,why\n"
    assert viewer.get("/datasets/qa/export/", {"format": "xml"}).status_code == 400


def test_an_author_uploads_a_file(author):
    page = author.get("/datasets/upload/").content.decode()
    assert 'enctype="multipart/form-data"' in page and "csrfmiddlewaretoken" in page
    response = author.post("/datasets/upload/", {"name": "qa", "file": SimpleUploadedFile("a.csv", b"key,q\nk1,why\n"),
                                                 "columns": "key=id", "note": "from a sheet"})
    assert response.status_code == 302 and response["Location"] == "/datasets/qa/"
    version = Dataset.objects.get(name="qa").versions.get()
    assert (version.note, version.item_count, version.created_by) == ("from a sheet", 1, "author-person")


def test_an_upload_of_a_bad_file_shows_the_line_and_stores_nothing(author):
    response = author.post("/datasets/upload/", {
        "name": "qa", "file": SimpleUploadedFile("a.jsonl", b'{"input": {}}\n{"input": {"x": NaN}}\n')})
    assert response.status_code == 200
    assert "line 2: NaN is not a JSON number" in response.content.decode()
    response = author.post("/datasets/upload/", {"name": "upload", "file": SimpleUploadedFile("a.jsonl", many_items(1))})
    assert "taken by a page" in response.content.decode()
    assert nothing_stored()


def test_an_upload_over_the_limit_is_refused_saying_the_limit(author, settings):
    settings.DATASET_MAX_BYTES = 30
    response = author.post("/datasets/upload/", {"name": "qa", "file": SimpleUploadedFile("a.jsonl", many_items(3))})
    assert "the limit is 30 bytes (DATASET_MAX_BYTES)" in response.content.decode()
    assert nothing_stored()


def test_an_author_removes_an_item_as_a_new_version(author, viewer):
    dataset_import(name="qa", data=many_items(3), fmt="jsonl")
    assert viewer.post("/datasets/qa/items/item001/remove/").status_code == 403
    assert author.get("/datasets/qa/items/item001/remove/").status_code == 405
    response = author.post("/datasets/qa/items/item001/remove/")
    assert response.status_code == 302
    latest = Dataset.objects.get(name="qa").versions.order_by("-number").first()
    assert (latest.number, latest.item_count) == (2, 2)


def test_the_run_page_links_authors_to_add_the_run(author, viewer, finished_run):
    assert 'id="add-to-dataset"' in author.get("/executions/run_1/").content.decode()
    assert 'id="add-to-dataset"' not in viewer.get("/executions/run_1/").content.decode()


def test_an_author_adds_a_run_to_a_new_dataset_with_its_output(author, finished_run):
    page = author.get("/datasets/add-run/run_1/").content.decode()
    assert 'value="run_1"' in page and "csrfmiddlewaretoken" in page
    response = author.post("/datasets/add-run/run_1/", {"dataset": "from-runs", "item_id": "case-1", "use_output": "on"})
    assert response.status_code == 302 and response["Location"] == "/datasets/from-runs/"
    item = Dataset.objects.get(name="from-runs").versions.get().items.get()
    assert (item.item_id, item.input, item.has_expected) == ("case-1", finished_run.input, True)
    again = author.post("/datasets/add-run/run_1/", {"dataset": "from-runs", "item_id": "case-1"})
    assert again.status_code == 200 and "has an item" in again.content.decode()


def test_a_viewer_may_not_upload_or_add_a_run(viewer, finished_run):
    assert viewer.get("/datasets/upload/").status_code == 403
    assert viewer.post("/datasets/upload/", {"name": "qa", "file": SimpleUploadedFile("a.jsonl", many_items(1))}
                       ).status_code == 403
    assert viewer.post("/datasets/add-run/run_1/", {"dataset": "qa", "item_id": "x"}).status_code == 403
    assert viewer.get("/datasets/add-run/nope/").status_code == 404
    assert nothing_stored()
