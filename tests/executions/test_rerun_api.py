"""`POST /api/executions/{id}/rerun` and `POST /api/workflows/{id}/nodes/{node}/try`, their
roles and their errors; node runs run in this process."""
import pytest

from executions.models import Execution
from executions.services import execution_start
from tests.executions.conftest import drain
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def source(in_process):
    return drain(execution_start(workflow=Workflow.objects.get(workflow_id="thesis_reading"), input={}))


def test_an_author_reruns_from_a_node_and_the_source_lists_the_rerun(api, source):
    response = api.author.post(f"/api/executions/{source.execution_id}/rerun", {
        "from_node": "task_vault_001",
        "outputs": {"task_validator_001": {"validation_results": [{"atom_id": "x"}]}},
        "agent_versions": {"task_vault_001": "current"},
    })
    assert response.status_code == 201, response.json()
    record = response.json()
    assert record["rerun_of"] == source.execution_id and record["trial"] is False
    assert record["rerun"]["reused"] == ["task_scholar_001", "task_validator_001"]
    assert record["rerun"]["edited"] == ["task_validator_001"]
    copies = {run["node_id"]: run for run in api.viewer.record(record["execution_id"])["node_runs"]}
    originals = {run.node_id: run.pk for run in source.node_runs.all()}
    assert copies["task_scholar_001"]["kind"] == "reused"
    assert copies["task_scholar_001"]["reused_from"] == originals["task_scholar_001"]
    assert copies["task_validator_001"]["kind"] == "edited"

    listed = api.viewer.get(f"/api/executions/{source.execution_id}").json()
    assert listed["reruns"] == [record["execution_id"]] and listed["rerun_of"] is None


@pytest.mark.parametrize("body, status, code, where", [
    ({"from_node": "nope"}, 422, "INVALID_DOCUMENT", "from_node"),
    ({"from_node": "task_vault_001", "outputs": {"task_validator_001": {"wrong": 1}}}, 422, "INVALID_DOCUMENT",
     "outputs.task_validator_001.validation_results"),
    ({"from_node": "task_vault_001", "agent_versions": {"task_vault_001": "0.0.0-none"}}, 422, "INVALID_DOCUMENT",
     "agent_versions.task_vault_001"),
    ({"from_node": "task_vault_001", "step": 2}, 422, "INVALID_DOCUMENT", "step"),
    ({"from_node": "task_vault_001", "unknown": 1}, 422, None, None),
])
def test_a_bad_rerun_is_a_json_error_naming_where_and_starts_nothing(api, source, body, status, code, where):
    response = api.author.post(f"/api/executions/{source.execution_id}/rerun", body)
    assert response.status_code == status, response.json()
    if code:
        error = response.json()
        assert error["code"] == code and error["message"].startswith(f"{where}: ")
    assert Execution.objects.count() == 1


def test_a_long_unknown_version_is_quoted_by_its_start_only(api, source):
    long = "9" * 100_000
    rerun = api.author.post(f"/api/executions/{source.execution_id}/rerun",
                            {"from_node": "task_vault_001", "agent_versions": {"task_vault_001": long}})
    tried = api.author.post("/api/workflows/thesis_reading/nodes/task_vault_001/try",
                            {"execution": source.execution_id, "agent_version": long})
    for response in (rerun, tried):
        assert response.status_code == 422 and len(response.content) < 500, len(response.content)
        assert f"has no version '{'9' * 60}… (100000 characters)'" in response.json()["message"]
    assert Execution.objects.count() == 1


def test_rerunning_needs_an_author_and_a_run_that_has_ended(api, source):
    assert api.viewer.post(f"/api/executions/{source.execution_id}/rerun",
                           {"from_node": "task_vault_001"}).status_code == 403
    assert api.anonymous.post(f"/api/executions/{source.execution_id}/rerun",
                              {"from_node": "task_vault_001"}).status_code == 401
    assert api.author.post("/api/executions/exec_missing/rerun", {"from_node": "x"}).status_code == 404
    running = execution_start(workflow=source.workflow, input={})
    response = api.author.post(f"/api/executions/{running.execution_id}/rerun", {"from_node": "task_vault_001"})
    assert response.status_code == 409 and "is running" in response.json()["message"]


def test_an_author_tries_a_node_and_polls_the_trial_as_a_run(api, source):
    response = api.author.post("/api/workflows/thesis_reading/nodes/task_vault_001/try", {
        "execution": source.execution_id, "outputs": {"task_validator_001": {"validation_results": []}}})
    assert response.status_code == 201, response.json()
    trial = response.json()
    assert trial["trial"] is True and trial["rerun"]["from_node"] == "task_vault_001"
    drain(Execution.objects.get(execution_id=trial["execution_id"]))
    done = api.viewer.record(trial['execution_id'])
    tried = done["node_runs"][-1]
    assert done["status"] == "success" and tried["node_id"] == "task_vault_001" and tried["context_management"]
    assert trial["execution_id"] not in [e["execution_id"] for e in api.viewer.get("/api/executions").json()["items"]]

    assert api.viewer.post("/api/workflows/thesis_reading/nodes/task_vault_001/try").status_code == 403
    missing = api.author.post("/api/workflows/thesis_reading/nodes/nope/try")
    assert missing.status_code == 422 and missing.json()["message"].startswith("node_id: ")
    assert api.author.post("/api/workflows/nope/nodes/x/try").status_code == 404
