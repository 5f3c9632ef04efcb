from datetime import datetime

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
