"""Evidence where decisions are made: a derive request's parent-vs-child experiments (start
them: admins; read them: everyone signed in), and workflow versions' releases (authors),
held to the workflow's release requirement."""
from __future__ import annotations

from typing import Any

from ninja import Field, Router, Schema, Status

from core.api_support import responses
from experiments import evidence, releases
from quality.derive_requests.selectors import derive_request_get

router = Router(tags=["experiments"])


class ParentVsChildIn(Schema):
    dataset: str = Field(..., min_length=1, max_length=100)
    dataset_version: int | None = Field(None, ge=1, le=2**31 - 1, description="none: the latest")
    workflow_id: str | None = Field(None, max_length=100, description="none: the workflow of the run that raised the "
                                    "request, if it runs the parent, else the first that does")
    scorers: list[Any] = Field(..., description="the scorers both experiments use (docs/experiments-scoring.md)")


class ProgressOut(Schema):
    experiment_id: str
    status: str
    counts: dict[str, int]
    total: int
    ended: int
    percent: int
    done: bool


class ScorerDeltaOut(Schema):
    scorer: str
    count: int = Field(..., description="items both experiments scored")
    parent_mean: float | None
    child_mean: float | None
    delta: float | None = Field(..., description="child − parent")
    low: float | None = Field(..., description="the paired bootstrap interval (95 %) of the delta")
    high: float | None
    verdict: str


class PairOut(Schema):
    parent_experiment: ProgressOut
    child_experiment: ProgressOut
    dataset: str = Field(..., description="name@version")
    workflow: str = Field(..., description="workflow_id@version")
    created_by: str
    created_at: str
    comparison: list[ScorerDeltaOut] | None = Field(..., description="per scorer, once both experiments ended")


@router.post("/derive-requests/{derive_request_id}/parent-vs-child", response=responses(201, PairOut),
             summary="Start the parent-vs-child experiments of a pending derive request (admins)")
def parent_vs_child_start(request, derive_request_id: str, payload: ParentVsChildIn):
    pair = evidence.parent_vs_child_start(
        request=derive_request_get(derive_request_id), dataset=payload.dataset,
        dataset_version=payload.dataset_version, workflow_id=payload.workflow_id, scorers=payload.scorers,
        user=request.user)
    return Status(201, evidence.pair_document(pair))


@router.get("/derive-requests/{derive_request_id}/parent-vs-child", response=responses(200, list[PairOut]),
            summary="A derive request's parent-vs-child experiments, newest first, compared once ended")
def parent_vs_child_list(request, derive_request_id: str):
    return [evidence.pair_document(pair) for pair in evidence.evidence_pairs(derive_request_get(derive_request_id))]


class RequirementIn(Schema):
    release_requirement: dict[str, Any] | None = Field(..., description='{"dataset": NAME, "thresholds": {SCORER: '
                                                       'MINIMUM MEAN}}; null: releases need nothing')


class RequirementOut(Schema):
    workflow_id: str
    release_requirement: dict[str, Any] | None


class ReleaseOut(Schema):
    workflow_id: str
    version: int
    released_by: str
    released_at: str


@router.put("/workflows/{workflow_id}/release-requirement", response=responses(200, RequirementOut),
            summary="Set what a version must pass to be released (authors)")
def release_requirement_set(request, workflow_id: str, payload: RequirementIn):
    workflow = releases.release_requirement_set(workflow_id=workflow_id, requirement=payload.release_requirement,
                                                user=request.user)
    return {"workflow_id": workflow.workflow_id, "release_requirement": workflow.release_requirement}


@router.post("/workflows/{workflow_id}/versions/{number}/release", response=responses(200, ReleaseOut),
             summary="Release a workflow version (authors), if it passes the workflow's release requirement")
def version_release(request, workflow_id: str, number: int):
    version = releases.workflow_version_release(workflow_id=workflow_id, number=number, user=request.user)
    return {"workflow_id": workflow_id, "version": version.number, "released_by": version.released_by,
            "released_at": version.released_at.isoformat() if version.released_at else ""}
