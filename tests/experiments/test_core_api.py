"""The experiments router: create and start (authors), list, one with progress and aggregates,
items paged and filtered, cancel (authors); viewers read."""
from __future__ import annotations

from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from experiments.models import Experiment, ExperimentItem
from tests.executions.conftest import in_process  # noqa: F401 - fixture
from tests.experiments.core_support import load, run_in_process

pytestmark = pytest.mark.django_db(transaction=True)

BODY = {"workflow_id": "echo", "dataset": "capitals", "concurrency": 2,
        "scorers": [{"type": "contains", "path": "$.nodes.say.response"}]}


@pytest.fixture
def loaded(in_process, api):  # noqa: F811 - the fixture imported above
    with mock.patch("experiments.tasks.run_ended.apply_async"):
        load()
        yield api


def test_an_author_creates_and_a_viewer_follows_it_to_its_aggregates(loaded):
    api = loaded
    assert api.viewer.post("/api/experiments", BODY).status_code == 403
    assert api.anonymous.get("/api/experiments").status_code == 401
    assert not Experiment.objects.exists()
    response = api.author.post("/api/experiments", BODY)
    assert response.status_code == 201, response.json()
    created = response.json()
    assert created["status"] == "running" and created["progress"]["counts"]["running"] == 2
    assert created["progress"]["total"] == 4 and created["created_by"] == "author-user"
    experiment_id = created["experiment_id"]
    listed = api.viewer.get("/api/experiments").json()
    assert listed["count"] == 1 and listed["items"][0]["experiment_id"] == experiment_id
    run_in_process(Experiment.objects.get(experiment_id=experiment_id))
    one = api.viewer.get(f"/api/experiments/{experiment_id}").json()
    assert one["status"] == "success" and one["progress"]["ended"] == 4 and one["progress"]["estimate_seconds"] == 0
    assert one["summary"]["aggregates"]["scorers"]["contains"]["summary"]["count"] == 3
    items = api.viewer.get(f"/api/experiments/{experiment_id}/items?limit=2").json()
    assert items["count"] == 4 and [item["item_id"] for item in items["items"]] == ["q1", "q2"]
    assert items["items"][0]["scores"]["contains"]["score"] == 1.0 and items["items"][0]["execution_id"]
    succeeded = api.viewer.get(f"/api/experiments/{experiment_id}/items?status=success").json()
    assert succeeded["count"] == 4
    bad = api.viewer.get(f"/api/experiments/{experiment_id}/items?status=bogus")
    assert bad.status_code == 422 and bad.json()["message"].startswith("status:")


def test_a_refusal_names_its_field_and_stores_nothing(loaded):
    response = loaded.author.post("/api/experiments", {**BODY, "agent_overrides": {"say": {"runtime": {"backend": "x"}}}})
    assert response.status_code == 422, response.json()
    assert "agent_overrides.say.runtime.backend" in response.json()["message"]
    assert not Experiment.objects.exists() and not ExperimentItem.objects.exists()
    assert loaded.viewer.get("/api/experiments/exp_nope").status_code == 404


def test_cancel_is_for_authors(loaded):
    experiment_id = loaded.author.post("/api/experiments", BODY).json()["experiment_id"]
    assert loaded.viewer.post(f"/api/experiments/{experiment_id}/cancel").status_code == 403
    response = loaded.author.post(f"/api/experiments/{experiment_id}/cancel")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert response.json()["cancelled_by"] == "author-user"
    assert loaded.author.post(f"/api/experiments/{experiment_id}/cancel").status_code == 409


def test_progress_is_a_few_queries_whatever_the_number_of_items(loaded):
    experiment_id = loaded.author.post("/api/experiments", BODY).json()["experiment_id"]
    with CaptureQueriesContext(connection) as queries:
        assert loaded.viewer.get(f"/api/experiments/{experiment_id}").status_code == 200
    grouped = [q["sql"] for q in queries.captured_queries if "experimentitem" in q["sql"].lower()]
    assert len(grouped) == 1 and "GROUP BY" in grouped[0], grouped


def test_ten_thousand_items_are_created_and_read_in_a_few_queries(loaded):
    """How long it takes is benchmark_experiments' to measure; a test counts the queries."""
    import json

    from experiments.dataset_services import dataset_import

    items = "\n".join(json.dumps({"id": f"i{n}", "input": {"question": f"q {n}"}, "expected": "q"})
                      for n in range(10_000))
    dataset_import(name="large", data=items.encode(), fmt="jsonl")
    response = loaded.author.post("/api/experiments", {**BODY, "dataset": "large"})
    assert response.status_code == 201 and response.json()["progress"]["total"] == 10_000
    experiment_id = response.json()["experiment_id"]
    for path in (f"/api/experiments/{experiment_id}", f"/api/experiments/{experiment_id}/items?offset=9950&limit=50",
                 f"/api/experiments/{experiment_id}/items?status=pending&limit=50"):
        with CaptureQueriesContext(connection) as queries:
            assert loaded.viewer.get(path).status_code == 200
        assert len(queries.captured_queries) <= 8, (path, len(queries.captured_queries))
    page = loaded.viewer.get(f"/api/experiments/{experiment_id}/items?offset=9950&limit=50").json()
    assert page["count"] == 10_000 and page["items"][-1]["item_id"] == "i9999"
