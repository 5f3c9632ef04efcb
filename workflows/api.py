"""Blueprints (§3.1) and workflows (§4.1) in their seed shapes, and validation without saving
(a node's context plan before it runs is an operation of executions/api.py).

Everyone signed in reads and validates (neither changes anything); authors create,
replace, delete and restore a version. Every save that changes a workflow adds a version;
no operation changes or deletes one.
"""

from typing import Any, TypedDict

from ninja import Body, Field, Query, Router, Schema, Status
from ninja.pagination import paginate

from core.api_support import Page, responses
from core.roles import AUTHOR, require_role
from workflows import selectors, services
from workflows.documents import blueprint_document, workflow_document
from workflows.schemas import (
    BlueprintDocument,
    BlueprintSummaryOut,
    Topology,
    ValidationOut,
    WorkflowDiffOut,
    WorkflowDocument,
    WorkflowSummaryOut,
    WorkflowVersionDocumentOut,
    WorkflowVersionOut,
)

router = Router(tags=["workflows"])



class DocumentOptions(TypedDict):
    by_alias: bool
    exclude_unset: bool


# Documents are answered as stored: a key the document leaves out stays out (a node with
# no output_schema has none, rather than null), and `from` keeps its name.
DOCUMENT: DocumentOptions = {"by_alias": True, "exclude_unset": True}
BLUEPRINT_BODY = Body(..., description="a blueprint document (core-data-structures §3.1)")
WORKFLOW_BODY = Body(..., description="a workflow document (core-data-structures §4.1)")


class WorkflowFilters(Schema):
    topology: Topology | None = None
    q: str | None = Field(None, max_length=200, pattern=r"^[^\x00]*$",
                          description="part of the workflow's id or name, any case")


# -- blueprints ------------------------------------------------------------------------


@router.get("/blueprints", response=responses(200, list[BlueprintSummaryOut]), summary="Blueprints")
@paginate(Page)
def blueprints_list(request):
    return selectors.blueprint_list()


@router.get("/blueprints/{blueprint_id}", response=responses(200, BlueprintDocument), **DOCUMENT,
            summary="A blueprint: its agents and their contracts")
def blueprints_get(request, blueprint_id: str):
    return blueprint_document(selectors.blueprint_get(blueprint_id))


@router.post("/blueprints", response=responses(201, BlueprintDocument), **DOCUMENT, summary="Create a blueprint (authors)")
def blueprints_create(request, payload: dict[str, Any] = BLUEPRINT_BODY):
    require_role(request.user, AUTHOR, to="create blueprints")
    blueprint = services.blueprint_create(document=payload, actor=request.user.get_username())
    return Status(201, blueprint_document(blueprint))


@router.put("/blueprints/{blueprint_id}", response=responses(200, BlueprintDocument), **DOCUMENT,
            summary="Replace a blueprint (authors)")
def blueprints_replace(request, blueprint_id: str, payload: dict[str, Any] = BLUEPRINT_BODY):
    require_role(request.user, AUTHOR, to="change blueprints")
    blueprint = services.blueprint_replace(blueprint=selectors.blueprint_get(blueprint_id), document=payload,
                                           actor=request.user.get_username())
    return blueprint_document(blueprint)


# -- workflows -------------------------------------------------------------------------


@router.get("/workflows", response=responses(200, list[WorkflowSummaryOut]), summary="Workflows")
@paginate(Page)
def workflows_list(request, filters: Query[WorkflowFilters]):
    return selectors.workflow_list(topology=filters.topology, q=filters.q)


@router.get("/workflows/{workflow_id}", response=responses(200, WorkflowDocument), **DOCUMENT, summary="A workflow")
def workflows_get(request, workflow_id: str):
    return workflow_document(selectors.workflow_get(workflow_id))


@router.post("/workflows", response=responses(201, WorkflowDocument), **DOCUMENT,
             summary="Create a workflow (authors); an invalid one is refused with every problem")
def workflows_create(request, payload: dict[str, Any] = WORKFLOW_BODY):
    require_role(request.user, AUTHOR, to="create workflows")
    workflow = services.workflow_create(document=payload, actor=request.user.get_username())
    return Status(201, workflow_document(workflow))


@router.put("/workflows/{workflow_id}", response=responses(200, WorkflowDocument), **DOCUMENT,
            summary="Replace a workflow's definition (authors)")
def workflows_replace(request, workflow_id: str, payload: dict[str, Any] = WORKFLOW_BODY):
    require_role(request.user, AUTHOR, to="change workflows")
    workflow = services.workflow_replace(workflow=selectors.workflow_get(workflow_id), document=payload,
                                         actor=request.user.get_username())
    return workflow_document(workflow)


@router.delete("/workflows/{workflow_id}", response=responses(204, None),
               summary="Delete a workflow that was never run (authors)")
def workflows_delete(request, workflow_id: str):
    require_role(request.user, AUTHOR, to="delete workflows")
    services.workflow_delete(workflow=selectors.workflow_get(workflow_id), actor=request.user)
    return Status(204, None)


@router.post("/workflows/{workflow_id}/validate", response=responses(200, ValidationOut),
             summary="Validate a workflow document, or the stored workflow, without saving: problems refuse a save, "
                     "warnings (data that flows nowhere) do not")
def workflows_validate(request, workflow_id: str, payload: dict[str, Any] | None = Body(
        None, description="a workflow document; none (or {}) validates the stored workflow")):
    return selectors.workflow_check(workflow_id=workflow_id, document=payload)


# -- versions --------------------------------------------------------------------------


class DiffQuery(Schema):
    a: int = Field(..., ge=1, description="the number of the version compared from")
    b: int = Field(..., ge=1, description="the number of the version compared to")


@router.get("/workflows/{workflow_id}/versions", response=responses(200, list[WorkflowVersionOut]),
            summary="A workflow's versions, newest first, with who saved each, when, and how many runs ran it")
@paginate(Page)
def workflow_versions_list(request, workflow_id: str):
    return selectors.workflow_versions(selectors.workflow_get(workflow_id))


@router.get("/workflows/{workflow_id}/versions/diff", response=responses(200, WorkflowDiffOut), by_alias=True,
            summary="What changed between two versions: nodes, transitions, settings and the JSON diff")
def workflow_versions_diff(request, workflow_id: str, query: Query[DiffQuery]):
    return selectors.workflow_versions_diff(selectors.workflow_get(workflow_id), query.a, query.b)


@router.get("/workflows/{workflow_id}/versions/{number}", response=responses(200, WorkflowVersionDocumentOut),
            summary="One version of a workflow, with its document")
def workflow_versions_get(request, workflow_id: str, number: int):
    return selectors.workflow_version(selectors.workflow_get(workflow_id), number)


@router.post("/workflows/{workflow_id}/versions/{number}/restore", response=responses(201, WorkflowVersionDocumentOut),
             summary="Make an old version the workflow's definition again, as a new version (authors)")
def workflow_versions_restore(request, workflow_id: str, number: int):
    require_role(request.user, AUTHOR, to="restore workflow versions")
    workflow = selectors.workflow_get(workflow_id)
    restored = services.workflow_version_restore(workflow=workflow, number=number, actor=request.user.get_username())
    return Status(201, selectors.workflow_version(workflow, restored.number))
