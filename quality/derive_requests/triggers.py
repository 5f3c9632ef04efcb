"""The rules that raise derive requests (core-data-structures §6), read from the runs.

Each rule reads an agent's node runs or evaluations, which is why derive requests live in
the quality app, above executions (a run points at an agent; agents imports nothing of
executions). Thresholds come from settings (`DERIVE_*`), and each rule looks only at
evidence newer than the last decision on the same agent and trigger, so a rejected request
is not raised again from the evidence a person already weighed:

- `quality_issue`: the mean overall_score of the agent's recent evaluations is below
  the threshold;
- `capability_gap`: node runs of the agent failed with CAPABILITY_GAP (the node needed a
  skill or tool the agent lacks);
- `frequency_threshold`: the agent ran many nodes in runs of one knowledge domain that
  is not yet among its own.

A rule never raises a second pending request for the same agent and trigger (a partial
unique constraint backs this up). A request raised here waits for a person: approving it
is `services.derive_request_approve`'s, and `child_agent.py` creates the child.
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Max
from django.utils import timezone

from agents.models import Agent, DeriveRequest, DeriveRequestEvent
from executions.models import Evaluation, NodeRun
from quality.derive_requests.services import derive_request_event

Trigger = DeriveRequest.Trigger

# What a derived agent is told, by the score its parent's evaluations were weakest in.
QUALITY_CONSTRAINTS = {
    "accuracy": "Check every output against the contract (schema) it feeds before answering.",
    "completeness": "Complete every part of the task; never return an empty or partial result.",
    "efficiency": "Stay within the token budget: summarise inputs instead of repeating them.",
}


@dataclass
class Proposal:
    """What a rule found: a derive request to raise."""

    trigger: str
    trigger_context: dict[str, Any]
    new_name: str
    domain_focus: str = ""
    additional_skills: list[str] = field(default_factory=list)
    additional_constraints: list[str] = field(default_factory=list)


def _last_decision(agent: Agent, trigger: str):
    return (DeriveRequest.objects.filter(parent_agent=agent, trigger=trigger, decided_at__isnull=False)
            .aggregate(at=Max("decided_at"))["at"])


def _domains(agent: Agent) -> list[str]:
    return list((agent.capabilities or {}).get("knowledge_domains", []))


def quality_issue(agent: Agent) -> Proposal | None:
    since = _last_decision(agent, Trigger.QUALITY_ISSUE)
    recent = Evaluation.objects.filter(target_type="agent", target_id=agent.agent_id).exclude(
        method=Evaluation.Method.AGGREGATE)
    if since:
        recent = recent.filter(created_at__gt=since)
    rows: list[Mapping[str, Any]] = list(recent.order_by("-created_at", "-id")[:settings.DERIVE_QUALITY_WINDOW]
                                         .values("evaluation_id", "overall_score", "accuracy", "completeness", "efficiency"))
    if len(rows) < settings.DERIVE_QUALITY_MIN_EVALUATIONS:
        return None
    mean = sum(row["overall_score"] for row in rows) / len(rows)
    if mean >= settings.DERIVE_QUALITY_THRESHOLD:
        return None
    means: dict[str, float] = {}
    for name in QUALITY_CONSTRAINTS:  # of the evaluations that measured it (accuracy may not be)
        measured = [row[name] for row in rows if row[name] is not None]
        if measured:
            means[name] = sum(measured) / len(measured)
    weakest = min(means, key=means.__getitem__)
    domains = _domains(agent)
    return Proposal(
        trigger=Trigger.QUALITY_ISSUE,
        trigger_context={
            "mean_overall_score": round(mean, 4), "threshold": settings.DERIVE_QUALITY_THRESHOLD,
            "weakest_score": weakest, "mean_scores": {k: round(v, 4) for k, v in means.items()},
            "evaluations": rows,
        },
        new_name=f"{agent.name} (improved {weakest})",
        domain_focus=domains[0] if domains else "",
        additional_constraints=[QUALITY_CONSTRAINTS[weakest]],
    )


def capability_gap(agent: Agent) -> Proposal | None:
    since = _last_decision(agent, Trigger.CAPABILITY_GAP)
    failed = NodeRun.objects.filter(agent=agent, status=NodeRun.Status.FAILED, error_code="CAPABILITY_GAP",
                                    execution__trial=False, execution__experiment="")
    if since:
        failed = failed.filter(completed_at__gt=since)
    runs = list(failed.select_related("execution").order_by("-completed_at", "-id")[:50])
    if len(runs) < settings.DERIVE_CAPABILITY_GAP_FAILURES:
        return None
    have = set((agent.capabilities or {}).get("skills", [])) | set((agent.capabilities or {}).get("tools", []))
    skills, tools = [], []
    for run in runs:
        details = run.error_details or {}
        skills += [s for s in details.get("missing_skills", []) if s not in have and s not in skills]
        tools += [t for t in details.get("missing_tools", []) if t not in have and t not in tools]
    domain = next((run.execution.domain for run in runs if run.execution.domain), "")
    missing = skills + tools
    return Proposal(
        trigger=Trigger.CAPABILITY_GAP,
        trigger_context={
            "failures": [{"execution_id": run.execution.execution_id, "node_id": run.node_id, "node_run_id": run.pk,
                          "error": run.error[:300]} for run in runs],
            "missing_skills": skills, "missing_tools": tools,
            "threshold": settings.DERIVE_CAPABILITY_GAP_FAILURES,
        },
        new_name=f"{agent.name} with {', '.join(missing)}" if missing else f"{agent.name} (extended)",
        domain_focus=domain,
        additional_skills=skills,
        additional_constraints=[f"Use the {tool} tool where the task needs it." for tool in tools],
    )


def frequency_threshold(agent: Agent) -> Proposal | None:
    start = timezone.now() - timedelta(days=settings.DERIVE_FREQUENCY_WINDOW_DAYS)
    since = _last_decision(agent, Trigger.FREQUENCY_THRESHOLD)
    if since and since > start:
        start = since
    uses = (NodeRun.objects.filter(agent=agent, status=NodeRun.Status.SUCCESS, completed_at__gte=start,
                                   execution__trial=False, execution__experiment="")
            .exclude(execution__domain="").exclude(kind__in=NodeRun.COPIES))
    counts = list(uses.values("execution__domain").annotate(uses=Count("id")).order_by("-uses", "execution__domain"))
    # A domain the agent already knows (its own, or its focus as a derived specialist) needs no new specialist.
    candidates = [row for row in counts if row["execution__domain"] not in _domains(agent)]
    if not candidates or candidates[0]["uses"] < settings.DERIVE_FREQUENCY_THRESHOLD:
        return None
    domain, count = candidates[0]["execution__domain"], candidates[0]["uses"]
    executions = list(uses.filter(execution__domain=domain).values("execution__execution_id")
                      .annotate(last=Max("completed_at")).order_by("-last", "-execution__execution_id")
                      .values_list("execution__execution_id", flat=True)[:20])  # each run once, the latest first
    return Proposal(
        trigger=Trigger.FREQUENCY_THRESHOLD,
        trigger_context={
            "domain": domain, "uses": count, "threshold": settings.DERIVE_FREQUENCY_THRESHOLD,
            "window_days": settings.DERIVE_FREQUENCY_WINDOW_DAYS, "since": start.isoformat(),
            "execution_ids": executions,
            "uses_by_domain": {row["execution__domain"]: row["uses"] for row in counts},
        },
        new_name=f"{agent.name} ({domain})",
        domain_focus=domain,
        additional_constraints=[f"Work within the {domain} domain; say so when a task falls outside it."],
    )


RULES = (quality_issue, capability_gap, frequency_threshold)


def derive_requests_raise(*, agent: Agent) -> list[DeriveRequest]:
    """Apply every rule to the agent and raise a request for each that fires, unless one
    for the same agent and trigger is pending already."""
    raised = []
    for rule in RULES:
        if DeriveRequest.objects.filter(parent_agent=agent, trigger=rule.__name__, status="pending").exists():
            continue
        proposal = rule(agent)
        if proposal is None:
            continue
        try:
            with transaction.atomic():
                request = DeriveRequest.objects.create(
                    derive_request_id=f"dr_{timezone.now():%Y%m%d%H%M%S}_{uuid.uuid4().hex[:8]}",
                    parent_agent=agent, trigger=proposal.trigger, trigger_context=proposal.trigger_context,
                    new_name=proposal.new_name[:200], domain_focus=proposal.domain_focus[:200],
                    additional_skills=proposal.additional_skills,
                    additional_constraints=proposal.additional_constraints,
                    created_by=f"rule:{proposal.trigger}",
                )
                derive_request_event(request, DeriveRequestEvent.Kind.RAISED, actor=request.created_by)
        except IntegrityError:  # raised by another worker a moment ago: that one stands
            continue
        raised.append(request)
    return raised


def derive_requests_raise_for_execution(*, execution_pk: int) -> list[DeriveRequest]:
    """The rules for every agent that ran a node of the run (a gate's stand-in agent did not:
    a person decided)."""
    agents = Agent.objects.filter(node_runs__execution_id=execution_pk, node_runs__gate__isnull=True).distinct()
    return [request for agent in agents for request in derive_requests_raise(agent=agent)]
