"""An execution that ran elsewhere (or earlier), imported as a record in the §5 shape."""
from __future__ import annotations

from typing import Any

from django.db import transaction

from agents.services import get_agent
from core.errors import DocumentError
from core.jsonutil import check_shape, parse_datetime
from executions.documents import CONVERSATION_KEYS, EXECUTION_SHAPE, execution_document
from executions.models import Execution, NodeRun
from workflows.models import Workflow

RESERVED_IDS = {"compare"}  # a path under /executions/ that is a page, not a run
NOT_FAILED = ("success", "awaiting_approval")  # a tool call's statuses that are not an error code


@transaction.atomic
def execution_import_document(document: dict[str, Any], *, actor: str = "") -> tuple[Execution, str]:
    """Record an execution that ran elsewhere (or earlier) in the §5 shape.

    An execution is a record of what happened: importing the same record again changes
    nothing, and a record that contradicts a stored one is refused rather than rewritten.
    """
    check_shape(document, EXECUTION_SHAPE, "execution")
    try:
        workflow = Workflow.objects.get(workflow_id=document["workflow_ref"])
    except Workflow.DoesNotExist:
        raise DocumentError(f"workflow '{document['workflow_ref']}' does not exist", where="workflow_ref") from None
    node_ids = set(workflow.nodes.values_list("node_id", flat=True))
    started_at = parse_datetime(document.get("started_at"), "started_at")
    completed_at = parse_datetime(document.get("completed_at"), "completed_at")
    if started_at and completed_at and completed_at < started_at:
        raise DocumentError("is before started_at", where="completed_at")

    runs = []
    attempts: dict[str, int] = {}
    for index, result in enumerate(document.get("results", [])):
        where = f"results[{index}]"
        if result["node_id"] not in node_ids:
            raise DocumentError(f"node '{result['node_id']}' is not a node of workflow '{workflow.workflow_id}'", where=f"{where}.node_id")
        agent = get_agent(result["agent_ref"], where=f"{where}.agent_ref")
        attempts[result["node_id"]] = attempts.get(result["node_id"], 0) + 1
        runs.append(
            NodeRun(
                node_id=result["node_id"],
                agent=agent,
                agent_version=agent.versions.filter(version=agent.version).first(),
                status=result["status"],
                attempt=attempts[result["node_id"]],
                sequence=index,
                output=result.get("output"),
                duration_ms=result.get("duration_ms"),
                turns=result.get("turns") or [],
                tool_calls=result.get("tool_calls") or [],
            )
        )
        _check_conversation(result, where)

    if document["execution_id"] in RESERVED_IDS:
        raise DocumentError(f"'{document['execution_id']}' names a page (/executions/{document['execution_id']}/), "
                            "not a run: choose another id", where="execution_id")
    existing = Execution.objects.filter(execution_id=document["execution_id"]).first()
    if existing is not None:
        if _comparable(execution_document(existing)) == _comparable(document):
            return existing, "unchanged"
        raise DocumentError(
            f"execution '{existing.execution_id}' is already recorded ({existing.status}) and differs; "
            "executions are records and are not rewritten by import",
            where="execution_id",
        )
    execution = Execution.objects.create(
        execution_id=document["execution_id"],
        workflow=workflow,
        status=document["status"],
        input=document.get("input", {}),
        started_at=started_at,
        completed_at=completed_at,
    )
    for run in runs:
        run.execution = execution
    NodeRun.objects.bulk_create(runs)
    return execution, "created"


def _check_conversation(result: dict[str, Any], where: str) -> None:
    """What the shape cannot say of a node run's turns and tool calls: the turns are
    numbered 1, 2, … in order; each call has its own id, was asked for by a turn that
    names it, and its status agrees with its error code (success or awaiting_approval and
    none, or the code); only a kept result is there."""
    turns, calls = result.get("turns") or [], result.get("tool_calls") or []
    if calls and not turns:
        raise DocumentError("has tool_calls but no turns: each call is asked for by a model turn", where=f"{where}.turns")
    asked: dict[str, int] = {}
    for index, turn in enumerate(turns):
        if turn["turn"] != index + 1:
            raise DocumentError(f"is turn {turn['turn']}, expected {index + 1}: turns are numbered in order from 1",
                                where=f"{where}.turns[{index}].turn")
        for call_id in turn["tool_call_ids"]:
            if call_id in asked:
                raise DocumentError(f"tool call '{call_id}' is asked for by turns {asked[call_id]} and {turn['turn']}",
                                    where=f"{where}.turns[{index}].tool_call_ids")
            asked[call_id] = turn["turn"]
    seen: set[str] = set()
    for index, call in enumerate(calls):
        at = f"{where}.tool_calls[{index}]"
        if call["id"] in seen:
            raise DocumentError(f"tool call id '{call['id']}' is used twice", where=f"{at}.id")
        seen.add(call["id"])
        if asked.get(call["id"]) != call["turn"]:
            raise DocumentError(f"turn {call['turn']} does not list tool call '{call['id']}' in its tool_call_ids",
                                where=f"{at}.turn")
        if call["error_code"] != ("" if call["status"] in NOT_FAILED else call["status"]):
            raise DocumentError(f"error_code '{call['error_code']}' does not agree with status '{call['status']}' "
                                "(a successful or waiting call has none; a failed one has its status as its code)",
                                where=f"{at}.error_code")
        if call.get("result") is not None and not call.get("result_kept"):
            raise DocumentError("holds a result but result_kept is false", where=f"{at}.result")
        parse_datetime(call.get("started_at"), f"{at}.started_at")


def _comparable(document: dict[str, Any]) -> dict[str, Any]:
    """A document with datetimes normalised and absent optional keys filled, for equality."""
    normal = dict(document)
    for key in ("started_at", "completed_at"):
        value = parse_datetime(normal.get(key), key)
        normal[key] = value.isoformat() if value else None
    normal.setdefault("input", {})
    normal["results"] = [
        {"output": None, "duration_ms": None, **{key: value for key, value in result.items()
                                                 if key not in CONVERSATION_KEYS or value}}
        for result in normal.get("results", [])
    ]
    return normal
