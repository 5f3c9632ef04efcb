"""The shapes of derive requests (core-data-structures §6), and what their router takes and
gives besides.

Written once, here, as agents' shapes are in `agents/schemas.py`: the JSON Schema an
imported or posted request is checked against is generated from them
(`engine.json_schema.document_schema`), and the router answers with them, so
`derive_request_document` fills the same shape the OpenAPI schema describes.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import ConfigDict

from agents.schemas import Name
from engine.shapes import ID_PATTERN, Identifier, Omittable, Shape

Trigger = Literal["quality_issue", "capability_gap", "frequency_threshold"]
DeriveStatus = Literal["pending", "approved", "rejected"]


class DeriveRequestFilters(Schema):
    status: DeriveStatus | None = None
    trigger: Trigger | None = None
    parent_agent_id: str | None = Field(None, pattern=ID_PATTERN)


class Specialization(Shape):
    new_name: Name
    domain_focus: Omittable[Annotated[str, Field(max_length=200)]] = None
    additional_skills: Omittable[list[str]] = None
    additional_constraints: Omittable[list[str]] = None


class DeriveRequestIn(Shape):
    """A derive request as a person raises it; the §6 document without what the server sets
    (other keys are ignored)."""

    model_config = ConfigDict(extra="ignore")

    derive_request_id: Omittable[Identifier] = Field(None, description="generated when absent")
    parent_agent_id: Identifier
    trigger: Trigger
    trigger_context: Omittable[dict[str, Any]] = None
    specialization: Specialization


class DeriveRequestDocument(DeriveRequestIn):
    """A derive request as core-data-structures §6."""

    model_config = ConfigDict(extra="forbid")

    derive_request_id: Identifier
    status: Omittable[DeriveStatus] = None
    result_agent_id: Identifier | None = None
    evidence: Omittable[dict[str, Any]] = Field(
        None, description="what the decision rested on: the parent-vs-child experiments, the dataset version, "
                          "each scorer's delta and verdict when decided")


class DecisionIn(Schema):
    comment: str = Field("", max_length=5000)
    evidence: str | None = Field(None, max_length=100, description="the id of the request's child experiment (of a "
                                 "parent-vs-child pair) the decision rests on; its figures are recorded with it")


class DeriveRequestEventOut(Schema):
    event: str = Field(..., description="raised, approved, rejected, child_created or child_failed")
    status: DeriveStatus = Field(..., description="the request's status after the event")
    actor: str = Field(..., description="a username, or rule:<trigger> for a request a rule raised")
    at: str
    comment: str


class DeriveRequestOut(DeriveRequestDocument):
    """A derive request as core-data-structures §6, plus who raised and who decided it."""

    created_at: str
    created_by: str
    decided_by: str | None = Field(..., description="the approver's username; null while pending")
    decided_at: str | None
    comment: str
    result_error: str = Field("", description="why creating the child agent failed, if it did")
    history: list[DeriveRequestEventOut] = Field(default_factory=list, description="every event, oldest first")
