"""A run whose details retention removed, after the fact: the runs list shows its stored
counts, every operation that needs its node runs refuses it (409 DETAILS_REMOVED), the
agents' costs stay as they were; and a re-run arriving between retention's check and its
deletion keeps the run whole (the steps called in order, not raced)."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from core.errors import DetailsRemoved
from core.models import AuditEntry
from executions.models import Execution, NodeRun
from executions.services import execution_rerun
from retention.models import RetainedSummary, RunDeletion
from retention.policy import DELETE, DETAILS
from retention.purge import Purge
from retention.references import References
from retention.sweep import retention_sweep
from tests.pages.conftest import signed_in
from tests.retention.conftest import _agent, make_run, stored

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _demo(demo):
    pass


@pytest.fixture
def stripped(settings):
    """A successful run of 4 node runs whose details the sweep removed, and a young one."""
    settings.RETENTION_SUCCESS_DETAIL_DAYS = 7
    run, young = make_run(days=10, node_runs=4), make_run(days=2, node_runs=2)
    assert retention_sweep()["details_removed"] == {"success": 1}
    return run, young


def test_the_runs_list_shows_the_stored_counts_of_a_run_whose_details_were_removed(stripped, api):
    run, young = stripped
    items = {item["execution_id"]: item for item in api.viewer.get("/api/executions").json()["items"]}
    assert items[run.execution_id]["node_runs"]["success"] == 4 and items[run.execution_id]["details_removed"]
    assert items[young.execution_id]["node_runs"]["success"] == 2 and not items[young.execution_id]["details_removed"]

    page = signed_in(api.viewer.user).get("/executions/").content.decode()
    row = page[page.index(f'data-execution-id="{run.execution_id}"'):]
    row = row[:row.index("</tr>")]
    assert '<span class="run-total">4</span>' in row and "details removed" in row
    young_row = page[page.index(f'data-execution-id="{young.execution_id}"'):]
    assert "details removed" not in young_row[:young_row.index("</tr>")]


def test_a_rerun_a_comparison_and_a_trial_of_it_are_refused_naming_the_run_and_when(stripped, api):
    run, young = stripped
    answer = api.author.post(f"/api/executions/{run.execution_id}/rerun", {"from_node": "task_a"})
    assert answer.status_code == 409, answer.content
    refusal = answer.json()
    assert refusal["code"] == "DETAILS_REMOVED" and refusal["details"]["execution_id"] == run.execution_id
    assert run.execution_id in refusal["message"] and "removed by retention" in refusal["message"]
    assert refusal["details"]["removed_at"][:10] == RetainedSummary.objects.get(execution=run).removed_at.date().isoformat()

    compared = api.viewer.get(f"/api/executions/compare?a={young.execution_id}&b={run.execution_id}")
    assert compared.status_code == 409 and compared.json()["code"] == "DETAILS_REMOVED"
    tried = api.author.post("/api/workflows/parallel_analysis/nodes/task_a/try", {"execution": run.execution_id})
    assert tried.status_code == 409 and tried.json()["code"] == "DETAILS_REMOVED"
    assert not Execution.objects.filter(rerun_of=run).exists() and not Execution.objects.filter(trial=True).exists()

    added = api.author.post("/api/datasets/kept/items/from-run",
                            {"execution_id": run.execution_id, "use_output_as_expected": True})
    assert added.status_code == 409 and added.json()["code"] == "DETAILS_REMOVED"
    assert api.author.post("/api/datasets/kept/items/from-run", {"execution_id": run.execution_id}).status_code == 201

    page = signed_in(api.viewer.user).get(f"/executions/compare/?a={young.execution_id}&b={run.execution_id}")
    assert page.status_code == 409 and "removed by retention" in page.content.decode()

    with pytest.raises(CommandError, match="removed by retention") as refused:
        call_command("rerun_execution", run.execution_id, "--from-node", "task_a", stdout=StringIO())
    assert refused.value.returncode == 3
    with pytest.raises(CommandError, match="removed by retention") as refused:
        call_command("compare_executions", young.execution_id, run.execution_id, stdout=StringIO())
    assert refused.value.returncode == 2


def test_an_agents_costs_are_the_same_before_and_after_its_runs_details_are_removed(settings, api):
    from agents.models import Agent

    agent = Agent.objects.get(pk=_agent())
    old, young = make_run(days=10, node_runs=4), make_run(days=2, node_runs=2)
    url = f"/api/agents/{agent.agent_id}/costs"
    before = api.viewer.get(url).json()
    workflow_before = api.viewer.get("/api/workflows/parallel_analysis/costs").json()
    assert [row["execution_id"] for row in before] == [old.execution_id, young.execution_id]
    assert before[0]["cost"] == "0.000020000000" and before[0]["tokens_in"] == 4000

    settings.RETENTION_SUCCESS_DETAIL_DAYS = 7
    assert retention_sweep()["details_removed"] == {"success": 1}
    assert not NodeRun.objects.filter(execution=old).exists()
    assert api.viewer.get(url).json() == before
    assert api.viewer.get("/api/workflows/parallel_analysis/costs").json() == workflow_before


def test_a_rerun_made_between_the_check_and_the_deletion_keeps_the_run_whole(monkeypatch):
    source, other = make_run(node_runs=4), make_run(node_runs=4)
    checked = References.reasons

    def rerun_after_the_check(self, runs):
        reasons = checked(self, runs)  # the pass has found nothing that keeps the source
        make_run(rerun_of=source, days=1)  # … and now it is re-run (its copies point at its node runs)
        return reasons

    monkeypatch.setattr(References, "reasons", rerun_after_the_check)
    report = Purge(batch=3).run(DELETE, Execution.objects.filter(pk__in=[source.pk, other.pk]))
    assert stored(source, other) == [True, False]
    assert NodeRun.objects.filter(execution=source).count() == 4 and report.node_runs == 4
    assert not RunDeletion.objects.exists()
    audited = AuditEntry.objects.filter(action="retention.delete")
    assert sum(entry.after.get("node_runs_deleted", 0) for entry in audited) == 4


def test_a_rerun_made_between_the_check_and_the_removal_of_details_keeps_them(monkeypatch):
    source = make_run(node_runs=4)
    checked = References.reasons

    def rerun_after_the_check(self, runs):
        reasons = checked(self, runs)
        make_run(rerun_of=source, days=1)
        return reasons

    monkeypatch.setattr(References, "reasons", rerun_after_the_check)
    Purge(batch=3).run(DETAILS, Execution.objects.filter(pk=source.pk))
    assert NodeRun.objects.filter(execution=source).count() == 4
    assert not RetainedSummary.objects.filter(execution=source).exists()


def test_a_rerun_asked_once_the_deletion_has_begun_is_refused():
    source = make_run(node_runs=4)
    report = Purge(batch=3, max_batches=1).run(DELETE, Execution.objects.filter(pk=source.pk))
    assert report.stopped and NodeRun.objects.filter(execution=source).count() == 1
    assert RunDeletion.objects.filter(execution=source).exists()
    with pytest.raises(DetailsRemoved, match="being deleted by retention"):
        execution_rerun(source=source, from_node="task_a")
    assert not Execution.objects.filter(rerun_of=source).exists()
    Purge(batch=3).run(DELETE, Execution.objects.filter(pk=source.pk))  # the next pass goes on with it
    assert stored(source) == [False] and not RunDeletion.objects.exists()
