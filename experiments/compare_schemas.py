"""What `GET /api/experiments/compare` reads and answers."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema

from experiments.comparison import DEFAULT_THRESHOLD


class CompareQuery(Schema):
    ids: str = Field(..., max_length=1100, description="2 to 10 experiment ids, comma-separated")
    baseline: str = Field("", max_length=100, description="the experiment the others are compared with; default: "
                                                          "the oldest")
    threshold: float = Field(DEFAULT_THRESHOLD, ge=0, le=1, description="how far a score must move to flag a row "
                                                                        "regressed or improved")
    only: Literal["", "regressed", "improved", "failed"] = Field("", description="only the rows regressed, improved, "
                                                                                 "or where some run did not succeed")
    scorer: str = Field("", max_length=100, description="with `below`: rows some experiment scored below it")
    below: float | None = Field(None, ge=0, le=1)
    metadata: str = Field("", max_length=400, description="KEY=VALUE: rows whose item's metadata has it")
    format: Literal["json", "csv"] = Field("json", description="csv: every row the filters keep, as a file")
    offset: int = Field(0, ge=0, le=2**31 - 1)
    limit: int = Field(50, ge=1, le=200)


class ComparedExperimentOut(Schema):
    experiment_id: str
    name: str
    status: str
    workflow_id: str
    workflow_version: int
    dataset: str
    dataset_version: int
    created_at: datetime
    items: int
    ended: int
    baseline: bool
    pins: dict[str, str] = Field(..., description="node id → the agent@version its runs were pinned to")
    overrides: dict[str, list[str]] = Field(..., description="node id → the parts of its agent run in their place "
                                                             "(prompt_config, runtime …)")


class IntervalOut(Schema):
    low: float
    high: float
    level: float


class DeltaOut(Schema):
    count: int = Field(..., description="items both scored")
    baseline_mean: float | None
    candidate_mean: float | None
    delta: float | None = Field(..., description="candidate − baseline")
    interval: IntervalOut | None = Field(..., description="the paired bootstrap interval of the delta")
    verdict: Literal["improved", "regressed", "no clear change"]


class CountsOut(Schema):
    rows: int
    regressed: int
    improved: int
    failed: int
    matching: int = Field(..., description="rows the filters keep")


class OnlyInOut(Schema):
    count: int
    item_ids: list[str] = Field(..., description="the first 100")


class CellOut(Schema):
    status: str = Field(..., description="success, failed, cancelled; pending or running (not ended); absent (no "
                                         "such item)")
    execution_id: str | None
    error_code: str | None = None
    cost: str | None = Field(None, description="USD")
    latency_seconds: float | None = None
    scores: dict[str, float | None] | None = None
    output: Any = None
    deltas: dict[str, float | None] | None = Field(None, description="others only: score − the baseline's")
    diff: str | None = Field(None, description="others only: a unified diff of the output against the baseline's")
    compare_runs_url: str | None = Field(None, description="others only: the two runs compared node by node")


class RowOut(Schema):
    item_id: str
    metadata: dict[str, Any]
    regressed: bool
    improved: bool
    experiments: dict[str, CellOut]


class ComparisonOut(Schema):
    baseline: str
    threshold: float
    scorers: list[str]
    experiments: list[ComparedExperimentOut]
    versions_differ: bool = Field(..., description="over different versions of the dataset: matched by item id")
    scorers_differ: list[str] = Field(..., description="scorers of one name that the experiments define differently "
                                                       "(another path, pattern or rubric): not compared")
    summary: dict[str, dict[str, DeltaOut]] = Field(..., description="other experiment → scorer → its delta")
    counts: CountsOut
    only_in: dict[str, OnlyInOut] = Field(..., description="experiment → the items no other experiment has")
    rows: list[RowOut]
    offset: int
    limit: int
