"""Gates: a run stops at a gate for a person's decision, with the node runs run in this
process (the real-worker proofs are in test_gates_worker.py)."""
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.utils import timezone

from core.errors import DocumentError, IllegalTransition, WorkflowInvalid
from core.roles import Forbidden
from executions.models import Execution
from executions.services import (
    execution_cancel,
    execution_rerun,
    execution_retry,
    execution_start,
    gate_decide,
    gates_pending,
    node_runs_sweep,
    node_try,
)
from tests.executions.conftest import drain
from workflows.models import Blueprint, Contract, Workflow
from workflows.services import workflow_import_document

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def demo(in_process):
    return in_process


def user(name, *roles):
    person = User.objects.create_user(username=name, password="a long password")
    for role in roles:
        person.groups.add(Group.objects.get_or_create(name=role)[0])
    return person


@pytest.fixture
def ana():
    return user("ana", "approver")


def release(**input):
    return drain(execution_start(workflow=Workflow.objects.get(workflow_id="release_review"),
                                 input={"topic": "Switchyard 2.1", **input}))


def path(execution):
    return [(r.node_id, r.status) for r in execution.node_runs.order_by("sequence", "id")]


def gate_of(execution, node_id="approve"):
    return execution.node_runs.filter(node_id=node_id).order_by("-sequence").first()


def decide(execution, decision, by, node_id="approve", **fields):
    gate_decide(execution=execution, node_run_id=gate_of(execution, node_id).pk, decision=decision, actor=by, **fields)
    return drain(execution)


def test_the_release_review_waits_at_its_gate_with_the_draft_and_the_review_shown():
    execution = release()

    assert execution.status == "waiting"  # nothing left to run but the gate
    assert path(execution)[-1] == ("approve", "waiting")
    gate = gate_of(execution)
    state = execution.state
    assert gate.gate["shown"] == {"draft": state["draft"], "review": state["feedback"]}
    assert gate.gate["prompt"] == "Publish these release notes?"
    assert gate.gate["decisions"] == ["approve", "reject", "edit"]
    assert gate.gate["deciders"] == {"roles": ["approver"], "users": []}
    assert gate.gate["decision"] is None and gate.dispatches == 0
    assert abs((gate.decide_by - gate.started_at).total_seconds() - 86400) < 1
    assert execution.paused_at is not None


def test_approving_publishes_the_draft_as_shown_and_records_who_when_and_why(ana):
    execution = release()
    shown = gate_of(execution).gate["shown"]

    execution = decide(execution, "approve", ana, comment="good to go")

    gate = gate_of(execution)
    assert gate.status == "success" and gate.output == shown
    assert gate.gate["decision"] == "approve" and gate.gate["decided_by"] == "ana"
    assert gate.gate["comment"] == "good to go" and gate.gate["timed_out"] is False
    assert gate.gate["decided_at"] and gate.completed_at
    nodes = [node for node, _ in path(execution)]
    assert nodes[nodes.index("approve") + 1] == "publish"  # on approve, on to publishing
    assert execution.status == "escalated" and execution.escalation["node_id"] == "compliance"
    assert execution.paused_seconds > 0  # the time it waited at the gate is not the run's own


def test_an_edit_is_what_goes_on_and_rejecting_loops_back_to_the_drafter(ana):
    execution = release()
    execution = decide(execution, "reject", ana, comment="name the breaking change")

    rejected = execution.node_runs.filter(node_id="approve").order_by("sequence").first()
    assert rejected.status == "failed" and rejected.error_code == "GATE_REJECTED"
    assert rejected.error == "rejected by ana: name the breaking change"
    nodes = [node for node, _ in path(execution)]
    after = nodes[nodes.index("approve") + 1:]
    assert after == ["draft", "review", "approve"]  # the loop asks again, in a new round
    assert execution.status == "waiting" and execution.node_runs.filter(node_id="approve").count() == 2

    edited = {"draft": "Release notes, as the approver wrote them."}
    execution = decide(execution, "edit", ana, output=edited)
    assert gate_of(execution).output == edited and gate_of(execution).gate["decision"] == "edit"
    publish = execution.node_runs.filter(node_id="publish").order_by("sequence").last()
    assert publish.status == "success" and "as the approver wrote them" in str(publish.resolved_inputs)
    assert execution.state["draft"] == edited["draft"]


def test_a_transition_can_read_the_decision(ana):
    workflow = Workflow.objects.get(workflow_id="release_review")
    from workflows.documents import workflow_document

    document = workflow_document(workflow)
    document["transitions"] = [t for t in document["transitions"] if t["from"] != "approve"] + [
        {"from": "approve", "to": "review", "condition": "gate.decision == 'edit'"},
        {"from": "approve", "to": "publish", "condition": "gate.decision == 'approve'"},
    ]
    workflow_import_document(document, actor="test")
    execution = release()

    execution = decide(execution, "edit", ana, output={"draft": "An edited draft."})

    edited = execution.node_runs.filter(node_id="approve").order_by("sequence").first()
    assert edited.decision["condition"] == "gate.decision == 'edit'" and edited.decision["node_id"] == "review"
    nodes = [node for node, _ in path(execution)]
    assert nodes[nodes.index("approve"):] == ["approve", "review", "approve"]  # reviewed again, then asked again


def test_who_may_decide_and_what_is_refused(ana):
    execution = release()
    gate = gate_of(execution)
    author = user("otto", "author")

    with pytest.raises(Forbidden, match="decided by a user with the approver role; otto may not decide it"):
        gate_decide(execution=execution, node_run_id=gate.pk, decision="approve", actor=author)
    with pytest.raises(DocumentError, match="not a decision this gate offers"):
        gate_decide(execution=execution, node_run_id=gate.pk, decision="maybe", actor=ana)
    with pytest.raises(DocumentError, match="output: the decision edit passes on the output given here"):
        gate_decide(execution=execution, node_run_id=gate.pk, decision="edit", actor=ana)
    with pytest.raises(DocumentError, match="only with the decision edit"):
        gate_decide(execution=execution, node_run_id=gate.pk, decision="approve", output={"x": 1}, actor=ana)
    gate.refresh_from_db()
    assert gate.status == "waiting"  # nothing refused changed anything

    gate_decide(execution=execution, node_run_id=gate.pk, decision="approve", actor=ana)
    with pytest.raises(IllegalTransition, match="already decided: approve by ana at "):
        gate_decide(execution=execution, node_run_id=gate.pk, decision="reject", actor=user("bo", "admin"))
    gate.refresh_from_db()
    assert gate.gate["decision"] == "approve"


def test_an_edit_that_breaks_the_nodes_contract_is_refused_with_the_schema_error(ana):
    workflow = Workflow.objects.get(workflow_id="release_review")
    Contract.objects.create(blueprint=Blueprint.objects.create(blueprint_id="release", name="Release"), from_agent=workflow.nodes.get(node_id="approve").agent,
                            to_agent=workflow.nodes.get(node_id="publish").agent, key="approved_draft",
                            schema={"type": "object", "required": ["draft"],
                                    "properties": {"draft": {"type": "string", "minLength": 10}}})
    Workflow.objects.filter(pk=workflow.pk).update(updated_at=timezone.now())
    execution = release()

    with pytest.raises(DocumentError, match=r"output.draft: 'short' is too short \(the contract 'approved_draft'\)"):
        gate_decide(execution=execution, node_run_id=gate_of(execution).pk, decision="edit",
                    output={"draft": "short"}, actor=ana)
    assert gate_of(execution).status == "waiting"


def test_a_cancelled_run_cancels_its_gate_and_refuses_a_decision(ana):
    execution = release()
    execution_cancel(execution=execution)

    assert gate_of(execution).status == "cancelled"
    with pytest.raises(IllegalTransition, match="is cancelled: its gates can no longer be decided"):
        gate_decide(execution=execution, node_run_id=gate_of(execution).pk, decision="approve", actor=ana)


def test_a_time_out_escalates_and_a_retry_asks_again(ana):
    execution = release()
    gate = gate_of(execution)

    report = node_runs_sweep(now=gate.decide_by + timedelta(seconds=1))

    assert report["gates_timed_out"] == [gate.pk]
    gate.refresh_from_db()
    execution.refresh_from_db()
    assert gate.status == "failed" and gate.error_code == "GATE_TIMEOUT"
    assert gate.gate["timed_out"] is True and gate.gate["decision"] == "escalate" and gate.gate["decided_by"] == ""
    assert execution.status == "escalated" and execution.escalation["node_id"] == "approve"
    assert execution.escalation["error_code"] == "GATE_TIMEOUT"

    execution_retry(execution=execution)
    execution.refresh_from_db()
    assert execution.status == "waiting" and gate_of(execution).status == "waiting"
    assert gate_of(execution).pk != gate.pk


def test_a_waiting_run_is_not_ended_by_its_wall_time():
    execution = release()
    later = timezone.now() + timedelta(hours=2)  # past the demo's 600 s

    node_runs_sweep(now=later)

    execution.refresh_from_db()
    assert execution.status == "waiting"


def test_the_pending_gates_of_a_user(ana):
    first, second = release(), release()
    author, admin = user("otto", "author"), user("bo", "admin")

    assert [run.execution for run in gates_pending(user=ana)] == [first, second]
    assert gates_pending(user=admin) and gates_pending(user=author) == []
    decide(first, "approve", ana)
    assert [run.execution for run in gates_pending(user=ana)] == [second]


PARALLEL = {
    "workflow_id": "launch_signoff", "name": "Launch sign-off", "topology": "dag",
    "nodes": [
        {"id": "draft", "agent_ref": "Drafter", "input_mapping": {"topic": "$.input.topic"}},
        {"id": "legal", "agent_ref": "Release_Manager", "input_mapping": {"text": "$.nodes.draft.text"},
         "gate": {"prompt": "Legal sign-off", "deciders": {"users": ["lea"]}}},
        {"id": "marketing", "agent_ref": "Release_Manager", "input_mapping": {"text": "$.nodes.draft.text"},
         "gate": {"prompt": "Marketing sign-off", "deciders": {"users": ["max"]}, "decisions": ["approve", "reject"]}},
        {"id": "publish", "agent_ref": "Backup_Publisher",
         "input_mapping": {"draft": "$.nodes.legal.text", "also": "$.nodes.marketing.text"}},
    ],
    "transitions": [{"from": "draft", "to": "legal"}, {"from": "draft", "to": "marketing"},
                    {"from": "legal", "to": "publish"}, {"from": "marketing", "to": "publish"}],
}


def test_two_gates_in_parallel_branches_are_decided_independently():
    workflow_import_document(PARALLEL, actor="test")
    lea, max_ = user("lea"), user("max")
    execution = drain(execution_start(workflow=Workflow.objects.get(workflow_id="launch_signoff"),
                                      input={"topic": "launch"}))
    assert execution.status == "waiting"
    assert {r.node_id for r in execution.node_runs.filter(status="waiting")} == {"legal", "marketing"}
    assert [r.node_id for r in gates_pending(user=lea)] == ["legal"]
    with pytest.raises(Forbidden):
        gate_decide(execution=execution, node_run_id=gate_of(execution, "marketing").pk, decision="approve", actor=lea)

    execution = decide(execution, "approve", lea, node_id="legal")
    assert execution.status == "waiting" and not execution.node_runs.filter(node_id="publish").exists()
    execution = decide(execution, "approve", max_, node_id="marketing")

    assert execution.status == "success"
    assert execution.node_runs.get(node_id="publish").status == "success"


def test_a_rejection_with_nowhere_to_go_fails_the_run_naming_who_and_why():
    workflow_import_document({**PARALLEL, "error_handling": {"retry_count": 2, "fallback_agent": "Backup_Publisher"}},
                             actor="test")
    max_ = user("max")
    execution = drain(execution_start(workflow=Workflow.objects.get(workflow_id="launch_signoff"),
                                      input={"topic": "launch"}))

    execution = decide(execution, "reject", max_, node_id="marketing", comment="not this week")

    assert execution.status == "failed"
    assert execution.ended_reason == "node 'marketing' failed: GATE_REJECTED: rejected by max: not this week"
    assert execution.node_runs.filter(node_id="marketing").count() == 1  # never retried, never the fallback's
    assert gate_of(execution, "legal").status == "cancelled"


def test_a_gate_refuses_what_a_run_could_not_do():
    broken = {**PARALLEL, "nodes": [*PARALLEL["nodes"][:3], {
        **PARALLEL["nodes"][3], "gate": {"timeout_seconds": 60, "on_timeout": "escalate"},
        "input_mapping": {"data_references": [{"ref_type": "file", "path": "a.txt"}]}}]}
    with pytest.raises(WorkflowInvalid) as refused:
        workflow_import_document(broken, actor="test")
    codes = {problem["code"] for problem in refused.value.problems}
    assert codes == {"GATE_INPUT", "GATE_ESCALATES_TO_NOBODY"}


def test_a_rerun_from_the_gate_asks_again_and_one_from_publish_reuses_the_decision(ana):
    source = decide(release(), "approve", ana)

    again = drain(execution_rerun(source=source, from_node="approve"))
    assert again.status == "waiting" and gate_of(again).kind == "first" and gate_of(again).gate["decision"] is None

    with pytest.raises(DocumentError, match="is a gate: a person decides it and its agent is never called"):
        execution_rerun(source=source, from_node="approve", agent_versions={"approve": "current"})

    later = drain(execution_rerun(source=source, from_node="publish"))
    copy = gate_of(later)
    assert copy.kind == "reused" and copy.gate["decided_by"] == "ana" and copy.gate["decision"] == "approve"


def test_a_gate_cannot_be_tried_alone():
    with pytest.raises(DocumentError, match="is a gate: a person decides it"):
        node_try(workflow=Workflow.objects.get(workflow_id="release_review"), node_id="approve")


def test_a_gate_is_a_persons_step_not_its_stand_in_agents_work(ana):
    from executions.models import Evaluation
    from executions.services import execution_resume
    from quality.evaluations import execution_evaluate

    execution = decide(release(), "approve", ana)
    execution_resume(execution=execution, output={"compliant": True})
    execution = drain(execution)
    assert execution.status == "success"

    execution_evaluate(execution_pk=execution.pk)

    evaluated = set(Evaluation.objects.filter(execution=execution, target_type="agent").values_list("target_id",
                                                                                                     flat=True))
    assert "Drafter" in evaluated and "Release_Manager" not in evaluated


def test_a_gated_workflow_is_never_exported_as_a_task_chain_that_would_drop_its_gate():
    from core.documents import export_document

    with pytest.raises(DocumentError) as refused:
        export_document("task_chain", "release_review")
    message = str(refused.value)
    assert "cannot be written as a task chain, which would drop its topology 'state_machine'; its transitions" in message
    assert "node 'approve' gate" in message and refused.value.where == "task_chain"


@pytest.mark.parametrize("on_timeout, status, code", [("approve", "success", ""), ("reject", "failed", "GATE_REJECTED")])
def test_a_time_out_decides_what_on_timeout_says(on_timeout, status, code):
    from tests.workflow_edits import edit_workflow

    edit_workflow("release_review", lambda document: next(
        node for node in document["nodes"] if node["id"] == "approve")["gate"].update(on_timeout=on_timeout))
    execution = release()
    gate = gate_of(execution)

    node_runs_sweep(now=gate.decide_by + timedelta(seconds=1))

    gate.refresh_from_db()
    assert (gate.status, gate.error_code, gate.gate["decision"], gate.gate["timed_out"]) == (
        status, code, on_timeout, True)
    execution = drain(execution)
    after = [node for node, _ in path(execution)][[node for node, _ in path(execution)].index("approve") + 1]
    if on_timeout == "approve":
        assert gate.output == gate.gate["shown"] and after == "publish"
    else:
        assert gate.error == "no decision within 86400 s: rejected (on_timeout reject)" and after == "draft"


def test_only_a_decider_gives_a_gates_output_in_a_rerun_and_the_copy_names_them(ana):
    source = decide(release(), "approve", ana, comment="fine as it is")
    original = gate_of(source)
    edited = {"draft": "Release notes, as the re-run gives them."}

    with pytest.raises(Forbidden, match="gate 'approve' is decided by a user with the approver role; otto may not "
                                        "give its output in a re-run: re-run from 'approve' to ask its deciders"):
        execution_rerun(source=source, from_node="publish", outputs={"approve": edited}, actor=user("otto", "author"))
    assert Execution.objects.count() == 1  # nothing was started

    rerun = drain(execution_rerun(source=source, from_node="publish", outputs={"approve": edited},
                                  actor=user("bo", "author", "approver")))

    copy = gate_of(rerun)
    assert copy.kind == "edited" and copy.reused_from == original and copy.output == edited
    assert copy.gate["decision"] == "edit" and copy.gate["decided_by"] == "bo" and copy.gate["given"] == "rerun"
    assert copy.gate["decided_at"] != original.gate["decided_at"] and copy.gate["comment"] == ""
    assert copy.gate["shown"] == original.gate["shown"]  # what the decider had before them
    publish = rerun.node_runs.filter(node_id="publish").order_by("sequence").first()
    assert "as the re-run gives them" in str(publish.resolved_inputs)
    original.refresh_from_db()
    assert (original.gate["decided_by"], original.gate["comment"], original.output) == (
        "ana", "fine as it is", original.gate["shown"])  # the past run's decision stands as it was


def test_a_rerun_asks_the_gates_from_its_start_again_and_gives_no_output_a_gate_does_not_offer():
    workflow_import_document(PARALLEL, actor="test")
    lea, max_ = user("lea"), user("max")
    source = drain(execution_start(workflow=Workflow.objects.get(workflow_id="launch_signoff"),
                                   input={"topic": "launch"}))
    decide(source, "approve", lea, node_id="legal")
    source = decide(source, "approve", max_, node_id="marketing")
    assert source.status == "success"

    again = drain(execution_rerun(source=source, from_node="draft"))
    assert again.status == "waiting"
    assert {(r.node_id, r.kind, r.status, r.gate["decision"]) for r in again.node_runs.filter(gate__isnull=False)} == {
        ("legal", "first", "waiting", None), ("marketing", "first", "waiting", None)}

    with pytest.raises(DocumentError, match="gate 'marketing' offers approve, reject, not edit") as refused:
        execution_rerun(source=source, from_node="publish", outputs={"marketing": {"text": "other words"}}, actor=max_)
    assert refused.value.where == "outputs.marketing"

    later = drain(execution_rerun(source=source, from_node="publish", outputs={"legal": {"text": "Legal's words."}},
                                  actor=lea))
    assert later.status == "success"
    assert (gate_of(later, "legal").gate["decided_by"], gate_of(later, "legal").gate["decision"]) == ("lea", "edit")
    marketing = gate_of(later, "marketing")
    assert (marketing.kind, marketing.gate["decided_by"], marketing.gate.get("given")) == ("reused", "max", None)


def test_a_gates_output_typed_for_a_trial_needs_one_of_its_deciders(ana):
    source = decide(release(), "approve", ana)
    workflow = Workflow.objects.get(workflow_id="release_review")

    with pytest.raises(Forbidden, match="otto may not give its output in a trial"):
        node_try(workflow=workflow, node_id="publish", source=source, outputs={"approve": {"draft": "Mine."}},
                 actor=user("otto", "author"))

    trial = drain(node_try(workflow=workflow, node_id="publish", source=source, outputs={"approve": {"draft": "Hers."}},
                           actor=ana))
    copy = gate_of(trial)
    assert copy.kind == "edited" and copy.output == {"draft": "Hers."}
    assert (copy.gate["decision"], copy.gate["decided_by"], copy.gate["given"]) == ("edit", "ana", "trial")


def test_resuming_past_a_gates_rejection_needs_a_decider_holds_to_the_contracts_and_records_who():
    from executions.services import execution_resume

    workflow_import_document({**PARALLEL, "error_handling": {"retry_count": 0, "escalate_to": "Orchestrator"}},
                             actor="test")
    workflow = Workflow.objects.get(workflow_id="launch_signoff")
    Contract.objects.create(blueprint=Blueprint.objects.create(blueprint_id="launch", name="Launch"),
                            from_agent=workflow.nodes.get(node_id="legal").agent,
                            to_agent=workflow.nodes.get(node_id="publish").agent, key="signed_off",
                            schema={"type": "object", "required": ["text"],
                                    "properties": {"text": {"type": "string", "minLength": 10}}})
    Workflow.objects.filter(pk=workflow.pk).update(updated_at=timezone.now())
    lea, max_ = user("lea"), user("max")
    execution = drain(execution_start(workflow=workflow, input={"topic": "launch"}))
    decide(execution, "approve", max_, node_id="marketing")
    execution = decide(execution, "reject", lea, node_id="legal", comment="not cleared")
    assert execution.status == "escalated" and execution.escalation["node_id"] == "legal"
    rejected = gate_of(execution, "legal")

    with pytest.raises(Forbidden, match="gate 'legal' is decided by lea; otto may not resume the run past it"):
        execution_resume(execution=execution, output={"text": "Cleared by an author."}, actor=user("otto", "author"))
    with pytest.raises(DocumentError, match=r"output.text: 'ok' is too short \(the contract 'signed_off'\)"):
        execution_resume(execution=execution, output={"text": "ok"}, actor=lea)
    execution.refresh_from_db()
    assert execution.status == "escalated" and gate_of(execution, "legal") == rejected  # nothing was changed

    execution_resume(execution=execution, output={"text": "Cleared by legal after all."}, actor=lea)
    execution = drain(execution)

    assert execution.status == "success", execution.ended_reason
    resumed = gate_of(execution, "legal")
    assert (resumed.kind, resumed.status, resumed.output, resumed.worker) == (
        "manual", "success", {"text": "Cleared by legal after all."}, "lea")
    assert (resumed.gate["decision"], resumed.gate["decided_by"], resumed.gate["given"]) == ("edit", "lea", "resume")
    assert resumed.gate["shown"] == rejected.gate["shown"]
    publish = execution.node_runs.get(node_id="publish")
    assert "Cleared by legal after all." in str(publish.resolved_inputs)


def test_an_edit_that_breaks_the_gates_schema_is_refused_at_its_field_and_nothing_is_stored(ana):
    execution = release()
    gate = gate_of(execution)
    assert gate.gate["schema"]["properties"]["draft"]["type"] == "string"  # the demo's gate asks for text
    assert gate.gate["schema_from"] == "the gate's schema"
    before = (gate.gate, execution.state)

    with pytest.raises(DocumentError) as refused:
        gate_decide(execution=execution, node_run_id=gate.pk, decision="edit", output={"draft": 42}, actor=ana)
    assert refused.value.where == "output.draft"
    assert str(refused.value) == "output.draft: 42 is not of type 'string' (the gate's schema)"
    with pytest.raises(DocumentError) as missing:
        gate_decide(execution=execution, node_run_id=gate.pk, decision="edit", output={"review": "fine", "x": [1]},
                    actor=ana)
    assert missing.value.where == "output.draft" and missing.value.problem == "is required (the gate's schema)"

    gate.refresh_from_db()
    execution.refresh_from_db()
    assert gate.status == "waiting" and (gate.gate, execution.state) == before
    assert not execution.node_runs.filter(node_id="publish").exists()


def test_a_gate_without_a_schema_holds_an_edit_to_the_nodes_output_contract(ana):
    workflow = Workflow.objects.get(workflow_id="release_review")
    from workflows.documents import workflow_document

    document = workflow_document(workflow)
    approve = next(node for node in document["nodes"] if node["id"] == "approve")
    del approve["gate"]["schema"]
    workflow_import_document(document, actor="test")
    schema = {"type": "object", "required": ["draft"], "properties": {"draft": {"type": "string", "minLength": 10}}}
    Contract.objects.create(blueprint=Blueprint.objects.create(blueprint_id="release", name="Release"),
                            from_agent=workflow.nodes.get(node_id="approve").agent,
                            to_agent=workflow.nodes.get(node_id="publish").agent, key="approved_draft", schema=schema)
    Workflow.objects.filter(pk=workflow.pk).update(updated_at=timezone.now())
    execution = release()
    gate = gate_of(execution)
    assert gate.gate["schema"] == schema and gate.gate["schema_from"] == "the contract 'approved_draft'"

    with pytest.raises(DocumentError, match=r"^output.draft: 'short' is too short \(the contract 'approved_draft'\)$"):
        gate_decide(execution=execution, node_run_id=gate.pk, decision="edit", output={"draft": "short"}, actor=ana)
    execution = decide(execution, "edit", ana, output={"draft": "Long enough release notes."})
    assert gate_of(execution).output == {"draft": "Long enough release notes."}


@pytest.mark.parametrize("schema, message", [
    ({"type": "array"}, 'describes the data a person passes on, a JSON object: its "type" is "object"'),
    ({"type": "object", "properties": {"draft": {"type": "text"}}},
     "is not a valid JSON Schema: 'text' is not valid under any of the given schemas "
     "(at schema['properties']['draft']['type'])"),
    ({"properties": {"draft": {"pattern": "(a)\\1"}}}, "is not a valid JSON Schema: the pattern '(a)\\\\1' cannot be used"),
])
def test_a_gates_schema_is_checked_when_the_workflow_is_saved(schema, message):
    document = {**PARALLEL, "nodes": [*PARALLEL["nodes"][:1], {**PARALLEL["nodes"][1], "gate": {
        **PARALLEL["nodes"][1]["gate"], "schema": schema}}, *PARALLEL["nodes"][2:]]}
    with pytest.raises(WorkflowInvalid) as refused:
        workflow_import_document(document, actor="test")
    (problem,) = refused.value.problems
    assert problem["where"] == "nodes[legal].gate.schema" and problem["code"] == "GATE_SCHEMA_INVALID"
    assert problem["message"].startswith(message)
    assert not Workflow.objects.filter(workflow_id="launch_signoff").exists()


def test_a_rejections_comment_reaches_the_next_draft_as_gate_feedback(ana):
    execution = release()
    first_draft = execution.node_runs.filter(node_id="draft").order_by("-sequence").first()
    assert "Revised after review: Round 1" in first_draft.output["text"]  # the reviewer's comment, before any gate

    execution = decide(execution, "reject", ana, comment="Name the breaking change.")

    rejected = execution.node_runs.filter(node_id="approve").order_by("sequence").first()
    feedback = {"node": "approve", "decision": "reject", "comment": "Name the breaking change.", "decided_by": "ana",
                "decided_at": rejected.gate["decided_at"], "timed_out": False}
    assert execution.state["gate_feedback"] == feedback
    redraft = execution.node_runs.filter(node_id="draft", sequence__gt=rejected.sequence).get()
    (read,) = [item for item in redraft.resolved_inputs if item["name"] == "gate_feedback"]
    assert read["passed"] and read["content"] == feedback  # the drafter's input, through its input mapping
    assert redraft.output["text"].endswith("Revised after ana rejected it: Name the breaking change.")
    assert "Revised after review" not in redraft.output["text"]  # the person's words, not the reviewer's
    assert gate_of(execution).gate["shown"]["draft"] == redraft.output["text"]  # and the gate shows that redraft

    execution = decide(execution, "approve", ana, comment="Good.")
    assert execution.state["gate_feedback"]["decision"] == "approve"  # the latest decision replaces it


def test_a_rerun_from_the_redraft_after_a_rejection_still_reads_the_persons_comment(ana):
    source = decide(release(), "reject", ana, comment="Name the breaking change.")
    assert source.status == "waiting"  # redrafted, reviewed, and asked again

    again = drain(execution_rerun(source=source, from_node="draft"))  # the redraft's step, the last of draft

    assert again.state["gate_feedback"]["comment"] == "Name the breaking change."
    redraft = again.node_runs.filter(node_id="draft", kind="first").get()
    assert redraft.output["text"].endswith("Revised after ana rejected it: Name the breaking change.")


def test_each_node_run_is_numbered_by_its_nodes_round_and_its_attempt_within_it(ana):
    execution = decide(release(), "reject", ana, comment="again")
    execution = decide(execution, "approve", ana)

    def rounds(node_id):
        return [(run.kind, run.round, run.attempt) for run in execution.node_runs.filter(node_id=node_id).order_by("sequence")]

    assert rounds("draft") == [("first", 1, 1), ("first", 2, 1), ("first", 3, 1)]  # the review's loop, then the gate's
    assert rounds("approve") == [("first", 1, 1), ("first", 2, 1)]
    publish = rounds("publish")
    assert publish[0] == ("first", 1, 1) and len(publish) > 1
    assert {round_ for _, round_, _ in publish} == {1}  # its retries and the fallback stay in its one round
