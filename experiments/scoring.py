"""An item scored when its run ends, the experiment's stored aggregates, and the sweep.

When a run of an experiment's item ends, executions sends the task `experiments.run_ended`
(its execution's pk) instead of evaluating it. `item_run_ended` then, once:

1. evaluates the run first when a scorer is `evaluation` (quality's execution_evaluate, which
   stores the seed's evaluation once however often it is asked);
2. asks the judge agent for each `llm_judge` scorer (the scorer's `agent`, else the
   workflow's judge), its calls metered and held to the experiment's max_cost;
3. scores the rest with the pure scorers (engine.experiments.scorers);
4. stores it all with the item's move from running to its end status: a conditional UPDATE,
   so a second delivery (or the sweep, at the same time) stores nothing twice;
5. advances the experiment (experiment_services.experiment_advance).

A lost message or a killed worker loses nothing: `experiments_sweep`, on the beat, finds the
running experiments with an item whose run ended unscored, or room to start more, and does
the same for them.
"""
from __future__ import annotations

import json
import logging
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from agents.backends import BackendError, BackendRequest, get_backend
from agents.backends.metering import Budget, calling, metered
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
    """Score the experiment item whose run this is, once its run has ended; then advance."""
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
    experiment = item.experiment
    scorers = check_scorers(experiment.scorers)
    succeeded = execution.status == Execution.Status.SUCCESS
    output = run_output(execution) if succeeded else None
    scores, judge = _scores(experiment, item, execution, scorers, output, succeeded)
    nodes = _node_records(execution)
    latency = ((execution.completed_at - execution.started_at).total_seconds()
               if execution.completed_at and execution.started_at else None)
    with transaction.atomic():
        lock_row(Experiment, experiment.pk)  # the experiment's row before its item's, as advance takes them
        moved = transition(
            ExperimentItem.objects, item.pk, ExperimentItem.Status.RUNNING, execution.status,
            output=output, scores={name: _stored(result) for name, result in scores.items()},
            error_code="" if succeeded else _error_code(execution), error="" if succeeded else execution.ended_reason,
            tokens=sum(node["tokens"] for node in nodes), cost=execution.cost + judge.cost, latency_seconds=latency,
            nodes=nodes, completed_at=timezone.now())
        if moved and judge.cost - judge.settled:  # the judge's calls not yet counted on the experiment
            Experiment.objects.filter(pk=experiment.pk).update(judge_cost=F("judge_cost") + judge.cost - judge.settled)
    if not moved:
        return "scored already"
    experiment_advance(experiment_pk=experiment.pk)
    # The last item of a cancelled experiment ends after the experiment did: its figures are final now.
    last = not ExperimentItem.objects.filter(experiment_id=experiment.pk, status__in=ExperimentItem.ACTIVE).exists()
    summary_refresh(experiment.pk, force=last)
    return "scored"


def _scores(experiment: Experiment, item: ExperimentItem, execution: Execution, scorers: list[Scorer], output: Any,
            succeeded: bool):
    """Each scorer's result, and the meter of the judge's calls."""
    data = item.dataset_item
    evaluation: dict | None = None
    if any(s.type == "evaluation" for s in scorers) and execution.status != Execution.Status.CANCELLED:
        stored = execution_evaluate(execution_pk=execution.pk)
        if stored is not None:
            evaluation = {"accuracy": stored.accuracy, "completeness": stored.completeness,
                          "efficiency": stored.efficiency, "overall_score": stored.overall_score}
    results: dict[str, Score | NotScored] = {}
    with metered(_judge_budget(experiment)) as meter, calling("judge"):
        for scorer in scorers:
            if scorer.type == "evaluation":
                results[scorer.name] = (evaluation_score(scorer, evaluation) if evaluation is not None
                                        else NotScored(NO_OUTPUT, "the run was cancelled: it has no evaluation"))
            elif scorer.type == "llm_judge":
                results[scorer.name] = (_judged(scorer, experiment, execution, data, output) if succeeded
                                        else NotScored(NO_OUTPUT, "no output to judge: the run did not succeed"))
            else:
                results[scorer.name] = score(scorer, input=data.input, expected=data.expected,
                                             has_expected=data.has_expected, output=output, has_output=succeeded)
    if meter.reserved:  # a call that failed: what it claimed is claimed no more
        Experiment.objects.filter(pk=experiment.pk).update(cost_reserved=F("cost_reserved") - meter.reserved)
    return results, meter


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

