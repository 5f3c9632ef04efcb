"""A trial (one node tried alone from its plan) is not a run of its workflow: it is neither
listed among the workflow's runs nor counted as a run of its version, on any page or in the API."""
import pytest

from tests.pages.conftest import signed_in
from tests.pages.test_executions import make_execution
from workflows.models import Workflow

pytestmark = pytest.mark.django_db


@pytest.fixture
def a_run_and_a_trial(demo):
    version = Workflow.objects.get(workflow_id="thesis_reading").versions.get()
    make_execution("thesis_reading", [], execution_id="exec_real", workflow_version=version)
    make_execution("thesis_reading", [], execution_id="exec_tried_alone", workflow_version=version, trial=True)


def test_it_counts_only_the_run_among_the_versions_runs(api, a_run_and_a_trial):
    listed = api.viewer.get("/api/workflows/thesis_reading/versions").json()["items"]
    assert [(version["number"], version["runs"]) for version in listed] == [(1, 1)]
    assert api.viewer.get("/api/workflows/thesis_reading/versions/1").json()["runs"] == 1


def test_it_lists_only_the_run_among_the_workflows_recent_runs(api, a_run_and_a_trial):
    page = signed_in(api.viewer.user).get("/workflows/thesis_reading/")
    assert [run["execution_id"] for run in page.context["recent_runs"]] == ["exec_real"]
    assert [version.runs for version in page.context["versions"]] == [1]


def test_it_counts_only_the_run_on_the_list_of_workflows(api, a_run_and_a_trial):
    page = signed_in(api.viewer.user).get("/workflows/")
    counts = {workflow.workflow_id: workflow.execution_count for workflow in page.context["page"]}
    assert counts["thesis_reading"] == 1
