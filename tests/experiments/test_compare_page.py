"""The page /experiments/compare/: rows highlighted past the threshold, filters, links to
compare two runs, the CSV export, refusals shown on the page, sign-in, no inline code."""
from __future__ import annotations

import csv
import io
import re

import pytest
from django.test import Client

from tests.experiments.test_compare import pair  # noqa: F401 - fixture
from tests.pages.test_csp import POLICY, inline_code, policy_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(api):
    client = Client()
    client.force_login(api.viewer.user)
    return client


def rows_of(html: str) -> dict[str, str]:
    """Each row of the items table: item id → its class attribute."""
    return dict((item, cls) for cls, item in re.findall(r'<tr class="([^"]*)" data-item="([^"]+)"', html))


def test_the_page_highlights_rows_and_links_the_runs(pair, viewer):  # noqa: F811 - the fixture imported above
    response = viewer.get("/experiments/compare/", {"ids": "exp_b,exp_a"})
    assert response.status_code == 200
    html = response.content.decode()
    rows = rows_of(html)
    assert list(rows) == ["q1", "q2", "q3", "q4"]
    assert rows["q2"].strip() == "regressed" and rows["q3"].strip() == "improved" and rows["q1"].strip() == ""
    assert "/executions/compare/?a=exp_a_1&amp;b=exp_b_1" in html  # each row's two runs, node by node
    assert '<span class="baseline-tag">baseline</span>' in html and 'value="exp_a" selected' in html
    assert 'data-experiment="exp_b" data-scorer="exact"' in html and "no clear change" in html
    assert '<span class="diff-added">+Milan</span>' in html and '<span class="diff-removed">-Rome</span>' in html
    assert "Same output as the baseline." in html  # q1
    assert "$0.002000 · 1.50 s" in html  # q1 in the baseline: its cost in USD and its latency
    assert "TIMEOUT" in html and 'href="/experiments/compare/csv/?ids=exp_b%2Cexp_a"' in html
    assert policy_of(response) == POLICY and inline_code(html) == []


def test_filters_and_the_threshold_change_the_rows(pair, viewer):  # noqa: F811
    regressed = viewer.get("/experiments/compare/", {"ids": "exp_a,exp_b", "only": "regressed"}).content.decode()
    assert list(rows_of(regressed)) == ["q2"] and "Items 1–1 of 1 that match" in regressed
    below = viewer.get("/experiments/compare/", {"ids": "exp_a,exp_b", "scorer": "exact", "below": "0.5"})
    assert list(rows_of(below.content.decode())) == ["q2", "q3"]
    by_metadata = viewer.get("/experiments/compare/", {"ids": "exp_a,exp_b", "metadata": "topic=iberia"})
    assert list(rows_of(by_metadata.content.decode())) == ["q3"]
    failed = viewer.get("/experiments/compare/", {"ids": "exp_a,exp_b", "only": "failed"}).content.decode()
    assert list(rows_of(failed)) == ["q4"]
    calm = viewer.get("/experiments/compare/", {"ids": "exp_a,exp_b", "threshold": "1"}).content.decode()
    assert all(cls.strip() == "" for cls in rows_of(calm).values())
    swapped = viewer.get("/experiments/compare/", {"ids": "exp_a,exp_b", "baseline": "exp_b"}).content.decode()
    assert rows_of(swapped)["q2"].strip() == "improved" and 'value="exp_b" selected' in swapped


def test_the_csv_export_follows_the_filters(pair, viewer):  # noqa: F811
    response = viewer.get("/experiments/compare/csv/", {"ids": "exp_a,exp_b", "only": "improved"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    lines = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [line["item_id"] for line in lines] == ["q3"] and lines[0]["exp_b:output"] == "Lisbon"


@pytest.mark.parametrize(("query", "status", "words"), [
    ({}, 400, "Name two or more experiments"),
    ({"ids": "exp_a,exp_nope"}, 404, "no experiment &#x27;exp_nope&#x27;"),
    ({"ids": "exp_a"}, 422, "ids: name 2 or more experiments"),
    ({"ids": "exp_a,exp_b", "threshold": "lots"}, 422, "threshold: is a number"),
    ({"ids": "exp_a,exp_b", "scorer": "nope", "below": "0.2"}, 422, "scorer: &#x27;nope&#x27; is not a scorer"),
    ({"ids": "exp_a,exp_b", "only": "<b>"}, 422, "only: is one of regressed, improved, failed, not &#x27;&lt;b&gt;"),
])
def test_a_refusal_is_shown_on_the_page(pair, viewer, query, status, words):  # noqa: F811
    response = viewer.get("/experiments/compare/", query)
    assert response.status_code == status
    assert words in response.content.decode() and 'id="compare-problem"' in response.content.decode()


def test_it_needs_a_signed_in_user(pair):  # noqa: F811
    response = Client().get("/experiments/compare/", {"ids": "exp_a,exp_b"})
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert Client().get("/experiments/compare/csv/", {"ids": "exp_a,exp_b"}).status_code == 302


def test_the_experiments_list_and_an_experiments_page_lead_to_the_comparison(pair, viewer):  # noqa: F811
    listed = viewer.get("/experiments/").content.decode()
    assert '<form id="compare-form" method="get" action="/experiments/compare/">' in listed
    assert 'name="ids" value="exp_a" form="compare-form"' in listed and 'value="exp_b" form="compare-form"' in listed
    # The boxes ticked on the list arrive as ?ids=A&ids=B.
    ticked = viewer.get("/experiments/compare/?ids=exp_a&ids=exp_b").content.decode()
    assert list(rows_of(ticked)) == ["q1", "q2", "q3", "q4"] and 'value="exp_a" selected' in ticked

    page = viewer.get("/experiments/exp_a/").content.decode()
    assert '<form id="compare-with"' in page and '<input type="hidden" name="ids" value="exp_a">' in page
    assert '<option value="exp_b">' in page and '<option value="exp_a">' not in page


def test_the_page_says_what_each_experiment_changed(pair, viewer):  # noqa: F811
    from agents.models import AgentVersion
    from experiments.models import Experiment

    version = AgentVersion.objects.first()
    Experiment.objects.filter(experiment_id="exp_b").update(agent_versions={"say": version.pk},
                                                            agent_overrides={"say": {"runtime": {"model": "m"}}})
    html = viewer.get("/experiments/compare/", {"ids": "exp_a,exp_b"}).content.decode()
    assert f'<span class="mono">say</span> pinned to <span class="mono">{version}</span>' in html
    assert '<span class="mono">say</span> runs its own runtime' in html
