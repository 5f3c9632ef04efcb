"""An item scored when its run ends, the experiment's stored aggregates, and the sweep.

When a run of an experiment's item ends, executions sends the task `experiments.run_ended`
(its execution's pk) instead of evaluating it. `item_run_ended` then, once:

0. claims the item's scoring (a conditional UPDATE of a claim and its time on the item), so
   that a second delivery, or the sweep, at the same time leaves without asking any judge;
1. evaluates the run first when a scorer is `evaluation` (quality's execution_evaluate, which
   stores the seed's evaluation once however often it is asked);
2. asks the judge agent for each `llm_judge` scorer (the scorer's `agent`, else the
   workflow's judge), its calls metered and held to the experiment's max_cost, the claim
   renewed before each (a claim taken over meanwhile stops here, storing nothing);
3. scores the rest with the pure scorers (engine.experiments.scorers);
4. stores it all, by its claim, with the item's move from running to its end status;
5. advances the experiment (experiment_services.experiment_advance).

An error on the way is recorded on the item and its claim let go, for the sweep to try
again; after EXPERIMENT_SCORING_ATTEMPTS claims the item fails with SCORING_FAILED.

A lost message or a killed worker loses nothing: `experiments_sweep`, on the beat, finds the
running experiments with an item whose run ended unscored, or room to start more, and does
the same for them (a claim whose holder went silent for EXPERIMENT_SCORING_STALE_SECONDS
is taken over).
"""
from __future__ import annotations

import json
import logging
import os
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from agents.backends import BackendError, BackendRequest, get_backend
from agents.backends.metering import Budget, Meter, calling, metered
from agents.models import Agent
from core.status_writes import lock_row, transition
from engine.experiments.judge import JudgeAnswerError, judge_prompt, parse_judge_answer
from engine.experiments.scorers import NO_OUTPUT, NotScored, Score, Scorer, check_scorers, evaluation_score, score
from executions.models import Execution, NodeRun
from executions.prompts import skills
from executions.run_graphs import execution_graph
from experiments.dataset_services import run_output
from experiments.experiment_services import experiment_advance, experiments_to_sweep, spent
from experiments.models import Experiment, ExperimentItem
from experiments.summaries import summary_refresh
from quality.evaluations import execution_evaluate

logger = logging.getLogger(__name__)

ENDED = (Execution.Status.SUCCESS, Execution.Status.FAILED, Execution.Status.CANCELLED)


def item_run_ended(*, execution_pk: int) -> str:
    """Score the experiment item whose run this is, once its run has ended; then advance.

    The item's scoring is claimed first (`_claim`), so a second delivery at the same time
    leaves without asking any judge; an error is recorded and the claim let go for the sweep
    to try again, up to EXPERIMENT_SCORING_ATTEMPTS claims, after which the item fails."""
    item = (ExperimentItem.objects.select_related("experiment", "dataset_item", "execution__workflow")
            .filter(execution_id=execution_pk).first())
    if item is None:
        return "no item"
    if item.status != ExperimentItem.Status.RUNNING:
        return "scored already"
    execution = item.execution
    assert execution is not None, "a running item has its run"
    if execution.status not in ENDED:
        return "still running"
    claimed = _claim(item)
    if claimed is None:
        return "scoring elsewhere"
    claim, attempts = claimed
    limit = settings.EXPERIMENT_SCORING_ATTEMPTS
    if attempts > limit:  # each claim before died with its worker, or failed to store its end
        last = f" (the last error: {item.scoring_error})" if item.scoring_error else ""
        return _scoring_failed(item, execution, claim, None,
                               f"its scoring was begun {limit} times without an end{last}")
    experiment = item.experiment
    fields: dict | Exception | None
    with metered(_judge_budget(experiment)) as meter, calling("judge"):
        try:
            fields = _outcome(experiment, item, execution, claim)
        except _ClaimLost:
            fields = None
        except Exception as error:  # noqa: BLE001 - any error of a scorer is the item's, counted
            logger.exception("experiments: scoring the item of run %s failed (attempt %s of %s)",
                             execution_pk, attempts, limit)
            fields = error
    if meter.reserved:  # a call that failed: what it claimed is claimed no more
        Experiment.objects.filter(pk=experiment.pk).update(cost_reserved=F("cost_reserved") - meter.reserved)
    if fields is None:
        _count_judge(experiment, meter)
        return "scoring taken over"
    if isinstance(fields, Exception):
        reason = f"{type(fields).__name__}: {fields}"[:2000]
        if attempts >= limit:
            return _scoring_failed(item, execution, claim, meter, f"its scoring failed {attempts} times; the last: "
                                                                  f"{reason}")
        _let_go(item, claim, meter, reason)
        return f"scoring failed (attempt {attempts} of {limit})"
    return _ended(item, execution, claim, meter, execution.status, fields)


class _ClaimLost(Exception):
    """The item's scoring claim was taken over (its holder seemed dead): stop asking judges."""


def _claim(item: ExperimentItem) -> tuple[str, int] | None:
    """Claim the running item's scoring: a conditional UPDATE, so of two deliveries at once
    only one asks the judges; a claim silent for EXPERIMENT_SCORING_STALE_SECONDS (its
    worker died) is taken over. Returns the claim and how many claims were taken in all."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.EXPERIMENT_SCORING_STALE_SECONDS)
    claim = f"{os.getpid()}/{uuid.uuid4().hex}"
    free = Q(scoring_claim="") | Q(scoring_claimed_at__lt=stale)
    taken = ExperimentItem.objects.filter(free, pk=item.pk, status=ExperimentItem.Status.RUNNING).update(
        scoring_claim=claim, scoring_claimed_at=now, scoring_attempts=F("scoring_attempts") + 1)
    if not taken:
        return None
    attempts = ExperimentItem.objects.filter(pk=item.pk).values_list("scoring_attempts", flat=True).get()
    return claim, attempts


def _renew(item: ExperimentItem, claim: str) -> None:
    """Say the claim's holder is alive (before each judge call, the long part); _ClaimLost
    when it was taken over meanwhile, so that no judge is asked for an item twice."""
    if not ExperimentItem.objects.filter(pk=item.pk, status=ExperimentItem.Status.RUNNING,
                                         scoring_claim=claim).update(scoring_claimed_at=timezone.now()):
        raise _ClaimLost


def _outcome(experiment: Experiment, item: ExperimentItem, execution: Execution, claim: str) -> dict:
    """The item's fields once scored: its output, scores and error."""
    scorers = check_scorers(experiment.scorers)
    succeeded = execution.status == Execution.Status.SUCCESS
    output = run_output(execution) if succeeded else None
    scores = _scores(experiment, item, execution, scorers, output, succeeded, claim)
    return {"output": output, "scores": {name: _stored(result) for name, result in scores.items()},
            "error_code": "" if succeeded else _error_code(execution),
            "error": "" if succeeded else execution.ended_reason}


def _ended(item: ExperimentItem, execution: Execution, claim: str, meter: Meter | None, status: str,
           fields: dict) -> str:
    """Store the item's end, by its claim, with its run's figures; count the judge's calls;
    advance the experiment."""
    experiment = item.experiment
    with transaction.atomic():
        lock_row(Experiment, experiment.pk)  # the experiment's row before its item's, as advance takes them
        moved = transition(
            ExperimentItem.objects, item.pk, ExperimentItem.Status.RUNNING, status, where={"scoring_claim": claim},
            cost=F("cost") + execution.cost + (meter.cost if meter else 0), completed_at=timezone.now(),
            scoring_claim="", **_run_figures(execution), **fields)
        _count_judge(experiment, meter)
    if not moved:
        return "scoring taken over"
    experiment_advance(experiment_pk=experiment.pk)
    # The last item of a cancelled experiment ends after the experiment did: its figures are final now.
    last = not ExperimentItem.objects.filter(experiment_id=experiment.pk, status__in=ExperimentItem.ACTIVE).exists()
    summary_refresh(experiment.pk, force=last)
    return "scored"


def _scoring_failed(item: ExperimentItem, execution: Execution, claim: str, meter: Meter | None, reason: str) -> str:
    """End the item failed (SCORING_FAILED, and why): the experiment goes on without it."""
    logger.warning("experiments: the item of run %s fails: %s", execution.pk, reason)
    outcome = _ended(item, execution, claim, meter, ExperimentItem.Status.FAILED,
                     {"error_code": "SCORING_FAILED", "error": reason[:2000], "scoring_error": reason[:2000]})
    return "scoring failed" if outcome == "scored" else outcome


def _let_go(item: ExperimentItem, claim: str, meter: Meter, reason: str) -> None:
    """Record a failed attempt and let the claim go, for the sweep to try again; what its
    judge's calls cost is counted on the item and the experiment all the same."""
    with transaction.atomic():
        ExperimentItem.objects.filter(pk=item.pk, scoring_claim=claim).update(
            scoring_claim="", scoring_claimed_at=None, scoring_error=reason, cost=F("cost") + meter.cost)
        _count_judge(item.experiment, meter)


def _count_judge(experiment: Experiment, meter: Meter | None) -> None:
    """The judge's calls of this attempt not yet counted on the experiment (under a max_cost
    each call settled its cost as it was made)."""
    if meter is not None and meter.cost - meter.settled:
        Experiment.objects.filter(pk=experiment.pk).update(judge_cost=F("judge_cost") + meter.cost - meter.settled)


def _run_figures(execution: Execution) -> dict:
    """The run's tokens, latency and node records, for the aggregates."""
    nodes = _node_records(execution)
    latency = ((execution.completed_at - execution.started_at).total_seconds()
               if execution.completed_at and execution.started_at else None)
    return {"tokens": sum(node["tokens"] for node in nodes), "latency_seconds": latency, "nodes": nodes}


def _scores(experiment: Experiment, item: ExperimentItem, execution: Execution, scorers: list[Scorer], output: Any,
            succeeded: bool, claim: str) -> dict[str, Score | NotScored]:
    """Each scorer's result (the judge's calls recorded on the meter the caller holds)."""
    data = item.dataset_item
    evaluation: dict | None = None
    if any(s.type == "evaluation" for s in scorers) and execution.status != Execution.Status.CANCELLED:
        stored = execution_evaluate(execution_pk=execution.pk)
        if stored is not None:
            evaluation = {"accuracy": stored.accuracy, "completeness": stored.completeness,
                          "efficiency": stored.efficiency, "overall_score": stored.overall_score}
    results: dict[str, Score | NotScored] = {}
    for scorer in scorers:
        if scorer.type == "evaluation":
            results[scorer.name] = (evaluation_score(scorer, evaluation) if evaluation is not None
                                    else NotScored(NO_OUTPUT, "the run was cancelled: it has no evaluation"))
        elif scorer.type == "llm_judge":
            if succeeded:
                _renew(item, claim)
            results[scorer.name] = (_judged(scorer, experiment, execution, data, output) if succeeded
                                    else NotScored(NO_OUTPUT, "no output to judge: the run did not succeed"))
        else:
            results[scorer.name] = score(scorer, input=data.input, expected=data.expected,
                                         has_expected=data.has_expected, output=output, has_output=succeeded)
    return results


def _judged(scorer: Scorer, experiment: Experiment, execution: Execution, data, output: Any) -> Score | NotScored:
    """The judge agent's score of one output: its answer read by engine.experiments.judge; a
    judge that cannot answer, or answers no score, leaves the item not scored."""
    named = scorer.config.get("agent")
    judge = (Agent.objects.filter(agent_id=named).first() if named
             else execution_graph(execution).settings.judge_agent)
    if judge is None:
        return NotScored("NO_JUDGE", f"agent '{named}' no longer exists" if named else "the workflow has no judge agent")
    prompt = judge_prompt(scorer, input=data.input, expected=data.expected, has_expected=data.has_expected,
                          output=output)
    request = BackendRequest(
        agent_id=judge.agent_id, skills=skills(judge), required_skills=skills(judge),
        system_prompt=(judge.prompt_config or {}).get("system_prompt", ""), prompt=prompt,
        inputs={"rubric": scorer.config["rubric"], "output": output}, execution_input=dict(data.input),
        node_id=f"judge:{scorer.name}", execution_id=execution.execution_id, model=judge.model,
        max_output_tokens=judge.max_output_tokens, encoding=judge.token_encoding)
    try:
        reply = get_backend(judge.backend).complete(request)
    except BackendError as error:
        return NotScored(error.code or "JUDGE_FAILED", f"judge {judge.agent_id} could not answer: {error}"[:2000])
    answer = reply.output if isinstance(reply.output, str) else json.dumps(reply.output, ensure_ascii=False)
    try:
        return parse_judge_answer(answer)
    except JudgeAnswerError as error:
        return NotScored(error.code, f"judge {judge.agent_id}: {error}"[:2000])


def _judge_budget(experiment: Experiment) -> Budget | None:
    """The experiment's max_cost, for its judge's calls: each call's bound is claimed on the
    experiment's row under its lock, and its cost spent there as it is made."""
    if experiment.max_cost is None:
        return None
    rows = Experiment.objects.filter(pk=experiment.pk)

    def spent_and_claimed() -> tuple[int, int]:
        claimed = rows.values_list("cost_reserved", flat=True).get()
        return spent(experiment) - claimed, claimed

    def reserve(bound: int) -> bool:
        with transaction.atomic():
            lock_row(Experiment, experiment.pk)
            if spent(experiment) + bound > experiment.max_cost:
                return False
            rows.update(cost_reserved=F("cost_reserved") + bound)
            return True

    def settle(cost: int, bound: int) -> tuple[int, int]:
        with transaction.atomic():
            lock_row(Experiment, experiment.pk)
            rows.update(judge_cost=F("judge_cost") + cost, cost_reserved=F("cost_reserved") - bound)
            return spent_and_claimed()

    return Budget(run=experiment.max_cost, reserve=reserve, settle=settle, spent=spent_and_claimed)


def _stored(result: Score | NotScored) -> dict:
    if isinstance(result, Score):
        return {"score": result.value, "reason": result.reason}
    return {"not_scored": result.code, "reason": result.reason}


def _error_code(execution: Execution) -> str:
    """Why the run did not succeed: its last failed node run's code, else its status."""
    code = (execution.node_runs.exclude(error_code="").order_by("-sequence", "-id")
            .values_list("error_code", flat=True).first())
    return code or execution.status.upper()


def _node_records(execution: Execution) -> list[dict]:
    rows = (execution.node_runs.exclude(kind__in=NodeRun.COPIES).order_by("sequence", "id")
            .values("node_id", "tokens_in", "tokens_out", "context_record", "resolution_failures"))
    return [{"node_id": row["node_id"], "tokens": (row["tokens_in"] or 0) + (row["tokens_out"] or 0),
             "context_record": row["context_record"], "resolution_failures": row["resolution_failures"] or []}
            for row in rows]


# -- the sweep ------------------------------------------------------------------------------


def experiments_sweep() -> dict:
    """Score every item whose run ended unscored (its message lost, its worker killed) and
    advance every running experiment that may start more: what the beat runs."""
    scored = advanced = 0
    for pk in experiments_to_sweep():
        unscored = (ExperimentItem.objects.filter(experiment_id=pk, status=ExperimentItem.Status.RUNNING,
                                                  execution__status__in=ENDED).values_list("execution_id", flat=True))
        for execution_pk in list(unscored[:500]):
            try:
                scored += item_run_ended(execution_pk=execution_pk) == "scored"
            except Exception:  # one item that cannot be scored must not stop the others'
                logger.exception("experiments sweep: scoring the item of run %s failed", execution_pk)
        experiment_advance(experiment_pk=pk)
        summary_refresh(pk)  # figures of items ended since the last refresh, however few end from now on
        advanced += 1
    return {"scored": scored, "advanced": advanced}

