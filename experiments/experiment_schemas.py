"""What the experiments router reads and answers."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Field, Schema


class ExperimentIn(Schema):
    workflow_id: str = Field(..., min_length=1, max_length=100)
    workflow_version: int | None = Field(None, ge=1, le=2**31 - 1, description="the version to run; none: the latest (pinned)")
    dataset: str = Field(..., min_length=1, max_length=100)
    dataset_version: int | None = Field(None, ge=1, le=2**31 - 1, description="none: the latest")
    name: str = Field("", max_length=200)
    agent_versions: dict[str, str] = Field({}, description="node id or agent id → a version name of the agent, or "
                                                           "`current`; by agent: every node that runs it")
    agent_overrides: dict[str, dict[str, Any]] = Field({}, description="node id or agent id → agent parts run in its "
                                                                       "place, e.g. {\"runtime\": {\"model\": …}}")
    scorers: list[Any] = Field([], description="the scorers (docs/experiments-scoring.md)")
    concurrency: int | None = Field(None, ge=1, le=1000, description="items run at once; none: EXPERIMENT_CONCURRENCY")
    max_cost: float | None = Field(None, gt=0, le=1_000_000, description="USD, for the runs and the judge's calls together")


class ProgressOut(Schema):
    total: int
    counts: dict[str, int]
    ended: int
    elapsed_seconds: float
    estimate_seconds: float | None = Field(None, description="seconds left at the pace so far")


class ExperimentOut(Schema):
    experiment_id: str
    name: str
    status: str
    workflow_id: str
    workflow_version: int
    dataset: str
    dataset_version: int
    agent_versions: dict[str, int] = Field(..., description="node id → the AgentVersion its runs use")
    agent_overrides: dict[str, Any]
    scorers: list[Any]
    concurrency: int
    max_cost: str | None = Field(None, description="USD")
    created_by: str
    cancelled_by: str
    created_at: datetime
    started_at: datetime | None
    completed_at: datetime | None


class ExperimentDetailOut(ExperimentOut):
    progress: ProgressOut
    summary: dict[str, Any] = Field(..., description="the aggregates, refreshed as items end")


class ExperimentItemOut(Schema):
    position: int
    item_id: str
    status: str
    execution_id: str | None
    output: Any = None
    scores: dict[str, Any]
    error_code: str
    error: str
    tokens: int
    cost: str | None = Field(None, description="USD: its run's and its judge's calls")
    latency_seconds: float | None


class ItemsFilter(Schema):
    status: str = Field("", max_length=20, description="pending, running, success, failed or cancelled")
