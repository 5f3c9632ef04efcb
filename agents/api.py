"""Agents (core-data-structures §2.1) with their versions and lineage; derive requests' (§6)
operations are in `quality/derive_requests/api.py`.

Everyone signed in reads; authors create, edit and deprecate agents.
"""
from typing import Any

from ninja import Body, Query, Router, Status
from ninja.pagination import paginate

from agents import selectors, services
from agents.schemas import AgentDetailOut, AgentDocument, AgentFilters, AgentVersionContentOut
from core.api_support import Page, responses
from core.roles import AUTHOR, require_role

router = Router(tags=["agents"])
# Agent answers use exclude_unset so each document passes through exactly as agent_document
# made it (an optional key such as context_limits.data_area appears only when it is set).

AGENT_DOCUMENT = Body(..., description="an agent document (core-data-structures §2.1); `metadata`, `versions` "
                                       "and `lineage.ancestors` are set by the server and ignored")


def _document_body(**overrides: Any) -> dict[str, Any]:
    """Describe a `dict` body by the agent shape, so the OpenAPI schema says what a document is.

    It is the detail's shape, read-only additions included: a GET's answer may be PUT back.
    Its parts are the components the answers already describe.
    """
    shape = AgentDetailOut.model_json_schema(ref_template="#/components/schemas/{model}")
    shape.pop("$defs", None)
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": shape | overrides}}}}


@router.get("/agents", response=responses(200, list[AgentDocument]), exclude_unset=True, summary="Agents, filtered")
@paginate(Page)
def agents_list(request, filters: AgentFilters = Query(...)):
    return selectors.agent_list(**filters.dict())


@router.get("/agents/{agent_id}", response=responses(200, AgentDetailOut), exclude_unset=True,
            summary="An agent, its versions and its lineage")
def agents_detail(request, agent_id: str):
    return selectors.agent_detail(agent_id)


@router.get("/agents/{agent_id}/versions/{version}", response=responses(200, AgentVersionContentOut),
            summary="What one version of an agent froze")
def agents_version(request, agent_id: str, version: str):
    return selectors.agent_version_get(agent_id, version)


@router.post("/agents", response=responses(201, AgentDetailOut), exclude_unset=True, summary="Create an agent (authors)",
             openapi_extra=_document_body())
def agents_create(request, payload: dict[str, Any] = AGENT_DOCUMENT):
    require_role(request.user, AUTHOR, to="create agents")
    agent = services.agent_create(document=payload, user=request.user)
    return Status(201, selectors.agent_detail(agent.agent_id))


@router.put("/agents/{agent_id}", response=responses(200, AgentDetailOut), exclude_unset=True,
            summary="Edit an agent with a whole document (authors); a changed agent gets a new version",
            description="Left out, `status` and `lineage.parent_id` keep their values; every other field "
                        "takes the value the document gives, or its default.",
            openapi_extra=_document_body(required=["name"]))
def agents_update(request, agent_id: str, payload: dict[str, Any] = AGENT_DOCUMENT):
    require_role(request.user, AUTHOR, to="edit agents")
    agent = services.agent_update(agent=selectors.agent_get(agent_id), document=payload, user=request.user)
    return selectors.agent_detail(agent.agent_id)


@router.post("/agents/{agent_id}/deprecate", response=responses(200, AgentDetailOut), exclude_unset=True,
             summary="Deprecate an agent (authors)")
def agents_deprecate(request, agent_id: str):
    require_role(request.user, AUTHOR, to="deprecate agents")
    agent = services.agent_deprecate(agent=selectors.agent_get(agent_id), user=request.user)
    return selectors.agent_detail(agent.agent_id)
