"""The bodies and answers of the triggers' operations."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Field, Schema
from pydantic import ConfigDict

from executions.schemas import ExecutionOut


class WebhookIn(Schema):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., min_length=1, max_length=100)
    version: int | None = Field(None, ge=1, description="the workflow version its runs run; null: always the latest")
    input_mapping: dict[str, str] = Field(
        default_factory=dict, description="run input field → RFC 9535 JSONPath into the request's body; empty: the "
                                          "body (an object) is the input")
    idempotency_path: str = Field("", max_length=2000, description="a JSONPath into the body whose value (text or an "
                                                                   "integer) is the idempotency key, when the "
                                                                   "request sends no Idempotency-Key header")
    callback_url: str = Field("", max_length=2000, description="where each run's summary is POSTed when it ends; "
                                                               "its host must be in CALLBACK_ALLOWED_HOSTS")
    max_body_bytes: int | None = Field(None, ge=1, description="the largest body it takes (413 above); by default "
                                                               "WEBHOOK_MAX_BODY_BYTES")


class WebhookOut(Schema):
    hook_id: str
    name: str
    url: str = Field(..., description="where to POST: signed with the secret, outside sign-in")
    version: int | None
    input_mapping: dict[str, str]
    idempotency_path: str
    callback_url: str
    max_body_bytes: int
    created_by: str | None
    created_at: datetime
    disabled_at: datetime | None


class WebhookCreatedOut(WebhookOut):
    secret: str = Field(..., description="shown once: the HMAC-SHA256 signing secret of requests (and of callbacks)")


class KeyIn(Schema):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., min_length=1, max_length=100)
    rate_per_minute: int | None = Field(None, ge=1, le=100_000, description="requests a minute it may make (429 "
                                                                            "above); by default "
                                                                            "WORKFLOW_KEY_RATE_PER_MINUTE")
    callback_url: str = Field("", max_length=2000, description="where each run's summary is POSTed when it ends, "
                                                               "unless the run names its own")


class KeyOut(Schema):
    prefix: str
    name: str
    rate_per_minute: int
    callback_url: str
    created_by: str | None
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


class KeyCreatedOut(KeyOut):
    key: str = Field(..., description="shown once: `Authorization: Bearer <key>`; only its digest is stored")
    callback_secret: str = Field(..., description="shown once: the HMAC-SHA256 secret its runs' callbacks are "
                                                  "signed with")


class RunIn(Schema):
    model_config = ConfigDict(extra="forbid")

    input: dict[str, Any] = Field(default_factory=dict, description="the run's input")
    workflow_version: int | None = Field(None, ge=1, description="the version to run; by default the latest")
    callback_url: str | None = Field(None, max_length=2000, description="a workflow key's run only: where its "
                                                                        "summary is POSTed when it ends, instead of "
                                                                        "the key's")


class RunStartedOut(Schema):
    execution_id: str
    status: str
    url: str = Field(..., description="the run's page")
    api_url: str = Field(..., description="the run in the API, readable with the same credentials")
    repeated: bool = Field(..., description="true: an earlier request with this Idempotency-Key started it")


class DeliveryOut(Schema):
    url: str
    status: str = Field(..., description="waiting (the run goes on), pending, sending, delivered or failed")
    attempts: int
    response_code: int | None
    last_error: str
    last_attempt_at: datetime | None
    next_attempt_at: datetime | None
    delivered_at: datetime | None


class TriggerOut(Schema):
    kind: str = Field(..., description="webhook or workflow_key")
    id: str = Field(..., description="the webhook's id, or the key's prefix")
    name: str
    idempotency_key: str | None


class RunTriggerOut(Schema):
    trigger: TriggerOut | None = Field(..., description="the webhook or key that started the run; null: neither")
    callbacks: list[DeliveryOut]


class TriggeredExecutionOut(ExecutionOut):
    trigger: TriggerOut | None
    callbacks: list[DeliveryOut]
