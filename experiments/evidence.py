"""Evidence for a derive request's decision: the parent agent against its candidate child.

`parent_vs_child_start` starts two experiments over the same dataset version and workflow
version: the parent as it is (the baseline) and the child as an approval would make it
(`child_document`), run in the parent's place through the experiment's `agent_overrides` —
the child is never saved as an agent. `pair_comparison` compares them item by item once both
have ended (engine/experiments/compare.py: per scorer, the difference of means with its paired
bootstrap interval and verdict), and `read_evidence` is what a decision naming the child
experiment records on the request; quality cannot import this module (experiments sit above
it), so `ExperimentsConfig.ready()` registers it with quality/derive_requests/evidence.py.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from agents.models import DeriveRequest
from core.errors import DocumentError, IllegalTransition, echo
from core.roles import ADMIN, require_role
from engine.experiments.compare import compare
from engine.experiments.scorers import check_scorers
from executions.models import Execution
from experiments.experiment_services import experiment_create, experiment_start, status_counts
from experiments.models import EvidencePair, Experiment
from experiments.summaries import ended_records
from quality.derive_requests.child_agent import child_document
from workflows.models import Workflow

ENDED = (Experiment.Status.SUCCESS, Experiment.Status.CANCELLED)
# What of the child's document runs in the parent's place (the rest — runtime, limits — stays
# the parent's, so the pair differs only by the specialisation).
CHILD_PARTS = ("name", "prompt_config", "capabilities", "constraints")


def workflows_running(request: DeriveRequest):
    """The workflows with a node that runs the request's parent agent."""
    return Workflow.objects.filter(nodes__agent=request.parent_agent).distinct().order_by("workflow_id")


def default_workflow(request: DeriveRequest) -> Workflow:
    """The workflow to run the pair on: that of the latest run the request's evidence names
    (if it runs the parent), else the first workflow that runs the parent. Refused, naming
    the agent, when no workflow runs it."""
    running = workflows_running(request)
    named = _execution_ids(request.trigger_context)
    if named:
        run = (Execution.objects.filter(execution_id__in=named, workflow__in=running)
               .select_related("workflow").order_by("-created_at", "-id").first())
        if run is not None:
            return run.workflow
    first = running.first()
    if first is None:
        raise DocumentError(f"no workflow runs agent '{request.parent_agent.agent_id}', the request's parent: "
                            "add it to a workflow's node first", where="workflow_id")
    return first


def _execution_ids(context: Any, key: str = "") -> set[str]:
    """The strings the trigger's context holds under keys that name runs (`execution_id`,
    `execution_ids`, `failures[].execution_id`)."""
    found: set[str] = set()
    if isinstance(context, dict):
        for name, value in context.items():
            found |= _execution_ids(value, str(name))
    elif isinstance(context, list):
        for value in context[:500]:
            found |= _execution_ids(value, key)
    elif isinstance(context, str) and "execution" in key:
        found.add(context)
    return found


def child_overrides(request: DeriveRequest) -> dict[str, dict[str, Any]]:
    """The child's parts, by the parent's agent id: every node that runs the parent runs them."""
    child = child_document(request)
    return {request.parent_agent.agent_id: {part: child[part] for part in CHILD_PARTS}}


def parent_vs_child_start(*, request: DeriveRequest, dataset: str, dataset_version: int | None = None,
                          workflow_id: str | None = None, scorers: Any = None, user) -> EvidencePair:
    """Start the pair: the parent (baseline) and the child in its place, both over the same
    dataset version and workflow version. Everything is checked, and both experiments are
    created, before either starts; a refusal stores nothing."""
    require_role(user, ADMIN, to="start parent-vs-child experiments")
    if request.status != DeriveRequest.Status.PENDING:
        raise IllegalTransition(f"derive request '{request.derive_request_id}' was {request.status} already: "
                                "evidence is gathered before the decision", code="CONFLICT")
    workflow = _workflow(request, workflow_id)
    if not isinstance(scorers, list) or not scorers:
        raise DocumentError("is a list of at least one scorer: the pair is compared scorer by scorer", where="scorers")
    actor, rid, parent_id = user.get_username(), request.derive_request_id, request.parent_agent.agent_id
    with transaction.atomic():
        parent = experiment_create(workflow_id=workflow.workflow_id, dataset=dataset,
                                   dataset_version_number=dataset_version, scorers=scorers, actor=actor,
                                   name=f"{rid}: parent {parent_id}"[:200])
        child = experiment_create(workflow_id=workflow.workflow_id, dataset=dataset,
                                  workflow_version=parent.workflow_version.number,
                                  dataset_version_number=parent.dataset_version.number, scorers=scorers,
                                  agent_overrides=child_overrides(request), actor=actor,
                                  name=f"{rid}: child {request.new_name}"[:200])
        pair = EvidencePair.objects.create(derive_request=request, parent_experiment=parent, child_experiment=child,
                                           created_by=actor)
    experiment_start(experiment=parent)
    experiment_start(experiment=child)
    return pair


def _workflow(request: DeriveRequest, workflow_id: str | None) -> Workflow:
    if not workflow_id:
        return default_workflow(request)
    workflow = Workflow.objects.filter(workflow_id=workflow_id).first() if isinstance(workflow_id, str) else None
    if workflow is None:
        raise DocumentError(f"workflow '{echo(str(workflow_id))}' does not exist", where="workflow_id")
    if not workflows_running(request).filter(pk=workflow.pk).exists():
        raise DocumentError(f"workflow '{workflow.workflow_id}' has no node that runs agent "
                            f"'{request.parent_agent.agent_id}', the request's parent", where="workflow_id")
    return workflow


# -- reads ---------------------------------------------------------------------------------


def evidence_pairs(request: DeriveRequest) -> list[EvidencePair]:
    """The request's pairs, newest first, with both experiments and what they ran over."""
    return list(EvidencePair.objects.filter(derive_request=request).select_related(
        "parent_experiment__dataset_version__dataset", "parent_experiment__workflow_version__workflow",
        "child_experiment"))


def progress(experiment: Experiment) -> dict[str, Any]:
    """An experiment's items by status, how many ended, of how many, and whether it ended."""
    counts = status_counts(experiment)
    total = sum(counts.values())
    ended = total - counts["pending"] - counts["running"]
    return {"experiment_id": experiment.experiment_id, "status": experiment.status, "counts": counts,
            "total": total, "ended": ended, "percent": round(100 * ended / total) if total else 0,
            "done": experiment.status in ENDED}


def pair_ended(pair: EvidencePair) -> bool:
    return pair.parent_experiment.status in ENDED and pair.child_experiment.status in ENDED


def pair_comparison(pair: EvidencePair) -> list[dict[str, Any]] | None:
    """Per scorer: the parent's and the child's mean over the items both scored, the delta
    (child − parent), its paired bootstrap interval and the verdict; None until both ended.
    Seeded by the pair, so the figures read now are the figures recorded with a decision."""
    if not pair_ended(pair):
        return None
    parent, child = pair.parent_experiment, pair.child_experiment
    names = [scorer.name for scorer in check_scorers(parent.scorers)]
    comparison = compare({parent.experiment_id: ended_records(parent.pk), child.experiment_id: ended_records(child.pk)},
                         baseline=parent.experiment_id, scorers=names, rng=np.random.default_rng(pair.pk))
    rows = []
    for name, paired in comparison.summary[child.experiment_id].items():
        rows.append({"scorer": name, "count": paired.count, "parent_mean": paired.baseline_mean,
                     "child_mean": paired.candidate_mean, "delta": paired.delta,
                     "low": paired.interval.low if paired.interval else None,
                     "high": paired.interval.high if paired.interval else None, "verdict": paired.verdict})
    return rows


def pair_document(pair: EvidencePair) -> dict[str, Any]:
    """The pair as the API and the page's refresh read it."""
    parent = pair.parent_experiment
    return {
        "parent_experiment": progress(parent), "child_experiment": progress(pair.child_experiment),
        "dataset": f"{parent.dataset_version.dataset.name}@{parent.dataset_version.number}",
        "workflow": f"{parent.workflow_version.workflow.workflow_id}@{parent.workflow_version.number}",
        # A cancelled experiment ran some of its items: the record says so beside its figures.
        "statuses": {"parent": parent.status, "child": pair.child_experiment.status},
        "created_by": pair.created_by, "created_at": pair.created_at.isoformat(),
        "comparison": pair_comparison(pair),
    }


# -- what a decision records ------------------------------------------------------------------


def read_evidence(request: DeriveRequest, experiment_id: str) -> dict[str, Any]:
    """The evidence a decision naming `experiment_id` (the child experiment of one of the
    request's pairs) records: refused, naming the experiment, when it is no child of this
    request's pairs or when the pair has not ended."""
    pair = next((p for p in evidence_pairs(request) if p.child_experiment.experiment_id == experiment_id), None)
    if pair is None:
        raise DocumentError(_not_evidence(request, experiment_id), where="evidence")
    for role, experiment in (("child", pair.child_experiment), ("parent", pair.parent_experiment)):
        if experiment.status not in ENDED:
            raise DocumentError(f"experiment '{experiment.experiment_id}' (the {role} of the pair) has not ended: it "
                                f"is {experiment.status}; decide once it has", where="evidence")
    rows = pair_comparison(pair) or []
    parent = pair.parent_experiment
    return {
        "parent_experiment": parent.experiment_id, "child_experiment": pair.child_experiment.experiment_id,
        "dataset": f"{parent.dataset_version.dataset.name}@{parent.dataset_version.number}",
        "workflow": f"{parent.workflow_version.workflow.workflow_id}@{parent.workflow_version.number}",
        # A cancelled experiment ran some of its items: the record says so beside its figures.
        "statuses": {"parent": parent.status, "child": pair.child_experiment.status},
        "scorers": {row["scorer"]: {key: row[key] for key in ("parent_mean", "child_mean", "delta", "low", "high",
                                                               "verdict", "count")} for row in rows},
        "recorded_at": timezone.now().isoformat(),
    }


def _not_evidence(request: DeriveRequest, experiment_id: str) -> str:
    """Why an experiment id is no evidence of the request, naming it."""
    rid = request.derive_request_id
    as_parent = EvidencePair.objects.filter(derive_request=request, parent_experiment__experiment_id=experiment_id)
    pair = as_parent.select_related("child_experiment").first()
    if pair is not None:
        return (f"experiment '{echo(experiment_id)}' is the parent's of its pair: name the child's, "
                f"'{pair.child_experiment.experiment_id}'")
    if not Experiment.objects.filter(experiment_id=experiment_id).exists():
        return f"experiment '{echo(experiment_id)}' does not exist"
    return f"experiment '{echo(experiment_id)}' is not a child experiment of derive request '{rid}'"
