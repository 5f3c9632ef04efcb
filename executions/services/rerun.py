"""Re-run a past run from one of its nodes, and try one node alone.

A re-run is a new execution of the same workflow: the node runs of the past run that the
re-run does not repeat are copied into it as `reused` (or `edited`, with an output a person
changed), each pointing at the run it copies (`reused_from`), without being run, sent to a
worker or billed; then the run starts as any run does, and the engine starts the chosen node,
whose dependencies are already done (`engine.replay` says which runs are reused). The past
run is never changed; the new one records where it came from (`rerun_of`, `rerun`: the nodes
reused, each once, and how many node runs were copied).

The request reads the past run light and makes every check that can refuse; the database
copies the rows. Up to RERUN_COPY_INLINE_MAX copies are made while the request is answered;
a larger re-run is answered at once, pending, and a worker makes its copies a chunk at a
time (`rerun_copy`, which the sweep sends again if its worker dies), then starts it.

A gate's decision is reused as it was, or made again: a gate the re-run reaches (at or after
the chosen node) opens for its deciders, and a gate's output edited here is the decision of
the person who edits it, who must be one of the gate's deciders (`gates.gate_output_given`).

A trial runs one node once, on a worker, with the outputs of the nodes it reads copied from
a past run or typed by hand: an execution marked `trial`, whose plan is that node alone, that
is never evaluated and so raises no derive requests, and is not listed among the runs.
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from agents.models import AgentVersion
from core.audit import compact, record
from core.errors import DocumentError, IllegalTransition, echo
from core.jsonutil import check_storable, json_object
from core.rows import copy_rows, db_values
from core.status_writes import change_status
from core.tasks import send_after_commit
from engine import gates
from engine.replay import PastRun, RerunRefused, recorded_path, shape_changes, split
from executions.models import Execution, NodeRun
from executions.run_details import refuse_without_details
from executions.run_graphs import Graph, check_contracts_of, execution_graph, run_graph
from executions.services.gates import gate_output_given
from executions.services.run import LockedRun, mapped_state
from executions.services.start import input_checked, new_execution_id
from workflows.models import Workflow

CURRENT = "current"  # pins the agent's latest version
READ_CHUNK = 2_000  # rows of the past run read at a time
# What a copy keeps of the run it copies (the rest: not run again, so no tokens, cost, calls,
# worker or error of its own).
COPIED = ("node_id", "agent", "agent_version", "round", "attempt", "backend", "model", "prompt", "resolved_inputs",
          "context_record", "resolution_failures", "compression", "decision", "gate", "status", "output")


def execution_rerun(*, source: Execution, from_node: str, step: int | None = None, outputs: Any = None,
                    agent_versions: Any = None, actor=None) -> Execution:
    """Start a run of `source`'s workflow that reuses `source`'s outputs upstream of
    `from_node` (`outputs` replaces some of them) and runs `from_node` and what follows it,
    each node with the agent version it ran in `source` unless `agent_versions` pins one."""
    outputs, agent_versions = json_object(outputs, "outputs"), json_object(agent_versions, "agent_versions")
    source = Execution.objects.select_related("workflow").get(pk=source.pk)  # its status now
    if source.trial:
        raise DocumentError(f"'{source.execution_id}' is a node tried alone, not a run of the workflow: "
                            "try the node again instead", where="execution")
    if source.status in (Execution.Status.PENDING, Execution.Status.RUNNING):
        raise IllegalTransition(f"execution {source.execution_id} is {source.status}: a run can be re-run once "
                                "it has ended or waits for a person", code="CONFLICT")
    refuse_without_details([source], operation="re-run")
    version, graph = run_graph(source.workflow)  # a re-run runs the latest version
    _check_shape(source, graph)
    input = input_checked(graph, source.input)  # as that version declares its inputs
    past, ran = _past_runs(source, graph)
    try:
        cut = split(graph.plan, past, from_node, step)
    except RerunRefused as refused:
        raise DocumentError(str(refused), where=refused.where) from None
    reused = list(cut.reused)
    allowed = {run.node_id for run in reused}
    decided = _gate_decisions(outputs, graph, allowed, _gate_records(reused, graph, outputs),
                              actor=actor, given="rerun",
                              to=lambda node_id: f"give its output in a re-run: re-run from '{node_id}' to ask its "
                                                 "deciders again")
    edited = _checked_outputs(outputs, graph, allowed=allowed, refusal=f"runs again in a re-run from '{from_node}'")
    versions = {node_id: version for node_id, version in ran.items() if node_id in cut.runs}
    pinned = _pins(agent_versions, graph, cut.runs, refusal=f"does not run in a re-run from '{from_node}'")
    versions.update({node_id: version.pk for node_id, version in pinned.items()})
    typed = _typed(reused, edited)
    # The decisions made before the re-run's start: on a state machine's path, a rejection too
    # (a failed step, which the re-run does not copy); elsewhere, those of the copies.
    before = recorded_path(past)[:cut.step - 1] if cut.step else reused
    state = _with_gate_feedback(_rebuilt_state(reused, edited, typed, graph), before, graph, decided)
    keys = [run.key for run in reused]
    inline = len(keys) <= settings.RERUN_COPY_INLINE_MAX
    with transaction.atomic():
        execution = Execution.objects.create(
            execution_id=new_execution_id("exec"), workflow=source.workflow, workflow_version=version,
            status=Execution.Status.RUNNING if inline else Execution.Status.PENDING,
            input=input, state=state, domain=source.domain, started_at=timezone.now() if inline else None,
            created_by=_user(actor), rerun_of=source, agent_versions=versions,
            rerun={"from_node": cut.start, "step": cut.step, "reused": _first_seen(reused), "copies": len(keys),
                   "edited": sorted(edited), "pinned": {node_id: v.version for node_id, v in pinned.items()}},
            copying=None if inline else {"source": source.pk, "keys": _ranges(set(keys), [run.key for run in past]),
                                         "of": len(keys), "copied": 0, "after": None, "edited": edited,
                                         "decided": decided},
        )
        # Asked again now that this transaction holds a key share of the past run's row (the
        # re-run's reference): retention's deletion, which locks it FOR UPDATE, either began
        # before (refused here) or waits and then keeps the run for this re-run.
        refuse_without_details([source], operation="re-run")
        _copy_typed(execution, typed, edited, graph, after=len(keys))
        if inline:
            _copy_runs(execution, keys, edited)
            _record_decisions(execution, decided)
            LockedRun.lock(execution).advance(completed=None)
        else:
            send_after_commit("executions.rerun_copy", execution.pk)
        record("execution.rerun", actor=actor, object_type="execution", object_id=source.execution_id,
               before={"status": source.status},
               after={"rerun": execution.execution_id, "from_node": cut.start, "step": cut.step,
                      "edited": {node_id: compact(output) for node_id, output in edited.items()},
                      "pinned": {node_id: v.version for node_id, v in pinned.items()}})
    return execution


def rerun_copy(*, execution_pk: int) -> str:
    """Copy the node runs a re-run reuses, RERUN_COPY_CHUNK at a time, then start the run:
    what a worker does for a re-run that reuses more than RERUN_COPY_INLINE_MAX node runs.

    1. Each chunk is one transaction under the execution's lock, which reads how far the
       copy has got (`copying`: how many are copied, and the past run's node run read
       last), copies the next of the past run's node runs in their order by the database
       (`copy_rows`), and writes how far it got: a worker killed mid-chunk copied nothing
       of it, and a second delivery of the task, at once or later, goes on where the first
       stopped, so each node run is copied exactly once.
    2. Once all are copied, the gates' decisions given with the re-run are recorded and the
       run starts (pending → running), in one transaction.
    A run cancelled meanwhile is left as it is. Returns what was done, for the worker's log."""
    while True:
        with transaction.atomic():
            try:
                run = LockedRun.lock(Execution(pk=execution_pk))
            except Execution.DoesNotExist:
                return "gone"
            execution = run.execution
            plan = execution.copying
            if execution.status != Execution.Status.PENDING or not plan:
                return f"not copying: {execution.status}"
            if plan["copied"] < plan["of"]:
                _copy_chunk(run, plan)
                continue
            _record_decisions(execution, plan["decided"])
            change_status(execution, Execution.STATES, Execution.Status.RUNNING, started_at=timezone.now(),
                          copying=None)
            run.advance(completed=None)
            return f"copied {plan['of']}, started"


def rerun_copies_resend(*, stale) -> list[int]:
    """Send again the copy of each re-run whose copy has not moved since `stale` (its worker
    died, or the message was lost): the sweep's. Claimed by a conditional update, so two
    sweeps send it once; a copy sent twice is made once (`rerun_copy`)."""
    sent = []
    waiting = Execution.objects.filter(status=Execution.Status.PENDING, copying__isnull=False, updated_at__lt=stale)
    for pk in waiting.values_list("pk", flat=True):
        if Execution.objects.filter(pk=pk, status=Execution.Status.PENDING, updated_at__lt=stale).update(
                updated_at=timezone.now()) == 1:
            send_after_commit("executions.rerun_copy", pk)
            sent.append(pk)
    return sent


def _copy_chunk(run: LockedRun, plan: dict) -> None:
    """Copy the next RERUN_COPY_CHUNK of the past run's node runs (those of them the re-run
    reuses: in `plan["keys"]`), after the one read last, in the past run's order; write how
    far the copy got."""
    execution = run.execution
    rows = NodeRun.objects.filter(execution_id=plan["source"]).order_by("sequence", "id")
    if plan["after"]:
        sequence, pk = plan["after"]
        rows = rows.filter(Q(sequence__gt=sequence) | Q(sequence=sequence, pk__gt=pk))
    read = list(rows.values_list("pk", "sequence")[:settings.RERUN_COPY_CHUNK])
    if not read:  # the past run's node runs are gone (it was deleted): nothing more can be copied
        run.end(Execution.Status.FAILED,
                f"the past run's node runs it reuses are gone: {plan['copied']:,} of {plan['of']:,} were copied")
        return
    starts = [first for first, _ in plan["keys"]]
    keys = [pk for pk, _ in read if _within(pk, plan["keys"], starts)]
    copied = _copy_runs(execution, keys, plan["edited"], after=plan["copied"])
    plan = {**plan, "copied": plan["copied"] + copied, "after": list(read[-1][::-1])}
    Execution.objects.filter(pk=execution.pk).update(copying=plan, updated_at=timezone.now())


def _ranges(chosen: set[int], every: list[int]) -> list[list[int]]:
    """`chosen`, some of `every` (the past run's node runs' keys), as the ranges [first, last]
    of keys that hold every one of `every` between them and no other: one range for the
    whole past run when it reuses all of it, a range more for each run it leaves out."""
    ranges: list[list[int]] = []
    inside = False
    for key in sorted(every):
        if key in chosen:
            if inside:
                ranges[-1][1] = key
            else:
                ranges.append([key, key])
            inside = True
        else:
            inside = False
    return ranges


def _within(key: int, ranges: list[list[int]], starts: list[int]) -> bool:
    at = bisect_right(starts, key) - 1
    return at >= 0 and key <= ranges[at][1]


def _first_seen(runs: list[PastRun]) -> list[str]:
    """The nodes whose runs are reused, each once, in the order the first of its runs is."""
    return list(dict.fromkeys(run.node_id for run in runs))


def node_try(*, workflow: Workflow, node_id: str, source: Execution | None = None, input: Any = None,
             state: Any = None, outputs: Any = None, agent_version: str | None = None, actor=None) -> Execution:
    """Run `node_id` alone, once, on a worker: the outputs it reads are `source`'s latest
    (if given) and `outputs` (typed by hand, or edited); `input` and `state` default to
    `source`'s. Returns the trial, an execution that ends when the node run does."""
    outputs = json_object(outputs, "outputs")
    version, graph = run_graph(workflow)  # a node is tried as the latest version has it
    if node_id not in graph.nodes:
        raise DocumentError(f"node '{node_id}' is not in workflow '{workflow.workflow_id}' "
                            f"(its nodes: {', '.join(graph.plan.nodes)})", where="node_id")
    refusal = graph.kinds[node_id].trial_refusal
    if refusal:
        raise DocumentError(f"node '{node_id}' {refusal}", where="node_id")
    if source is not None and source.workflow_id != workflow.pk:
        raise DocumentError(f"execution '{source.execution_id}' is a run of another workflow, not of "
                            f"'{workflow.workflow_id}'", where="execution")
    if source is not None:
        refuse_without_details([source], operation="the source of a node tried alone")
    for name, value in (("input", input), ("state", state)):
        if value is not None:
            json_object(value, name, storable=True)
    allowed = set(graph.plan.nodes) - {node_id}
    reused = []
    if source is not None:
        latest = {}
        rows = (source.node_runs.filter(status=NodeRun.Status.SUCCESS).exclude(node_id=node_id)
                .order_by("sequence", "id").values_list("pk", "node_id", "status", "kind"))
        for pk, past_node, status, kind in rows.iterator(chunk_size=READ_CHUNK):
            latest[past_node] = PastRun(past_node, status, kind, pk)
        reused = list(latest.values())
    decided = _gate_decisions(outputs, graph, allowed, _gate_records(reused, graph, outputs),
                              actor=actor, given="trial", to=lambda _: "give its output in a trial")
    edited = _checked_outputs(outputs, graph, allowed=allowed,
                              refusal="is the node tried: its output is what the trial makes")
    pinned = _pins({node_id: agent_version} if agent_version else {}, graph, {node_id},
                   refusal="is not the node tried")
    with transaction.atomic():
        execution = Execution.objects.create(
            execution_id=new_execution_id("try"), workflow=workflow, workflow_version=version,
            status=Execution.Status.RUNNING, trial=True,
            input=input if input is not None else (source.input if source else {}),
            state=state if state is not None else (source.state if source else {}),
            domain=source.domain if source else graph.settings.domain,
            started_at=timezone.now(), created_by=_user(actor),
            agent_versions={key: version.pk for key, version in pinned.items()},
            rerun={"from_node": node_id, "source": source.execution_id if source else None,
                   "reused": [run.node_id for run in reused if run.node_id not in edited], "edited": sorted(edited),
                   "pinned": {key: version.version for key, version in pinned.items()}},
        )
        if source is not None:
            refuse_without_details([source], operation="the source of a node tried alone")
        _copy_runs(execution, [run.key for run in reused], edited)
        _copy_typed(execution, _typed(reused, edited), edited, graph, after=len(reused))
        _record_decisions(execution, decided)
        LockedRun.lock(execution).advance(completed=None)
    return execution


def _past_runs(source: Execution, graph: Graph) -> tuple[list[PastRun], dict[str, int]]:
    """The past run's node runs in order, light (what a re-run decides by, keyed by their
    ids), read a chunk at a time: their records stay in the database, which copies them.
    With them, the agent version each node last ran with the agent the workflow gives it."""
    runs: list[PastRun] = []
    versions: dict[str, int] = {}
    names: dict[str, str] = {}
    rows = source.node_runs.order_by("sequence", "id").values_list(
        "pk", "node_id", "status", "kind", "agent_id", "agent_version_id")
    for pk, node_id, status, kind, agent_id, version_id in rows.iterator(chunk_size=READ_CHUNK):
        # One string for each name, however many runs carry it.
        node_id, status, kind = names.setdefault(node_id, node_id), names.setdefault(status, status), \
            names.setdefault(kind, kind)
        runs.append(PastRun(node_id, status, kind, pk))
        if version_id and agent_id == graph.plan.agents[node_id]:
            versions[node_id] = version_id
    return runs, versions


def _check_shape(source: Execution, graph: Graph) -> None:
    if source.workflow_version_id is None:
        raise DocumentError(f"execution {source.execution_id} did not record the version of the workflow it ran "
                            "(it was imported, or ran before workflows had versions): what it reused could not be "
                            "checked against the workflow as it is now", where="execution")
    changes = shape_changes(execution_graph(source).shape, graph.shape)
    if changes:
        raise DocumentError(f"workflow '{source.workflow.workflow_id}' has changed since {source.execution_id} "
                            "ran: " + "; ".join(changes), where="workflow", details={"changes": changes})


def _checked_outputs(outputs: dict, graph: Graph, *, allowed: set[str], refusal: str) -> dict[str, Any]:
    """Outputs given by a person, by node id: each for a node in `allowed`, storable, and
    holding to every contract of that node towards the nodes after it."""
    for node_id, output in outputs.items():
        where = f"outputs.{node_id}"
        if node_id not in graph.nodes:
            raise DocumentError(f"node '{node_id}' is not in the workflow", where=where)
        if node_id not in allowed:
            raise DocumentError(f"node '{node_id}' {refusal}; outputs can be given for "
                                + (", ".join(f"'{n}'" for n in sorted(allowed)) or "no node"), where=where)
        check_storable(output, where=where)
        check_contracts_of(graph, node_id, output, where=where)
    return outputs


def _gate_decisions(outputs: dict, graph: Graph, allowed: set[str], past: dict[str, dict], *, actor, given: str,
                    to: Callable[[str], str]) -> dict[str, dict]:
    """The gate records of the gates whose outputs a person gives here, by node id: each that
    person's decision, refused unless they are one of the gate's deciders (`to`: what they
    tried, for the refusal). `past`: the gate records of the copied runs the outputs take the
    place of. Asked before `_checked_outputs` (which refuses an output for a node that is not
    in the workflow or not reused), so that who may give a gate's output is answered before
    what it must hold."""
    decided = {}
    for node_id, output in outputs.items():
        node = graph.nodes.get(node_id)
        if node is None or not graph.kinds[node_id].decided_by_people or node_id not in allowed:
            continue
        decided[node_id] = gate_output_given(node_id=node_id, gate=past.get(node_id) or node.gate, output=output,
                                             actor=actor, given=given, to=to(node_id), where=f"outputs.{node_id}")
    return decided


def _gate_records(runs: list[PastRun], graph: Graph, outputs: dict) -> dict[str, dict]:
    """The gate records of those of `runs` (light, keyed by their ids) whose gates are given
    an output here, by node id (the latest run of each), read for those runs alone."""
    keys = [run.key for run in runs if run.node_id in outputs and run.node_id in graph.kinds
            and graph.kinds[run.node_id].decided_by_people]
    if not keys:
        return {}
    rows = NodeRun.objects.filter(pk__in=keys, gate__isnull=False).order_by("sequence", "id")
    # The latest run of each node last (their order), so its record is the one kept.
    return {node_id: gate for node_id, gate in rows.values_list("node_id", "gate") if gate is not None}


def _record_decisions(execution: Execution, decided: dict[str, dict]) -> None:
    """Put on each edited copy of a gate the decision of the person who gave its output, in
    place of the decision it copied (which stays on the past run's node run)."""
    for node_id, gate in decided.items():
        execution.node_runs.filter(node_id=node_id, kind=NodeRun.Kind.EDITED).update(gate=gate)


def _pins(asked: dict, graph: Graph, runs: set[str] | frozenset[str], *, refusal: str) -> dict[str, AgentVersion]:
    """node id → the AgentVersion its runs use: a version name of the node's agent, or
    `current` (its latest)."""
    pinned = {}
    for node_id, name in asked.items():
        where = f"agent_versions.{node_id}"
        if node_id not in graph.nodes:
            raise DocumentError(f"node '{node_id}' is not in the workflow", where=where)
        if node_id not in runs:
            raise DocumentError(f"node '{node_id}' {refusal}: only a node that runs can be pinned", where=where)
        if not graph.kinds[node_id].calls_agent:
            raise DocumentError(f"node '{node_id}' {graph.kinds[node_id].described} and its agent is never called, "
                                "so it has no version to pin", where=where)
        if not isinstance(name, str) or not name:
            raise DocumentError(f"is a version name of the node's agent, or '{CURRENT}'", where=where)
        check_storable(name, where=where)  # it is looked up in the database
        agent = graph.agents[graph.plan.agents[node_id]]
        versions = AgentVersion.objects.filter(agent=agent)
        version = versions.first() if name == CURRENT else versions.filter(version=name).first()
        if version is None:
            known = ", ".join(versions.values_list("version", flat=True)) or "none"
            raise DocumentError(f"agent '{agent.agent_id}' has no version '{echo(name)}' (its versions: {known})",
                                where=where)
        pinned[node_id] = version
    return pinned


def _typed(runs: list[PastRun], edited: dict[str, Any]) -> list[str]:
    """The nodes whose outputs are given with no run of theirs to copy (typed by hand)."""
    copied = {run.node_id for run in runs}
    return [node_id for node_id in edited if node_id not in copied]


def _copy_runs(execution: Execution, keys: list[int], edited: dict[str, Any], *, after: int = 0) -> int:
    """Copy the past run's node runs `keys` into `execution` as reused (edited: with the
    output given instead), in that order, numbered from `after` + 1. The database copies the
    rows (`copy_rows`): their records never come into this process."""
    now = timezone.now()
    # Each copy starts a step of the new run (a state machine's steps taken count them).
    sql: dict[str, tuple[str, list[Any]]] = {"reused_from": ("r.id", []), "sequence": ("k.position + %s", [after]),
           "step": ("k.position + %s", [after])}
    if edited:
        names = list(edited)
        among = f"r.node_id IN ({', '.join(['%s'] * len(names))})"
        sql["kind"] = (f"CASE WHEN {among} THEN %s ELSE %s END", [*names, NodeRun.Kind.EDITED, NodeRun.Kind.REUSED])
        sql["status"] = (f"CASE WHEN {among} THEN %s ELSE r.status END", [*names, NodeRun.Status.SUCCESS])
        given = [db_values(NodeRun, {"output": edited[name]})[0] for name in names]
        sql["output"] = ("CASE r.node_id " + " ".join(["WHEN %s THEN %s"] * len(names)) + " ELSE r.output END",
                         [value for pair in zip(names, given, strict=True) for value in pair])
    return copy_rows(NodeRun, keys, copied=COPIED, sql=sql, values={
        "execution": execution.pk, "kind": NodeRun.Kind.REUSED, "tokens_in": 0, "tokens_out": 0, "duration_ms": 0,
        "started_at": now, "completed_at": now})


def _copy_typed(execution: Execution, typed: list[str], edited: dict[str, Any], graph: Graph, *, after: int) -> None:
    """The outputs given for nodes with no run to copy, as edited runs after the copies."""
    now = timezone.now()
    NodeRun.objects.bulk_create([
        NodeRun(execution=execution, node_id=node_id, agent_id=graph.plan.agents[node_id], kind=NodeRun.Kind.EDITED,
                status=NodeRun.Status.SUCCESS, output=edited[node_id], backend="manual", tokens_in=0, tokens_out=0,
                duration_ms=0, started_at=now, completed_at=now, sequence=after + offset, step=after + offset)
        for offset, node_id in enumerate(typed, start=1)
    ])


def _rebuilt_state(runs: list[PastRun], edited: dict[str, Any], typed: list[str], graph: Graph) -> dict:
    """The state a re-run starts with: what its copies of `runs` (and the outputs `typed` by
    hand after them) put in it, in order, as the nodes' output mappings put them in. Each
    node's output mapping sets (or removes) the same keys whatever its output, so it is what
    the last successful copy of each node puts in it: the outputs of those runs alone are read."""
    last = {}
    for position, run in enumerate(runs):
        if graph.nodes[run.node_id].output_mapping and (run.node_id in edited or run.status == NodeRun.Status.SUCCESS):
            last[run.node_id] = (position, run.key)
    last.update({node_id: (len(runs) + offset, None) for offset, node_id in enumerate(typed)})
    keys = [key for node_id, (_, key) in last.items() if node_id not in edited]
    stored: dict[int, Any] = {}
    for start in range(0, len(keys), READ_CHUNK):
        stored.update(NodeRun.objects.filter(pk__in=keys[start:start + READ_CHUNK]).values_list("pk", "output"))
    state: dict = {}
    for node_id, (_, key) in sorted(last.items(), key=lambda item: item[1][0]):
        state = mapped_state(state, graph.nodes[node_id], edited[node_id] if node_id in edited else stored[key])
    return state


def _with_gate_feedback(state: dict, runs: list[PastRun], graph: Graph, decided: dict[str, dict]) -> dict:
    """`state` with the `gate_feedback` of the last decision among the gate runs of `runs`
    (engine/gates.py), as the past run had it when the re-run's first node ran: a redraft
    re-run after a rejection reads why it was rejected. A copy given its output here carries
    the decision of the person who gave it (`decided`)."""
    keys = [run.key for run in runs if run.node_id in graph.kinds and graph.kinds[run.node_id].decided_by_people]
    if not keys:
        return state
    rows = NodeRun.objects.filter(pk__in=keys, gate__isnull=False).order_by("-sequence", "-id")
    for node_id, gate in rows.values_list("node_id", "gate").iterator():
        if gate and gate.get("decision"):
            return {**state, gates.FEEDBACK: gates.feedback_of(node_id, decided.get(node_id, gate))}
    return state


def _user(actor):
    return actor if getattr(actor, "pk", None) else None
