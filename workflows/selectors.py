"""Reads for blueprints and workflows: lists, one by id, and validation without saving."""
from __future__ import annotations

import re
from typing import Any

from django.db.models import Count, Q, QuerySet

from core.errors import NotFound
from engine.inputs import inferred_input_schema
from engine.workflow_diff import workflow_diff
from workflows.documents import workflow_document
from workflows.models import Blueprint, Workflow, WorkflowVersion
from workflows.services import workflow_findings, workflow_version_get

# The identifier validator's pattern (agents.models.identifier): an id that does not match
# cannot be stored, so it is "not found" without asking the database (which may refuse
# some characters, such as NUL, outright).
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,99}$")


def blueprint_list() -> QuerySet[Blueprint]:
    return Blueprint.objects.annotate(
        agent_count=Count("agents", distinct=True), contract_count=Count("contracts", distinct=True),
    ).order_by("blueprint_id")


def blueprint_get(blueprint_id: str) -> Blueprint:
    blueprint = Blueprint.objects.filter(blueprint_id=blueprint_id).first() if ID_PATTERN.match(blueprint_id) else None
    if blueprint is None:
        raise NotFound(f"no blueprint '{blueprint_id}'", details={"blueprint_id": blueprint_id})
    return blueprint


def workflow_list(*, topology: str | None = None, q: str | None = None) -> QuerySet[Workflow]:
    workflows = Workflow.objects.annotate(node_count=Count("nodes")).order_by("workflow_id")
    if topology:
        workflows = workflows.filter(topology=topology)
    if q:
        workflows = workflows.filter(Q(workflow_id__icontains=q) | Q(name__icontains=q))
    return workflows


def workflow_get(workflow_id: str) -> Workflow:
    workflow = Workflow.objects.filter(workflow_id=workflow_id).first() if ID_PATTERN.match(workflow_id) else None
    if workflow is None:
        raise NotFound(f"no workflow '{workflow_id}'", details={"workflow_id": workflow_id})
    return workflow


def workflow_check(*, workflow_id: str, document: dict[str, Any] | None) -> dict[str, Any]:
    """The problems of `document` as the definition of workflow `workflow_id` (or, without a
    document, of the stored workflow), each naming its node or transition; its warnings
    (engine/dataflow.py), which never refuse a save; and the draft of its `input_schema` its
    nodes' `$.input` paths suggest (engine/inputs.py). Saves nothing."""
    if not document:
        document = workflow_document(workflow_get(workflow_id))
    elif "workflow_id" not in document:
        document = {"workflow_id": workflow_id, **document}
    problems, warnings = workflow_findings(document, warnings=True)
    if document["workflow_id"] != workflow_id:
        problems.insert(0, {"where": "workflow_id", "node": None, "transition": None, "code": "ID_MISMATCH",
                            "message": f"is {document['workflow_id']!r}, but this is workflow '{workflow_id}'"})
    return {"valid": not problems, "problems": problems, "warnings": warnings,
            "inferred_input_schema": inferred_input_schema(document)}


def workflow_versions(workflow: Workflow) -> QuerySet[WorkflowVersion]:
    """The workflow's versions, newest first, each with how many runs ran it (`runs`); a trial
    (one node tried alone) is not a run of its version, nor is an experiment's item counted here."""
    ordinary = Q(executions__trial=False, executions__experiment="")
    return workflow.versions.annotate(runs=Count("executions", filter=ordinary)).order_by("-number")


def workflow_version(workflow: Workflow, number: int) -> WorkflowVersion:
    """One version, with its `runs`; an unknown number is not found, naming the versions there are."""
    version = workflow_version_get(workflow=workflow, number=number)
    version.runs = version.executions.filter(trial=False, experiment="").count()  # type: ignore[attr-defined]  # as workflow_versions annotates it
    return version


def workflow_versions_diff(workflow: Workflow, a: int, b: int) -> dict[str, Any]:
    """What changed from version `a` to version `b` (engine.workflow_diff), with their numbers."""
    first, second = workflow_version_get(workflow=workflow, number=a), workflow_version_get(workflow=workflow, number=b)
    return {"a": first.number, "b": second.number, **workflow_diff(first.document, second.document)}
