from datetime import datetime
from typing import Any

from ninja import Field, Schema


class MeOut(Schema):
    username: str
    roles: list[str]


class TokenIn(Schema):
    name: str = Field(..., min_length=1, max_length=100, pattern=r"^[^\x00]*$",
                      description="what the token is for, e.g. 'nightly import'")


class TokenOut(Schema):
    id: int
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class TokenCreatedOut(TokenOut):
    token: str = Field(..., description="shown once: only its digest is stored")


class UserIn(Schema):
    username: str = Field(..., min_length=1, max_length=150, pattern=r"^[\w.@+-]+$")
    password: str = Field(..., min_length=8, max_length=128)
    roles: list[str] = Field(default_factory=list, description="any of author, approver, admin (everyone is a viewer)")


class RolesIn(Schema):
    roles: list[str]


class UserOut(Schema):
    id: int
    username: str
    is_active: bool
    roles: list[str]


class BackendOut(Schema):
    name: str
    kind: str
    model: str = ""
    base_url: str = ""
    timeout_seconds: float | None = None


class AuditFiltersIn(Schema):
    actor: str = Field("", max_length=150, description="a username: the entries of what they did")
    object_type: str = Field("", max_length=60, description="e.g. agent, workflow, execution, derive_request, user, token")
    object_id: str = Field("", max_length=200, description="the object's id, e.g. an agent_id or an execution_id")
    action: str = Field("", max_length=60, description="e.g. workflow.update, gate.decide, user.roles")
    since: str = Field("", max_length=40, description="an ISO date or datetime (UTC when no offset): entries at or after it")
    until: str = Field("", max_length=40, description="an ISO date or datetime (UTC when no offset): entries before it; "
                                                      "a date alone takes that whole day")


class AuditEntryOut(Schema):
    id: int
    at: datetime
    actor: str | None = Field(..., description="who made the change (their username); null for the product itself")
    actor_id: int | None
    via: str = Field(..., description="where it came from: page, api_token, workflow_key, webhook, schedule, command "
                                      "or system")
    via_detail: str = Field(..., description="which: an address, a token's prefix, a command's name …")
    action: str
    object_type: str
    object_id: str
    before: Any = Field(None, description="the values before the change (the keys that changed); null: nothing before")
    after: Any = Field(None, description="the values after it; null: nothing after (a delete)")
