"""`POST /api/executions/bulk`: many runs cancelled, retried or re-run at once, each as it
would be alone (its refusal its own, with why), by the ids named or a filter, bounded, for
authors only, and every run steered recorded in the audit trail with the operation itself."""
import pytest

from core.models import AuditEntry
from executions.models import Execution
from executions.services import execution_cancel
from tests.executions.test_api import demo, escalate, start  # noqa: F401 - demo: the module's autouse fixture

pytestmark = pytest.mark.django_db


def status(execution) -> str:
    execution.refresh_from_db()
    return execution.status


def bulk(client, **body):
    return client.post("/api/executions/bulk", body)


def test_it_cancels_the_runs_named_and_says_which_it_refused_and_why(api):
    first, second, ended = start(), start(), start()
    execution_cancel(execution=ended)
    ids = [first.execution_id, second.execution_id, ended.execution_id, "exec_missing", first.execution_id]
    response = bulk(api.author, action="cancel", execution_ids=ids)
    assert response.status_code == 200, response.content
    answer = response.json()
    assert (answer["action"], answer["asked"], answer["done"], answer["refused"]) == ("cancel", 4, 2, 2)
    outcomes = {result["execution_id"]: result for result in answer["results"]}
    assert [result["execution_id"] for result in answer["results"]] == ids[:4]  # each once, in the order asked
    assert outcomes[first.execution_id]["outcome"] == outcomes[second.execution_id]["outcome"] == "done"
    assert (outcomes[ended.execution_id]["outcome"], outcomes[ended.execution_id]["code"]) == (
        "refused", "ILLEGAL_TRANSITION")
    assert "has ended (cancelled)" in outcomes[ended.execution_id]["message"]
    assert (outcomes["exec_missing"]["code"], outcomes["exec_missing"]["message"]) == (
        "NOT_FOUND", "execution 'exec_missing' does not exist")
    assert status(first) == status(second) == "cancelled"
    assert first.node_runs.filter(status="cancelled", error_details={"cancelled_by": "author-user"}).count() == 3

    cancels = AuditEntry.objects.filter(action="execution.cancel", actor_name="author-user", via="api_token")
    assert sorted(cancels.values_list("object_id", flat=True)) == sorted([first.execution_id, second.execution_id])
    (operation,) = AuditEntry.objects.filter(action="execution.bulk")
    assert (operation.object_id, operation.actor_name) == ("bulk cancel", "author-user")
    assert operation.after == {"action": "cancel", "asked": 4, "done": [first.execution_id, second.execution_id],
                               "refused": [{"execution_id": ended.execution_id, "code": "ILLEGAL_TRANSITION"},
                                           {"execution_id": "exec_missing", "code": "NOT_FOUND"}]}


def test_it_cancels_every_run_its_filter_matches_and_no_other(api):
    running = [start(), start()]
    other = start("release_review", topic="v2")
    response = bulk(api.author, action="cancel", filter={"workflow": "parallel_analysis", "status": "running"})
    assert response.status_code == 200, response.content
    assert (response.json()["asked"], response.json()["done"]) == (2, 2)
    assert [status(run) for run in running] == ["cancelled", "cancelled"] and status(other) == "running"


def test_it_retries_escalated_runs_and_re_runs_ended_ones_refusing_the_others(api):
    escalated, running = escalate(start("release_review", topic="v2"), "draft"), start("release_review", topic="v3")
    response = bulk(api.author, action="retry", execution_ids=[escalated.execution_id, running.execution_id])
    answer = response.json()
    assert (answer["done"], answer["refused"]) == (1, 1), answer
    assert answer["results"][1]["message"] == f"execution {running.execution_id} is running, not escalated"
    assert status(escalated) == "running" and escalated.node_runs.filter(status="pending", node_id="draft").exists()
    assert list(AuditEntry.objects.filter(action="execution.retry").values_list("object_id", flat=True)) == [
        escalated.execution_id]

    execution_cancel(execution=escalated)
    response = bulk(api.author, action="rerun", execution_ids=[escalated.execution_id, running.execution_id])
    answer = response.json()
    assert (answer["done"], answer["refused"]) == (1, 1), answer
    rerun = Execution.objects.get(execution_id=answer["results"][0]["started"])
    assert rerun.rerun_of == escalated and rerun.rerun["from_node"] == "draft" and rerun.rerun["step"] == 1
    assert answer["results"][1]["code"] == "CONFLICT"
    entry = AuditEntry.objects.get(action="execution.rerun")
    assert (entry.object_id, entry.after["rerun"]) == (escalated.execution_id, rerun.execution_id)


def test_it_refuses_more_than_its_limit_naming_it_and_does_nothing(api, monkeypatch):
    runs = [start(), start(), start()]
    too_many = bulk(api.author, action="cancel", execution_ids=[f"exec_{n}" for n in range(1001)])
    assert too_many.status_code == 422
    assert "at most 1000" in too_many.json()["message"]
    monkeypatch.setattr("executions.api.BULK_MAX", 2)
    matching = bulk(api.author, action="cancel", filter={"status": "running"})
    assert matching.status_code == 422
    assert "the filter matches 3 runs: a bulk operation steers at most 2" in matching.json()["message"]
    assert [status(run) for run in runs] == ["running"] * 3
    assert not AuditEntry.objects.filter(action__startswith="execution.").exists()


def test_it_wants_the_runs_or_a_filter_and_a_known_action(api):
    run = start()
    assert bulk(api.author, action="cancel").status_code == 422
    assert bulk(api.author, action="cancel", execution_ids=[run.execution_id], filter={}).status_code == 422
    assert bulk(api.author, action="abort", execution_ids=[run.execution_id]).status_code == 422
    assert bulk(api.author, action="cancel", execution_ids=[]).status_code == 422
    assert status(run) == "running"


def test_it_lets_no_viewer_or_anonymous_caller_steer_runs(api):
    run = start()
    for action in ("cancel", "retry", "rerun"):
        assert bulk(api.viewer, action=action, execution_ids=[run.execution_id]).status_code == 403
        assert bulk(api.anonymous, action=action, execution_ids=[run.execution_id]).status_code == 401
    assert status(run) == "running"
    assert not AuditEntry.objects.filter(action__startswith="execution.").exists()  # (the users made are on it)
