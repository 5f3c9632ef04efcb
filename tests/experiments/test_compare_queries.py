"""Two experiments of 10,000 items compared: the API's first page of rows with the summary,
and the page, each in a handful of queries (one for each experiment's items, one for the
outputs of the rows shown, none per item). How long they take is benchmark_experiments'
to measure, not a test's: a timed test fails on a busy machine."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.experiments.compare_support import dataset, experiment

pytestmark = pytest.mark.django_db

N = 10_000


def output(n: int, variant: str) -> dict:
    text = f"item {n}: the answer is {variant} " + "with some words of reasoning " * 8
    return {"state": {"answer": text}, "nodes": {"say": {"response": text}}}


@pytest.fixture
def large(db):
    version = dataset([{"id": f"item-{n:05d}", "expected": "x", "metadata": {"group": n % 7}} for n in range(N)])
    experiment("big_a", version, {f"item-{n:05d}": {"scores": {"exact": n % 2, "mentions": (n % 5) / 4},
                                                    "output": output(n, "a"), "cost": 1000 + n, "latency": 1.0}
                                  for n in range(N)}, age=5, runs=True)
    experiment("big_b", version, {f"item-{n:05d}": {"scores": {"exact": (n // 2) % 2, "mentions": (n % 3) / 2},
                                                    "output": output(n, "a" if n % 4 else "b"), "cost": 900 + n,
                                                    "latency": 2.0} for n in range(N)}, age=1, runs=True)


def counted(get, path: str, query: dict):
    with CaptureQueriesContext(connection) as queries:
        response = get(path, **query)
    return response, len(queries)


def test_two_experiments_of_10000_items_compare_in_a_few_queries(large, api):
    # A server's first request loads its URLs and builds the API's schemas: not counted here.
    assert api.viewer.get("/api/experiments/compare", ids="big_a").status_code == 422
    response, queries = counted(api.viewer.get, "/api/experiments/compare", {"ids": "big_a,big_b"})
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["counts"]["rows"] == N and len(body["rows"]) == 50 and body["rows"][0]["experiments"]["big_b"]["diff"]
    assert body["summary"]["big_b"]["exact"]["count"] == N
    assert queries <= 8, f"{queries} queries"  # the token and user, the experiments, 2 × items, 2 × outputs

    client = Client()
    client.force_login(api.viewer.user)
    response, queries = counted(lambda path, **q: client.get(path, q), "/experiments/compare/",
                                       {"ids": "big_a,big_b", "only": "regressed"})
    assert response.status_code == 200 and "data-item=\"item-00000\"" not in response.content.decode()
    assert queries <= 10, f"{queries} queries"  # the session and user, the experiments, 2 × items, 2 × outputs
