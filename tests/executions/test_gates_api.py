"""Gates through the API and the commands: the pending gates of a user, a decision, and
every refusal with its status (node runs run in this process)."""
import json

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from executions.models import Execution
from executions.services import execution_cancel, execution_start
from tests.executions.conftest import drain
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def demo(in_process):
    return in_process


def waiting_release():
    execution = drain(execution_start(workflow=Workflow.objects.get(workflow_id="release_review"),
                                      input={"topic": "Switchyard 2.1"}))
    assert execution.status == "waiting"
    return execution, execution.node_runs.get(node_id="approve")


def decision_url(execution, gate):
    return f"/api/executions/{execution.execution_id}/node-runs/{gate.pk}/decision"


def test_an_approver_lists_the_gate_waiting_for_them_and_approves_it(api):
    execution, gate = waiting_release()

    listed = api.approver.get("/api/gates")
    assert listed.status_code == 200, listed.json()
    (pending,) = listed.json()["items"]
    assert pending["execution_id"] == execution.execution_id and pending["node_id"] == "approve"
    assert pending["node_run_id"] == gate.pk and pending["prompt"] == "Publish these release notes?"
    assert pending["shown"]["draft"] == execution.state["draft"] and pending["on_timeout"] == "escalate"
    assert pending["url"] == f"/executions/{execution.execution_id}/?node=approve&run={gate.pk}#decide-{gate.pk}"
    assert api.author.get("/api/gates").json()["items"] == []  # authors are not this gate's deciders

    answer = api.approver.post(decision_url(execution, gate), {"decision": "approve", "comment": "ship it"})

    assert answer.status_code == 200, answer.json()
    record = answer.json()
    assert record["status"] == "success" and record["output"] == pending["shown"]
    assert record["gate"]["decision"] == "approve" and record["gate"]["decided_by"] == "approver-user"
    assert record["gate"]["comment"] == "ship it"
    assert api.approver.get("/api/gates").json()["items"] == []
    detail = api.viewer.record(execution.execution_id)
    assert detail["status"] == "running"  # publishing was sent to a worker
    assert [r["node_id"] for r in detail["node_runs"]][-1] == "publish"


def test_refusals_answer_with_their_status_and_change_nothing(api):
    execution, gate = waiting_release()
    url = decision_url(execution, gate)

    assert api.anonymous.post(url, {"decision": "approve"}).status_code == 401
    forbidden = api.author.post(url, {"decision": "approve"})
    assert forbidden.status_code == 403
    assert "decided by a user with the approver role; author-user may not decide it" in forbidden.json()["message"]
    unknown = api.approver.post(url, {"decision": "maybe"})
    assert unknown.status_code == 422 and unknown.json()["details"][0]["where"].endswith("decision")
    broken = api.approver.post(url, {"decision": "edit", "output": "\u0000"})
    assert broken.status_code == 422
    not_a_gate = execution.node_runs.filter(node_id="draft").first()
    assert api.approver.post(decision_url(execution, not_a_gate), {"decision": "approve"}).status_code == 422
    assert api.approver.post(f"/api/executions/{execution.execution_id}/node-runs/999999/decision",
                             {"decision": "approve"}).status_code == 404
    gate.refresh_from_db()
    assert gate.status == "waiting" and gate.gate["decision"] is None

    assert api.admin.post(url, {"decision": "reject", "comment": "not yet"}).status_code == 200
    second = api.approver.post(url, {"decision": "approve"})
    assert second.status_code == 409
    assert "already decided: reject by admin-user at" in second.json()["message"]


def test_an_edit_that_breaks_the_gates_schema_is_refused_naming_the_field_and_nothing_is_stored(api):
    execution, gate = waiting_release()

    refused = api.approver.post(decision_url(execution, gate), {"decision": "edit", "output": {"draft": 42}})

    assert refused.status_code == 422, refused.json()
    assert refused.json()["message"] == "output.draft: 42 is not of type 'string' (the gate's schema)"
    assert refused.json()["details"] == [{"where": "output.draft", "message": "42 is not of type 'string' (the gate's schema)"}]
    gate.refresh_from_db()
    assert gate.status == "waiting" and gate.gate["decision"] is None and gate.output is None
    assert Execution.objects.get(pk=execution.pk).state == execution.state


def test_it_refuses_a_comment_with_a_nul_character_and_the_gate_stays_open(api):
    execution, gate = waiting_release()

    answer = api.approver.post(decision_url(execution, gate), {"decision": "approve", "comment": "ship \x00 it"})

    assert answer.status_code == 422, answer.content
    assert answer.json()["message"] == "comment: contains a NUL character (\\u0000)"
    gate.refresh_from_db()
    assert gate.status == "waiting" and gate.gate["decision"] is None


def test_a_decision_on_a_cancelled_run_is_a_conflict(api):
    execution, gate = waiting_release()
    execution_cancel(execution=execution)

    answer = api.approver.post(decision_url(execution, gate), {"decision": "approve"})

    assert answer.status_code == 409 and "is cancelled" in answer.json()["message"]


def test_it_lists_the_waiting_gates_a_page_at_a_time_oldest_first(api, django_assert_max_num_queries):
    gates = [waiting_release()[1].pk for _ in range(3)]

    first = api.approver.get("/api/gates", limit=1).json()
    assert (first["count"], first["limit"], first["offset"]) == (3, 1, 0)
    assert [gate["node_run_id"] for gate in first["items"]] == gates[:1]
    rest = api.approver.get("/api/gates", limit=2, offset=1).json()
    assert [gate["node_run_id"] for gate in rest["items"]] == gates[1:]
    assert api.approver.get("/api/gates", limit=0).status_code == 422
    with django_assert_max_num_queries(6):  # the token (2), the deciders of every gate, one page of gates
        assert len(api.approver.get("/api/gates", limit=2).json()["items"]) == 2
    assert api.author.get("/api/gates").json() == {"items": [], "count": 0, "limit": 50, "offset": 0}


def test_only_admins_list_another_users_gates(api):
    waiting_release()

    assert api.viewer.get("/api/gates", user="approver-user").status_code == 403
    listed = api.admin.get("/api/gates", user="approver-user")
    assert listed.status_code == 200 and listed.json()["count"] == 1
    assert api.admin.get("/api/gates", user="nobody").status_code == 404
    assert api.admin.get("/api/gates", user="author-user").json()["count"] == 0


def test_the_commands_list_and_decide_a_gate(api, tmp_path, capsys):
    execution, gate = waiting_release()

    call_command("gates", "--user", "approver-user")
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["node_run_id"] == gate.pk

    with pytest.raises(CommandError, match="may not decide it") as refused:
        call_command("decide_gate", execution.execution_id, "approve", "approve", "--as", "author-user")
    assert refused.value.returncode == 3
    with pytest.raises(CommandError, match="has no gate 'publish'") as wrong:
        call_command("decide_gate", execution.execution_id, "publish", "approve", "--as", "approver-user")
    assert wrong.value.returncode == 2

    edited = tmp_path / "draft.json"
    edited.write_text(json.dumps({"draft": "Release notes, edited at the command line."}))
    call_command("decide_gate", execution.execution_id, "approve", "edit", "--as", "approver-user",
                 "--output", str(edited), "--comment", "tightened")
    assert capsys.readouterr().out.strip() == f"approve: edit by approver-user; run {execution.execution_id} is running"
    gate.refresh_from_db()
    assert gate.output == {"draft": "Release notes, edited at the command line."}
    assert gate.gate["comment"] == "tightened"
    assert Execution.objects.get(pk=execution.pk).state["draft"] == "Release notes, edited at the command line."
    assert User.objects.filter(username="approver-user").exists()


def test_a_rerun_that_edits_a_gates_output_is_refused_to_a_non_decider_and_names_the_decider_who_gave_it(api):
    execution, gate = waiting_release()
    assert api.approver.post(decision_url(execution, gate), {"decision": "approve"}).status_code == 200
    drain(execution)
    url = f"/api/executions/{execution.execution_id}/rerun"
    body = {"from_node": "publish", "outputs": {"approve": {"draft": "Release notes an author would rather ship."}}}

    refused = api.author.post(url, body)

    assert refused.status_code == 403, refused.json()
    assert refused.json()["message"] == (
        "gate 'approve' is decided by a user with the approver role; author-user may not give its output in a "
        "re-run: re-run from 'approve' to ask its deciders again")
    assert Execution.objects.count() == 1  # nothing was started

    answer = api.admin.post(url, body)  # an admin holds every role, the approver's too
    assert answer.status_code == 201, answer.json()
    rerun = answer.json()["execution_id"]
    drain(Execution.objects.get(execution_id=rerun))
    copy = next(run for run in api.viewer.record(rerun)["node_runs"] if run["node_id"] == "approve")
    assert copy["kind"] == "edited" and copy["reused_from"] == gate.pk
    assert (copy["gate"]["decision"], copy["gate"]["decided_by"], copy["gate"]["given"]) == (
        "edit", "admin-user", "rerun")


def test_resuming_past_a_gate_that_escalated_needs_one_of_its_deciders_and_names_them(api):
    from datetime import timedelta

    from executions.services import node_runs_sweep

    execution, gate = waiting_release()
    node_runs_sweep(now=gate.decide_by + timedelta(seconds=1))  # nobody decided: on_timeout escalate
    execution.refresh_from_db()
    assert execution.status == "escalated" and execution.escalation["node_id"] == "approve"
    url = f"/api/executions/{execution.execution_id}/resume"
    output = {"draft": "Release notes, given by an approver after the time-out."}

    refused = api.author.post(url, {"output": output})

    assert refused.status_code == 403, refused.json()
    assert refused.json()["message"] == (
        "gate 'approve' is decided by a user with the approver role; author-user may not resume the run past it: "
        "retry the node to ask its deciders again")
    execution.refresh_from_db()
    assert execution.status == "escalated"

    answer = api.admin.post(url, {"output": output})
    assert answer.status_code == 200, answer.json()
    resumed = [run for run in api.viewer.record(execution.execution_id)["node_runs"] if run["node_id"] == "approve"][-1]
    assert (resumed["kind"], resumed["status"], resumed["output"], resumed["worker"]) == (
        "manual", "success", output, "admin-user")
    assert (resumed["gate"]["decision"], resumed["gate"]["decided_by"], resumed["gate"]["given"]) == (
        "edit", "admin-user", "resume")


def test_the_rerun_command_gives_a_gates_output_only_as_one_of_its_deciders(api, tmp_path, capsys):
    execution, gate = waiting_release()
    call_command("decide_gate", execution.execution_id, "approve", "approve", "--as", "approver-user")
    drain(execution)
    capsys.readouterr()
    edited = tmp_path / "draft.json"
    edited.write_text(json.dumps({"draft": "Release notes, given at the command line."}))
    rerun = ["rerun_execution", execution.execution_id, "--from-node", "publish", "--output", f"approve={edited}"]

    for who in ([], ["--as", "author-user"]):
        with pytest.raises(CommandError, match="may not give its output in a re-run") as refused:
            call_command(*rerun, *who)
        assert refused.value.returncode == 3
    assert Execution.objects.count() == 1

    call_command(*rerun, "--as", "approver-user")
    made = Execution.objects.get(execution_id=capsys.readouterr().out.strip())
    copy = made.node_runs.get(node_id="approve")
    assert (copy.kind, copy.gate["decided_by"], made.created_by.username) == ("edited", "approver-user", "approver-user")
