"""Start and steer a run: what people (and the API) do to an execution."""
from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.utils import timezone

from core import audit
from core.errors import DocumentError, IllegalTransition, WorkflowInvalid
from core.jsonutil import check_storable
from engine.inputs import checked_input
from executions.models import Execution, NodeRun
from executions.run_graphs import check_contracts_of, execution_graph, run_graph
from executions.services.gates import gate_output_given
from executions.services.run import ENDED, LockedRun
from workflows.models import Workflow


def execution_start(*, workflow: Workflow, input: dict | None = None, actor=None,
                    execution_id: str | None = None, version: int | None = None,
                    parent: NodeRun | None = None, depth: int = 0, experiment: str = "",
                    agent_versions: dict[str, int] | None = None,
                    agent_overrides: dict[str, dict] | None = None) -> Execution:
    """Create a run of the workflow's version `version` (by default its latest) and dispatch
    its first nodes (after commit). `parent`: the sub-workflow node's run whose child run
    this is, `depth` runs deep (services/subworkflows.py). An experiment's item
    (experiments/) names its `experiment`, and the `agent_versions` (node id → AgentVersion
    pk) and `agent_overrides` (node id → agent content parts) its nodes run with, which its
    experiment has checked."""
    if input is not None and not isinstance(input, dict):
        raise DocumentError("the input of a run is a JSON object", where="input")
    check_storable(input, where="input")
    workflow_version, graph = run_graph(workflow, version)
    problems = graph.problems
    if problems:  # run as if its transitions were not written, it would do what they say it must not
        raise WorkflowInvalid(problems, workflow_id=workflow.workflow_id)
    input = input_checked(graph, input or {})
    with transaction.atomic():
        now = timezone.now()
        execution = Execution.objects.create(
            execution_id=execution_id or new_execution_id("exec"),
            workflow=workflow, workflow_version=workflow_version, status=Execution.Status.RUNNING,
            input=input or {}, state={}, domain=_domain_of(input, graph.settings.domain),
            started_at=now, created_by=actor if getattr(actor, "pk", None) else None,
            parent_node_run=parent, depth=depth, experiment=experiment,
            agent_versions=agent_versions or {}, agent_overrides=agent_overrides or {},
        )
        LockedRun.lock(execution).advance(completed=None)
    return execution


def input_checked(graph, input: dict) -> dict:
    """The input a run of `graph` starts with, its declared defaults filled in; refused
    naming the first input that breaks the workflow's `input_schema` (engine/inputs.py)."""
    filled, problems = checked_input(graph.settings.input_schema, input)
    if problems:
        where, what = problems[0]
        raise DocumentError(what, where=where, details={"problems": [{"where": w, "message": m} for w, m in problems]})
    return filled


def new_execution_id(prefix: str) -> str:
    return f"{prefix}_{timezone.now():%Y%m%d%H%M%S}_{uuid.uuid4().hex[:8]}"


def _domain_of(input: dict | None, domain: str) -> str:
    """The knowledge domain a run works in: the input's `domain`, else its workflow version's."""
    named = (input or {}).get("domain")
    return named.strip()[:200] if isinstance(named, str) and named.strip() else domain


def execution_cancel(*, execution: Execution, actor=None) -> Execution:
    """Stop a run that has not ended: its pending node runs and open gates are cancelled, and
    a node running on a worker is stopped there (its command's processes killed, its model
    stream closed, its tool call abandoned: see LockedRun.cancel); each node run says who
    cancelled it. Recorded in the audit trail. An ended run is refused (ILLEGAL_TRANSITION),
    naming its status."""
    with transaction.atomic():
        locked = LockedRun.lock(execution)
        execution = locked.execution
        if execution.status in ENDED:
            raise IllegalTransition(f"execution {execution.execution_id} has ended ({execution.status}): only a "
                                    "run that has not ended can be cancelled")
        before = execution.status
        who = getattr(actor, "username", "") or ""
        locked.cancel(f"cancelled by {who or 'someone'}", by=who)
        audit.record("execution.cancel", actor=actor, object_type="execution", object_id=execution.execution_id,
                     before={"status": before}, after={"status": execution.status})
    return execution


def execution_resume(*, execution: Execution, output: Any, actor=None) -> Execution:
    """Go on past the escalated node with an output a person gives: held to the node's
    contracts like every output a person gives. Past a gate (rejected, or not decided in
    time), the output is the gate's: only one of its deciders gives it, and it is recorded
    as their decision (gates.gate_output_given). The node run that carries the output names
    who gave it (`worker`)."""
    check_storable(output, where="output")
    with transaction.atomic():
        locked = _escalated(execution)
        execution = locked.execution
        graph = execution_graph(execution)
        node = graph.nodes[_escalation(execution)["node_id"]]
        gate = None
        if graph.kinds[node.node_id].decided_by_people:
            gate = gate_output_given(node_id=node.node_id, gate=_gate_record(execution, node), output=output,
                                     actor=actor, given="resume", where="output",
                                     to="resume the run past it: retry the node to ask its deciders again")
        check_contracts_of(graph, node.node_id, output, where="output")
        now = timezone.now()
        locked.resume(now, escalation=None)
        run = locked.add_node_run(node.node_id, agent_id=node.agent_id, kind="manual", attempt=1,
                                  status=NodeRun.Status.SUCCESS)
        NodeRun.objects.filter(pk=run.pk).update(output=output, backend="manual", completed_at=now, started_at=now,
                                                 worker=getattr(actor, "username", "") or "manual", gate=gate)
        run.output, run.gate = output, gate
        locked.apply_output(run, node)
        locked.advance(completed=run)
    return execution


def execution_retry(*, execution: Execution, actor=None) -> Execution:
    """Run the escalated node again from its first attempt."""
    with transaction.atomic():
        locked = _escalated(execution)
        execution = locked.execution
        node = execution_graph(execution).nodes[_escalation(execution)["node_id"]]
        locked.resume(timezone.now(), escalation=None)
        locked.add_node_run(node.node_id, agent_id=node.agent_id, kind="first", attempt=1)
    return execution


def execution_abort(*, execution: Execution, actor=None) -> Execution:
    with transaction.atomic():
        locked = _escalated(execution)
        execution = locked.execution
        who = getattr(actor, "username", "") or "someone"
        locked.end(Execution.Status.FAILED, f"aborted by {who} after escalation at '{_escalation(execution)['node_id']}'")
    return execution


def _gate_record(execution: Execution, node) -> dict:
    """The record of the gate's latest run (the one that escalated: its settings and the data
    it showed), else the gate's settings."""
    latest = (execution.node_runs.filter(node_id=node.node_id, gate__isnull=False).order_by("-sequence", "-id")
              .values_list("gate", flat=True).first())
    return latest or node.gate


def _escalated(execution: Execution) -> LockedRun:
    locked = LockedRun.lock(execution)
    execution = locked.execution
    if execution.status != Execution.Status.ESCALATED:
        raise IllegalTransition(f"execution {execution.execution_id} is {execution.status}, not escalated",
                                code="CONFLICT")
    return locked


def _escalation(execution: Execution) -> dict[str, Any]:
    """The record of an escalated run's escalation: written with the status, cleared on resuming."""
    assert execution.escalation is not None, "an escalated run records its escalation"
    return execution.escalation


def execution_start_by_id(*, workflow_id: str, input: Any = None, actor=None, version: int | None = None,
                          ) -> Execution:
    """Start a run of the workflow with this id (on version `version`, else the latest): what
    the API's `POST /executions` does."""
    workflow = Workflow.objects.filter(workflow_id=workflow_id).first()
    if workflow is None:
        raise DocumentError(f"workflow '{workflow_id}' does not exist", where="workflow_id")
    return execution_start(workflow=workflow, input=input, actor=actor, version=version)
