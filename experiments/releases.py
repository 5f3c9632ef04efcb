"""Releasing a workflow version, held to the workflow's release requirement.

A workflow may require (`Workflow.release_requirement`: {"dataset": name, "thresholds":
{scorer: minimum mean}}) that a version is released only on the evidence of an experiment:
the latest ended experiment of THAT version over the named dataset, every threshold met by
its scorer's mean. The check reads experiments, so it lives here, above workflows; the
versions list reads each version's latest scores through `version_scores`, which
`ExperimentsConfig.ready()` registers with workflows/releases.py.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.audit import record
from core.errors import DocumentError, IllegalTransition, NotFound, SwitchyardError, echo
from core.roles import AUTHOR, require_role
from core.status_writes import lock_row
from experiments.models import Dataset, Experiment
from workflows.models import Workflow, WorkflowVersion

# A release stands on an experiment that ran every item: a cancelled one's means cover a part.
COMPLETED = (Experiment.Status.SUCCESS,)


class ReleaseRefused(SwitchyardError):
    code = "RELEASE_REFUSED"


def _workflow(workflow_id: str) -> Workflow:
    workflow = Workflow.objects.filter(workflow_id=workflow_id).first() if isinstance(workflow_id, str) else None
    if workflow is None:
        raise NotFound(f"no workflow '{echo(str(workflow_id))}'", details={"workflow_id": workflow_id})
    return workflow


def release_requirement_set(*, workflow_id: str, requirement: Any, user) -> Workflow:
    """Set (or with None clear) what a version of the workflow must pass to be released."""
    require_role(user, AUTHOR, to="set a workflow's release requirement")
    workflow = _workflow(workflow_id)
    checked = check_requirement(requirement)
    with transaction.atomic():
        was = workflow.release_requirement
        Workflow.objects.filter(pk=workflow.pk).update(release_requirement=checked, updated_at=timezone.now())
        workflow.release_requirement = checked
        if checked != was:
            record("workflow.release_requirement", actor=user, object_type="workflow", object_id=workflow.workflow_id,
                   before={"release_requirement": was}, after={"release_requirement": checked})
    return workflow


def check_requirement(requirement: Any) -> dict[str, Any] | None:
    """{"dataset": an existing dataset's name, "thresholds": {scorer name: a number}}, or None."""
    if requirement is None:
        return None
    if not isinstance(requirement, dict) or set(requirement) - {"dataset", "thresholds"}:
        raise DocumentError('is {"dataset": NAME, "thresholds": {SCORER: MINIMUM MEAN}} or null',
                            where="release_requirement")
    dataset, thresholds = requirement.get("dataset"), requirement.get("thresholds")
    if not isinstance(dataset, str) or not Dataset.objects.filter(name=dataset).exists():
        raise DocumentError(f"dataset '{echo(str(dataset))}' does not exist", where="release_requirement.dataset")
    if not isinstance(thresholds, dict) or not thresholds:
        raise DocumentError("is an object of at least one scorer name → the minimum mean it must reach",
                            where="release_requirement.thresholds")
    for name, minimum in thresholds.items():
        if isinstance(minimum, bool) or not isinstance(minimum, (int, float)) or minimum != minimum:
            raise DocumentError("is a number", where=f"release_requirement.thresholds.{echo(name)}")
    return {"dataset": dataset, "thresholds": {name: float(minimum) for name, minimum in thresholds.items()}}


def scorer_means(experiment: Experiment) -> dict[str, float | None]:
    """Each scorer's mean over the experiment's scored items, from its stored aggregates."""
    scorers = ((experiment.summary or {}).get("aggregates") or {}).get("scorers") or {}
    return {name: (aggregate.get("summary") or {}).get("mean") for name, aggregate in scorers.items()}


def latest_completed(version: WorkflowVersion, dataset: str) -> Experiment | None:
    """The version's latest completed experiment over any version of `dataset`."""
    return (Experiment.objects.filter(workflow_version=version, dataset_version__dataset__name=dataset,
                                      status__in=COMPLETED)
            .order_by("-completed_at", "-id").first())


def release_problems(workflow: Workflow, version: WorkflowVersion) -> list[str]:
    """What keeps the version from its release under the workflow's requirement ([] : nothing)."""
    requirement = workflow.release_requirement
    if not requirement:
        return []
    dataset = requirement["dataset"]
    experiment = latest_completed(version, dataset)
    if experiment is None:
        return [f"no completed experiment of version {version.number} on dataset {dataset} (a cancelled one ran "
                f"only some of its items)"]
    means = scorer_means(experiment)
    problems = []
    for name, minimum in requirement["thresholds"].items():
        mean = means.get(name)
        if name not in means:
            problems.append(f"{name}: not a scorer of experiment {experiment.experiment_id}")
        elif mean is None:
            problems.append(f"{name}: no item scored (minimum {minimum:g})")
        elif mean < minimum:
            problems.append(f"{name}: mean {mean:.3f} < {minimum:g}")
    if problems:
        problems = [f"experiment {experiment.experiment_id}: " + "; ".join(problems)]
    return problems


def workflow_version_release(*, workflow_id: str, number: Any, user) -> WorkflowVersion:
    """Mark version `number` of the workflow released, by `user`, now: once, and only when it
    passes the workflow's release requirement. A refusal names what failed and stores nothing."""
    require_role(user, AUTHOR, to="release workflow versions")
    workflow = _workflow(workflow_id)
    if isinstance(number, bool) or not isinstance(number, int):
        raise DocumentError("is a version number", where="version")
    with transaction.atomic():
        version = lock_row(WorkflowVersion, missing_ok=True, workflow_id=workflow.pk, number=number)
        if version is None:
            raise NotFound(f"workflow '{workflow.workflow_id}' has no version {number}",
                           details={"workflow_id": workflow.workflow_id, "version": number})
        if version.released_at is not None:
            raise IllegalTransition(f"version {number} of workflow '{workflow.workflow_id}' was released by "
                                    f"{version.released_by or 'someone'} at {version.released_at:%Y-%m-%d %H:%M} "
                                    "already", code="CONFLICT")
        problems = release_problems(workflow, version)
        if problems:
            raise ReleaseRefused(f"version {number} of workflow '{workflow.workflow_id}' cannot be released: "
                                 + "; ".join(problems), details={"problems": problems})
        version.released_at, version.released_by = timezone.now(), user.get_username()
        WorkflowVersion.objects.filter(pk=version.pk).update(released_at=version.released_at,
                                                              released_by=version.released_by)
        record("workflow.release", actor=user, object_type="workflow", object_id=workflow.workflow_id,
               before={"version": number, "released_at": None},
               after={"version": number, "released_at": version.released_at,
                      "requirement": workflow.release_requirement})
    return version


def version_scores(workflow: Workflow, versions: Sequence[WorkflowVersion]) -> dict[int, dict[str, Any]]:
    """Each version's latest experiment (any status) with its scorers' means: for the versions list."""
    latest: dict[int, dict[str, Any]] = {}
    experiments = (Experiment.objects.filter(workflow_version__in=list(versions))
                   .select_related("workflow_version", "dataset_version__dataset").order_by("-created_at", "-id")
                   .only("experiment_id", "status", "summary", "workflow_version__number",
                         "dataset_version__number", "dataset_version__dataset__name"))
    for experiment in experiments.iterator(chunk_size=200):
        number = experiment.workflow_version.number
        if number in latest:
            continue
        latest[number] = {"experiment_id": experiment.experiment_id, "status": experiment.status,
                          "dataset": f"{experiment.dataset_version.dataset.name}@{experiment.dataset_version.number}",
                          "scores": scorer_means(experiment)}
        if len(latest) == len(versions):
            break
    return latest
