"""The rules the sweep applies: global days, failed runs kept longer, a successful run's
details removed (its page and API still show its summary and cost), a workflow's own rule."""
from __future__ import annotations

import pytest

from core.models import AuditEntry
from executions.models import NodeRun
from retention.models import RetainedSummary, WorkflowRetention
from retention.sweep import retention_sweep
from tests.pages.conftest import signed_in
from tests.retention.conftest import make_run, stored

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _demo(demo):
    pass


def test_nothing_goes_by_default(settings):
    old = make_run(days=10_000)
    assert retention_sweep()["batches"] == 0 and stored(old) == [True]


def test_failed_runs_are_kept_longer_than_the_others(settings):
    settings.RETENTION_DAYS, settings.RETENTION_FAILED_DAYS = 30, 90
    success, cancelled, failed, failed_older = (make_run(days=40), make_run("cancelled", days=40),
                                                make_run("failed", days=40), make_run("failed", days=100))
    young = make_run(days=20)
    report = retention_sweep()
    assert stored(success, cancelled, failed, failed_older, young) == [False, False, True, False, True]
    assert report["runs"] == {"success": 1, "cancelled": 1, "failed": 1}
    assert {entry.via for entry in AuditEntry.objects.filter(action="retention.delete")} == {"system"}


def test_a_successful_runs_details_go_and_its_summary_and_cost_stay_on_its_page_and_api(settings, api):
    settings.RETENTION_SUCCESS_DETAIL_DAYS = 7
    run, failed, young = make_run(days=10, node_runs=4), make_run("failed", days=10), make_run(days=2)
    child = make_run(parent=run.node_runs.first(), node_runs=2)
    report = retention_sweep()
    assert report["details_removed"] == {"success": 1} and report["node_runs"] == 4 + 2
    assert stored(run, child) == [True, False] and not NodeRun.objects.filter(execution=run).exists()
    assert NodeRun.objects.filter(execution__in=[failed, young]).count() == 6
    kept = RetainedSummary.objects.get(execution=run)
    assert kept.complete and kept.summary["node_runs"] == {"success": 4} and kept.summary["tokens_in"] == 4000
    assert AuditEntry.objects.filter(action="retention.details").exists()

    record = api.viewer.get(f"/api/executions/{run.execution_id}").json()
    assert record["status"] == "success" and record["cost"] == "0.000020000000"
    removed = record["details_removed"]
    assert removed["total"] == 4 and removed["tokens_out"] == 400 and "removed by retention" in removed["message"]
    assert api.viewer.get(f"/api/executions/{young.execution_id}").json()["details_removed"] is None

    page = signed_in(api.viewer.user).get(f"/executions/{run.execution_id}/").content.decode()
    assert "Details removed by retention" in page and "0.00002" in page and 'id="graph"' not in page
    assert "(removed by retention)" in page
    again = retention_sweep()  # nothing left to do for it
    assert again["batches"] == 0


def test_a_workflows_own_rule_replaces_the_global_one_and_only_authors_set_it(settings, api):
    settings.RETENTION_DAYS = 365
    mine, other = make_run(days=40), make_run(days=40, workflow="release_review")
    url = "/api/workflows/parallel_analysis/retention"
    assert api.viewer.put(url, {"days": 30}).status_code == 403
    assert api.author.put(url, {"days": 100_000}).status_code == 422
    answer = api.author.put(url, {"days": 30, "success_detail_days": 7})
    assert answer.status_code == 200, answer.content
    assert answer.json()["effective"] == {"days": 30, "failed_days": 0, "success_detail_days": 7}
    assert api.viewer.get(url).json()["days"] == 30
    entry = AuditEntry.objects.get(action="retention.rule")
    assert entry.actor_name == "author-user" and entry.before is None and entry.after["days"] == 30
    retention_sweep()
    assert stored(mine, other) == [False, True]
    # All null: the workflow's runs get the global rule again.
    assert api.author.put(url, {}).json()["effective"]["days"] == 365
    assert not WorkflowRetention.objects.exists()
