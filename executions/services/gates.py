"""Gates (engine/gates.py): a person's decision on a gate's node run, the gates waiting for a
user, and gates that time out.

A gate opens as a node run `waiting` (services/run.py, `LockedRun.start_nodes`), sent to no worker. A decision
moves it to success (approve, edit) or failed (reject) under the execution's lock, records
what was decided, by whom, when and why on the node run's `gate`, and advances the run as
any stored node run does. A gate decided once is never decided again: the second decision
is refused naming who made the first. Each decision is written in the run's state as
`gate_feedback` (engine/gates.py) for the nodes that run after it.

A gate's output is given by one of its deciders only, whichever way it is given: a decision
on its waiting run, an output edited in a re-run or typed for a trial, or the output that
resumes a run escalated at the gate (`gate_output_given`). Each is recorded on the node run
that carries the output as that person's decision, made when they gave it.
"""
from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from django.db import models, transaction
from django.utils import timezone

from core.audit import compact, record
from core.errors import DocumentError, IllegalTransition, NotFound
from core.jsonutil import check_storable
from core.roles import Forbidden, roles_of
from core.status_writes import lock_row, transition
from engine import gates
from engine.json_schema import field_problems
from executions.models import Execution, NodeRun
from executions.node_kinds.tool_loop import TOOL_CALL_GATE
from executions.run_graphs import check_contracts_of, execution_graph
from executions.services.run import ENDED, LockedRun, dispatch_after_commit


def gate_decide(*, execution: Execution, node_run_id: int, decision: str, comment: str = "", output: Any = None,
                actor=None) -> NodeRun:
    """Decide the waiting gate `node_run_id` of `execution` for `actor`: approve (its data
    goes on as shown), edit (`output` goes on instead, if it holds to the node's contracts)
    or reject. Returns the decided node run."""
    if not isinstance(comment, str):
        raise DocumentError("is a string", where="comment")
    with transaction.atomic():
        locked = LockedRun.lock(execution)
        execution = locked.execution
        run = _gate_run(execution, node_run_id)
        gate = _gate_of(run)
        if execution.status in ENDED:
            raise IllegalTransition(f"execution {execution.execution_id} is {execution.status}: its gates can no "
                                    "longer be decided", code="CONFLICT")
        if run.status != NodeRun.Status.WAITING:
            raise IllegalTransition(_already(run), code="CONFLICT", details={"gate": gate})
        username = getattr(actor, "username", "")
        if not gates.may_decide(gate, username, roles_of(actor)):
            raise Forbidden(f"gate '{run.node_id}' is decided by {gates.deciders_text(gate)}; "
                            f"{username or 'you'} may not decide it", details={"deciders": gate["deciders"]})
        if decision not in gate["decisions"]:
            raise DocumentError(f"'{decision}' is not a decision this gate offers (it offers "
                                f"{', '.join(gate['decisions'])})", where="decision")
        if decision == gates.EDIT:
            output = _checked_edit(execution, run, output)
        elif output is not None:
            raise DocumentError(f"an output is given only with the decision edit, not {decision}", where="output")
        if gate.get("kind") == TOOL_CALL_GATE:
            _decide_tool_calls(locked, run, decision, comment=comment, by=username)
        else:
            _decide(locked, run, decision, output=output, comment=comment, by=username)
        _audit_decision("gate.decide", execution, run, decision, actor=actor, comment=comment, output=output)
    return run


def _audit_decision(action: str, execution: Execution, run: NodeRun, decision: str, *, actor=None,
                    comment: str = "", output: Any = None) -> None:
    """The decision on the audit trail, with who made it and why: the gate's run was waiting,
    and is decided (an edit's output kept, bounded)."""
    after = {"node_id": run.node_id, "node_run": run.pk, "decision": decision, "decided_by": getattr(actor, "username", ""),
             "comment": comment}
    if decision == gates.EDIT:
        after["output"] = compact(output)
    record(action, actor=actor, object_type="execution", object_id=execution.execution_id,
           before={"node_id": run.node_id, "node_run": run.pk, "status": NodeRun.Status.WAITING}, after=after)


def _decide_tool_calls(locked: LockedRun, run: NodeRun, decision: str, *, comment: str, by: str) -> None:
    """Store a decision on the tool calls a node run waits on (executions/node_kinds/tool_loop.py)
    and send the node run to a worker again: approved calls run, rejected ones are answered to
    the model as TOOL_CALL_REJECTED, and the conversation goes on where it stopped."""
    now = timezone.now()
    gate = {**_gate_of(run), "decision": decision, "decided_by": by, "decided_at": now.isoformat(),
            "comment": comment, "timed_out": False}
    decided = {call["id"]: {"decision": decision, "decided_by": by, "decided_at": gate["decided_at"],
                            "comment": comment} for call in gate["shown"]["calls"]}
    assert run.conversation is not None, "a node run waiting on tool calls stored where it stopped"
    conversation = copy.deepcopy(run.conversation)
    conversation["conversation"]["pending"]["decided"].update(decided)
    transition(NodeRun, run.pk, NodeRun.Status.WAITING, NodeRun.Status.PENDING, gate=gate, conversation=conversation,
               available_at=now, dispatches=models.F("dispatches") + 1)
    if locked.execution.status == Execution.Status.WAITING:
        locked.resume(now)
    dispatch_after_commit(run.pk)


def gate_output_given(*, node_id: str, gate: dict[str, Any], output: Any, actor, given: str, to: str,
                      where: str) -> dict[str, Any]:
    """The gate record of an output `actor` gives for gate `node_id` outside a decision on its
    waiting run (`given`: "rerun", "trial" or "resume"), as their decision made now. `gate` is
    the record of the gate's run the output takes the place of (its settings and the data it
    showed), or the gate's settings alone. Refused unless `actor` may decide the gate (`to`
    says what they tried, and how to ask its deciders instead), and, where the gate does not
    offer edit, unless the output is the data it showed: what goes on from such a gate is
    that data, as shown."""
    username = getattr(actor, "username", "")
    if not gates.may_decide(gate, username, roles_of(actor)):
        raise Forbidden(f"gate '{node_id}' is decided by {gates.deciders_text(gate)}; {username or 'you'} may not {to}",
                        details={"deciders": gates.settings_of(gate)["deciders"]})
    record = {**gate, **gates.settings_of(gate)}
    decision = gates.APPROVE if "shown" in record and output == record["shown"] else gates.EDIT
    if decision not in record["decisions"]:
        raise DocumentError(f"gate '{node_id}' offers {', '.join(record['decisions'])}, not edit: what goes on from "
                            "it is the data it showed, as shown", where=where)
    if decision == gates.EDIT:
        check_edit(record, output, where=where)
    return {**record, "decision": decision, "decided_by": username, "decided_at": timezone.now().isoformat(),
            "comment": "", "timed_out": False, "given": given}


def gates_time_out(*, now: datetime | None = None) -> list[int]:
    """Decide every waiting gate past its time-out as its `on_timeout` says (the sweep calls
    this). Returns the node runs decided."""
    now = now or timezone.now()
    decided = []
    due = NodeRun.objects.filter(status=NodeRun.Status.WAITING, decide_by__lte=now).select_related(
        "execution__workflow")
    for run in due:
        with transaction.atomic():
            locked = LockedRun.lock(run.execution)
            run = lock_row(NodeRun, run.pk)
            if run.status != NodeRun.Status.WAITING or locked.execution.status in ENDED:
                continue  # decided meanwhile, or the run ended (its gates are cancelled with it)
            on_timeout = _gate_of(run)["on_timeout"]
            _decide(locked, run, on_timeout, output=None, by="", timed_out=True, now=now)
            _audit_decision("gate.time_out", locked.execution, run, on_timeout)
            decided.append(run.pk)
    return decided


def gates_pending_ids(*, user) -> list[int]:
    """The node runs of the gates waiting for a decision that `user` may make (None: every
    one), oldest first. Only each gate's deciders are read, not the data it shows, which may
    be large: a page of them is read whole afterwards."""
    waiting = (NodeRun.objects.filter(status=NodeRun.Status.WAITING, gate__isnull=False, execution__trial=False)
               .order_by("started_at", "id"))
    if user is None:
        return list(waiting.values_list("id", flat=True))
    roles, username = roles_of(user), getattr(user, "username", "")
    return [pk for pk, deciders in waiting.values_list("id", "gate__deciders")
            if gates.may_decide({"deciders": deciders}, username, roles)]


def gates_pending(*, user) -> list[NodeRun]:
    """The gates waiting for a decision that `user` may make (None: every one), oldest first,
    with their runs."""
    ids = gates_pending_ids(user=user)
    runs = NodeRun.objects.select_related("execution__workflow").in_bulk(ids)
    return [runs[pk] for pk in ids if pk in runs]


def _gate_run(execution: Execution, node_run_id: int) -> NodeRun:
    run = lock_row(NodeRun, node_run_id, missing_ok=True, execution=execution.pk)
    if run is None:
        raise NotFound(f"execution {execution.execution_id} has no node run {node_run_id}")
    _gate_of(run)
    return run


def _gate_of(run: NodeRun) -> dict[str, Any]:
    """The gate record of a gate's run (set when the run is made); any other run is refused."""
    if run.gate is None:
        raise DocumentError(f"node run {run.pk} ('{run.node_id}') is not a gate: only gates are decided",
                            where="node_run")
    return run.gate


def _already(run: NodeRun) -> str:
    gate = _gate_of(run)
    if gate.get("decision"):
        who = "its time-out" if gate.get("timed_out") else gate.get("decided_by") or "someone"
        return (f"gate '{run.node_id}' was already decided: {gate['decision']} by {who} at {gate['decided_at']}")
    return f"gate '{run.node_id}' is {run.status}: it can no longer be decided"


def _checked_edit(execution: Execution, run: NodeRun, output: Any) -> Any:
    """A person's version of the gate's data: storable, and holding to every contract of the
    node towards the nodes after it (the same check as an agent's output)."""
    if output is None:
        raise DocumentError("the decision edit passes on the output given here: give one", where="output")
    check_storable(output, where="output")
    check_edit(_gate_of(run), output, where="output")
    check_contracts_of(execution_graph(execution), run.node_id, output, where="output")
    return output


def check_edit(gate: dict[str, Any], output: Any, *, where: str) -> None:
    """Refuse an edit that breaks the schema of the gate's run (`gate`: its record, with the
    schema it opened with; engine/gates.py), at the first field it breaks (`output.draft`),
    saying whose schema it is; every problem is in the error's details, each at its field."""
    whose = gate.get("schema_from") or "the gate's schema"
    problems = [(field, f"{message} ({whose})")
                for field, message in field_problems(gate.get("schema"), output, where=where)]
    if problems:
        raise DocumentError.at_fields(problems)


def _decide(locked: LockedRun, run: NodeRun, decision: str, *, output: Any, by: str, comment: str = "",
            timed_out: bool = False, now: datetime | None = None) -> None:
    """Store `decision` on the waiting gate `run` and advance the run (`locked`); a run
    waiting for nothing but gates runs again first."""
    execution = locked.execution
    now = now or timezone.now()
    shown = _gate_of(run)
    assert run.started_at is not None, "a gate's run starts when it opens"
    gate = {**shown, "decision": decision, "decided_by": by, "decided_at": now.isoformat(), "comment": comment,
            "timed_out": timed_out}
    fields: dict[str, Any] = {"gate": gate, "completed_at": now, "duration_ms": int((now - run.started_at).total_seconds() * 1000)}
    if decision in (gates.APPROVE, gates.EDIT):
        output = shown["shown"] if decision == gates.APPROVE else output
        status, fields = NodeRun.Status.SUCCESS, {**fields, "output": output}
    else:
        status = NodeRun.Status.FAILED
        code = gates.TIMED_OUT if decision == gates.ESCALATE else gates.REJECTED
        if not timed_out:
            error = f"rejected by {by}: {comment or 'no comment'}"
        elif code == gates.TIMED_OUT:
            error = f"no decision within {shown['timeout_seconds']} s: sent to a person (on_timeout escalate)"
        else:
            error = f"no decision within {shown['timeout_seconds']} s: rejected (on_timeout reject)"
        fields.update(error_code=code, error=error)
    transition(NodeRun, run.pk, NodeRun.Status.WAITING, status, **fields)
    for name, value in fields.items():
        setattr(run, name, value)
    run.status = status
    execution.state = {**execution.state, gates.FEEDBACK: gates.feedback_of(run.node_id, gate)}
    Execution.objects.filter(pk=execution.pk).update(state=execution.state, updated_at=now)
    if execution.status == Execution.Status.WAITING:
        locked.resume(now)
    if status == NodeRun.Status.SUCCESS:
        locked.apply_output(run)
    locked.advance(completed=run, retryable=False)
