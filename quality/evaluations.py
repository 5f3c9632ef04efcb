"""Evaluations (core-data-structures §7): every write of one, computed when a run ends,
given by a person, or imported. This module builds on executions (its models, its
services' graphs); executions only sends the task `executions.evaluate` by name.

`execution_evaluate` runs on a worker (the task `executions.evaluate`, sent when a run
ends in success or failure). It gathers the facts the pure scorer
(`engine.evaluation`) needs, asks the workflow's judge agent when it has one,
and stores, in one transaction:

1. the run's evaluation (target `execution`, method `computed`);
2. one evaluation per agent that ran a node, scored on that agent's node runs only;
3. the workflow's quality gate as judged on (1), on the execution;
4. the aggregate evaluations of the workflow and of those agents (the mean of their
   recent evaluations, one row per target, refreshed in place).

A second delivery of the task finds (1) stored and does nothing.
"""
from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from agents.backends import BackendError, BackendRequest, get_backend
from agents.backends.metering import calling, metered
from agents.models import Agent
from core.audit import record
from core.errors import DocumentError, SwitchyardError
from core.jsonutil import check_shape, check_storable
from core.status_writes import lock_row
from core.tasks import send_after_commit
from engine.evaluation import (
    SCORES,
    Check,
    Policy,
    RunFact,
    Scored,
    Verdict,
    aggregate,
    gate_failures,
    score_run,
    verdict_of,
)
from executions.documents import evaluation_document
from executions.models import Evaluation, Execution, NodeRun, ThoughtSearch
from executions.prompts import skills
from executions.run_graphs import execution_graph
from executions.schemas import EvaluationDocument
from executions.selectors import EVALUATED, run_evaluation
from executions.services.budget import judge_budget
from workflows.contracts import contract_results
from workflows.models import Workflow

logger = logging.getLogger(__name__)

JUDGE_SKILL = "judge_outputs"
JUDGE_OUTPUT_LIMIT = 20_000  # characters of the outputs shown to a judge

AnswerVerifier = Callable[[str, str], list[str]]
# Who checks a search's answer again: each verifier says what is wrong with `answer` to
# `problem` ([] when it is right), or raises ValueError for a problem it does not know. An app
# that knows a kind of problem registers one (the demo registers the Game of 24's exact
# arithmetic from its AppConfig.ready()), so scoring stays generic.
ANSWER_VERIFIERS: list[AnswerVerifier] = []


def register_answer_verifier(verify: AnswerVerifier) -> AnswerVerifier:
    """Let evaluations check answers again with `verify`; registering it twice changes nothing."""
    if not callable(verify):
        raise ValueError(f"an answer verifier is a function (answer, problem) -> errors, not {verify!r}")
    if verify not in ANSWER_VERIFIERS:
        ANSWER_VERIFIERS.append(verify)
    return verify


def answer_errors(answer: str, problem: str) -> list[str] | None:
    """What the first verifier that knows `problem` finds wrong with `answer` ([]: right);
    None when no registered verifier knows the problem."""
    for verify in ANSWER_VERIFIERS:
        try:
            return verify(answer, problem)
        except ValueError:  # not a problem this verifier knows
            continue
    return None


def evaluation_policy() -> Policy:
    return Policy(weights=dict(settings.EVALUATION_WEIGHTS), pass_score=settings.EVALUATION_PASS_SCORE,
                  revise_score=settings.EVALUATION_REVISE_SCORE)


def execution_evaluate(*, execution_pk: int) -> Evaluation | None:
    """Evaluate an ended run once; returns its evaluation (None: the run has not ended in
    success or failure). A run of an experiment's item (which its experiment asks to be
    evaluated) is test traffic: it gets its own evaluation only, moves no agent's or
    workflow's aggregate and raises no derive request."""
    execution = Execution.objects.select_related("workflow").filter(pk=execution_pk).first()
    if execution is None or execution.status not in EVALUATED:
        return None
    stored = run_evaluation(execution).first()
    if stored is not None:
        return stored
    counted = not execution.experiment
    graph = execution_graph(execution)
    runs = list(execution.node_runs.select_related("agent").order_by("sequence", "id"))
    checks = _checks(execution, runs, graph)
    # The judge the run's version names, as it is now (editing an agent bumps only the
    # workflows it is a node of, so the graph's copy may be older).
    judge = graph.settings.judge_agent and Agent.objects.filter(pk=graph.settings.judge_agent.pk).first()
    # The judge's calls are held to the run's max_cost like every call made for the run: a
    # run stopped by its budget has nothing left for them, and its evaluation says so.
    with metered(judge_budget(execution, graph.settings)) as meter, calling("judge"):
        verdict, judge_problem = _judge(execution, runs, checks, judge)
    if meter.reserved:  # a call that failed: what it claimed is claimed no more
        Execution.objects.filter(pk=execution.pk).update(cost_reserved=F("cost_reserved") - meter.reserved)
    policy = evaluation_policy()
    expected = _expected_nodes(graph, runs)
    wall = graph.settings.max_wall_seconds
    elapsed = ((execution.completed_at or timezone.now()) - (execution.started_at or execution.created_at)).total_seconds()
    run_failed = execution.status == Execution.Status.FAILED
    scored = score_run(expected=expected, runs=[_fact(run) for run in runs], checks=checks, verdict=verdict,
                       elapsed_seconds=elapsed, wall_seconds=wall, policy=policy, run_failed=run_failed)
    if judge_problem:
        scored.feedback.append(judge_problem)
        scored.details["accuracy"]["judge_problem"] = judge_problem
    gate = graph.settings.quality_gate
    failures = gate_failures(scored.scores(), gate) if gate else []
    scored = _with_gate(scored, gate, failures, run_failed)

    try:
        with transaction.atomic():
            locked = lock_row(Execution, execution.pk)
            stored = run_evaluation(locked).first()
            if stored is not None:  # evaluated meanwhile by another delivery
                return stored
            evaluation = _store(scored, "execution", execution.execution_id, execution=locked,
                                evaluation_id=_evaluation_id(f"eval_{execution.execution_id}"))
            if meter.calls:  # the judge's calls are part of what the run cost (held to a
                # max_cost, their cost was spent on the run's row as each was made: `settled`)
                Execution.objects.filter(pk=locked.pk).update(
                    calls=locked.calls + [call.as_dict() for call in meter.calls],
                    cost=F("cost") + meter.cost - meter.settled, cost_complete=locked.cost_complete and meter.complete)
            # The agents that ran a node here: a re-run's copies are the past run's work, a
            # gate's decision is a person's, a sub-workflow's work its child run's; none is
            # the work of the agent on record for the node.
            agents: dict[int, Agent] = {}
            for run in runs:
                kind = graph.kinds.get(run.node_id)
                if run.kind not in NodeRun.COPIES and kind is not None and kind.calls_agent and counted:
                    agents.setdefault(run.agent_id, run.agent)
            for agent in agents.values():
                mine = [run for run in runs if run.agent_id == agent.pk]
                part = score_run(
                    expected=[run.node_id for run in mine if run.node_id in expected],
                    runs=[_fact(run) for run in mine],
                    checks=[check for check in checks if check.agent_id == agent.agent_id],
                    elapsed_seconds=sum(run.duration_ms or 0 for run in mine) / 1000, wall_seconds=wall, policy=policy)
                part.details["execution_id"] = execution.execution_id
                _store(part, "agent", agent.agent_id, execution=locked,
                       evaluation_id=_evaluation_id(f"eval_{execution.execution_id}_{agent.agent_id}"))
            if gate:
                Execution.objects.filter(pk=locked.pk).update(quality_gate={
                    "passed": not failures and not run_failed, "failed": failures, "run_failed": run_failed,
                    "gate": gate, "evaluation_id": evaluation.evaluation_id})
            if counted:
                evaluation_aggregate_refresh(target_type="workflow", target_id=execution.workflow.workflow_id)
            for agent in agents.values():
                evaluation_aggregate_refresh(target_type="agent", target_id=agent.agent_id)
    except IntegrityError:  # evaluated at the same moment by another delivery
        return run_evaluation(execution).first()
    if counted:
        _after_commit_raise_derive_requests(execution.pk)
    return evaluation


def _after_commit_raise_derive_requests(execution_pk: int) -> None:
    send_after_commit("executions.raise_derive_requests", execution_pk)


def _evaluation_id(wanted: str) -> str:
    """An id as readable as its 100 characters allow, and not taken (a person may have
    recorded an evaluation under it)."""
    if len(wanted) > 100:
        wanted = f"{wanted[:70]}_{hashlib.sha256(wanted.encode()).hexdigest()[:16]}"
    if Evaluation.objects.filter(evaluation_id=wanted).exists():
        wanted = f"{wanted[:91]}_{uuid.uuid4().hex[:8]}"
    return wanted


def _fact(run: NodeRun) -> RunFact:
    agent = run.agent
    return RunFact(node_id=run.node_id, agent_id=agent.agent_id, status=run.status,
                   tokens=(run.tokens_in or 0) + (run.tokens_out or 0),
                   token_budget=agent.max_input_tokens + agent.max_output_tokens,
                   duration_ms=run.duration_ms or 0, error_code=run.error_code)


def _expected_nodes(graph, runs: list[NodeRun]) -> list[str]:
    """Every node of a seq, par or dag; the nodes a state machine entered (it visits only some)."""
    if graph.plan.topology == "state_machine":
        return list(dict.fromkeys(run.node_id for run in runs))
    return list(graph.plan.nodes)


def _checks(execution: Execution, runs: list[NodeRun], graph) -> list[Check]:
    """What can be verified: every output checked against the contracts it feeds (the
    attempts whose output broke one, and the final output of each node, re-checked, so a
    person's output given on resume is checked too), and every search's answer, again by
    the registered verifier that knows its problem (ANSWER_VERIFIERS) — a search that found
    none fails its check."""
    checks = []
    final = {}
    for run in runs:
        if run.error_code == "CONTRACT_VIOLATION":
            checks.append(Check("contract", False, run.node_id, run.agent.agent_id, run.error))
        if run.status == NodeRun.Status.SUCCESS:
            final[run.node_id] = run
    for node_id, run in final.items():
        node = graph.nodes.get(node_id)
        if node is None:
            continue
        for contract, error in contract_results(node, graph.plan, run.output, graph.contracts):
            checks.append(Check(f"contract {contract.key}", error is None, node_id, run.agent.agent_id, error or ""))
    by_pk = {run.pk: run for run in runs}
    for search in ThoughtSearch.objects.filter(execution=execution).order_by("id"):
        searched = by_pk.get(search.node_run_id)
        where = (searched.node_id, searched.agent.agent_id) if searched else ("", "")
        if not search.final_solution:  # no answer to verify: the answer check fails
            failure = search.error or {}
            checks.append(Check("verified answer", False, *where,
                                f"the search found no answer ({failure.get('code', 'no error recorded')}: "
                                f"{failure.get('message', '')})"))
            continue
        answer = search.final_solution.get("answer", "")
        errors = answer_errors(answer, search.problem)
        if errors is None:  # no verifier knows the problem: trust the search's own verification
            errors = search.final_solution.get("verification", {}).get("validation_errors", [])
            if not search.final_solution.get("verification", {}).get("is_valid"):
                errors = errors or ["the search's verification says the answer is not valid"]
        checks.append(Check("verified answer", not errors, *where,
                            f"{answer!r}: " + "; ".join(errors) if errors else str(answer)))
    return checks


def _judge(execution: Execution, runs: list[NodeRun], checks: list[Check], judge: Agent | None,
           ) -> tuple[Verdict | None, str]:
    """Ask the workflow's judge agent, when it has one, to score the run's final outputs.

    The judge gets the outputs as a structured input (`inputs["outputs"]`) and rendered in
    the prompt, and must answer `{"score": 0..1, "feedback": ["…"]}`. A judge that fails or
    answers in another shape is reported, and accuracy rests on the checks alone."""
    if judge is None:
        return None, ""
    outputs = {run.node_id: run.output for run in runs if run.status == NodeRun.Status.SUCCESS}
    shown = json.dumps(outputs, ensure_ascii=False, indent=1, default=str)[:JUDGE_OUTPUT_LIMIT]
    instructions = ((judge.prompt_config or {}).get("output_constraint")
                    or 'Answer with JSON only: {"score": <a number from 0 to 1>, "feedback": ["<one line each>"]}.')
    prompt = (f"Judge the outputs of run {execution.execution_id} of workflow {execution.workflow.workflow_id} "
              f"(status {execution.status}).\n\n## Outputs by node\n\n{shown}\n\n## Instructions\n\n{instructions}")
    request = BackendRequest(
        agent_id=judge.agent_id, skills=skills(judge), required_skills=skills(judge),
        system_prompt=(judge.prompt_config or {}).get("system_prompt", ""), prompt=prompt,
        inputs={"outputs": outputs, "checks": [check.__dict__ for check in checks]},
        execution_input=dict(execution.input), node_id="judge", execution_id=execution.execution_id,
        model=judge.model, max_output_tokens=judge.max_output_tokens, encoding=judge.token_encoding,
    )
    try:
        reply = get_backend(judge.backend).complete(request).output
    except BackendError as error:
        return None, f"judge {judge.agent_id} could not answer ({error.code}): {error}"
    score = reply.get("score") if isinstance(reply, dict) else None
    feedback = reply.get("feedback", []) if isinstance(reply, dict) else None
    if isinstance(feedback, str):
        feedback = [feedback]
    if (isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1
            or not isinstance(feedback, list) or not all(isinstance(line, str) for line in feedback)):
        return None, (f"judge {judge.agent_id} answered in another shape than "
                      f'{{"score": 0..1, "feedback": [...]}}: {json.dumps(reply, default=str)[:200]}')
    return Verdict(judge.agent_id, float(score), tuple(line[:500] for line in feedback[:20])), ""


def _with_gate(scored: Scored, gate: dict | None, failures: list[dict], run_failed: bool) -> Scored:
    """A workflow's gate is part of passing: a run that misses a minimum does not pass, and
    a run that failed never meets its gate, whatever its scores."""
    if not gate:
        return scored
    feedback = list(scored.feedback)
    details = dict(scored.details, quality_gate={"gate": gate, "failed": failures, "run_failed": run_failed})
    if not failures and not run_failed:
        feedback.append("quality gate passed: " + ", ".join(f"{k} ≥ {v}" for k, v in gate.items()))
        return Scored(**{**scored.__dict__, "feedback": feedback, "details": details})
    feedback.append("quality gate failed: " + ", ".join(["the run failed"] * run_failed + [
        f"{f['score']} not measured (minimum {f['minimum']})" if f["value"] is None
        else f"{f['score']} {f['value']:.2f} < {f['minimum']}" for f in failures]))
    action = "revise" if scored.action == "approve" else scored.action
    return Scored(**{**scored.__dict__, "passed": False, "action": action, "feedback": feedback, "details": details})


def _store(scored: Scored, target_type: str, target_id: str, *, execution: Execution | None, evaluation_id: str,
           method: str = Evaluation.Method.COMPUTED) -> Evaluation:
    return Evaluation.objects.create(
        evaluation_id=evaluation_id, target_type=target_type, target_id=target_id, method=method,
        execution=execution, workflow=_workflow_named(target_type, target_id), accuracy=scored.accuracy,
        completeness=scored.completeness, efficiency=scored.efficiency, overall_score=scored.overall_score, passed=scored.passed,
        feedback=scored.feedback, action=scored.action, details=scored.details, created_by="switchyard",
    )


def recent_evaluations(*, target_type: str, target_id: str, limit: int | None = None):
    """The evaluations an agent's or a workflow's aggregate is made of, newest first: an
    agent's own (computed per run, or given by people); a workflow's runs' evaluations and
    its own given by people."""
    limit = limit or settings.EVALUATION_AGGREGATE_WINDOW
    if target_type == "workflow":
        # An experiment's runs are test traffic: scored by their experiment, not counted here.
        query = (Q(target_type="execution", method=Evaluation.Method.COMPUTED, execution__workflow__workflow_id=target_id,
                   execution__experiment="")
                 | Q(target_type="workflow", target_id=target_id, method=Evaluation.Method.MANUAL))
    else:
        query = Q(target_type=target_type, target_id=target_id) & ~Q(method=Evaluation.Method.AGGREGATE)
    return Evaluation.objects.filter(query).order_by("-created_at", "-id")[:limit]


@transaction.atomic
def evaluation_aggregate_refresh(*, target_type: str, target_id: str) -> Evaluation | None:
    """Recompute the aggregate evaluation of an agent or workflow from its recent ones."""
    if target_type not in ("agent", "workflow"):
        return None
    rows = list(recent_evaluations(target_type=target_type, target_id=target_id)
                .values("evaluation_id", "accuracy", "completeness", "efficiency", "overall_score"))
    current = lock_row(Evaluation, missing_ok=True, target_type=target_type, target_id=target_id,
                       method=Evaluation.Method.AGGREGATE)
    if not rows:
        if current is not None:
            current.delete()
        return None
    scored = aggregate(rows, evaluation_policy())
    values = dict(accuracy=scored.accuracy, completeness=scored.completeness, efficiency=scored.efficiency,
                  overall_score=scored.overall_score, passed=scored.passed, action=scored.action,
                  feedback=scored.feedback, details=scored.details, updated_at=timezone.now())
    if current is None:
        return _store(scored, target_type, target_id, execution=None, method=Evaluation.Method.AGGREGATE,
                      evaluation_id=_evaluation_id(f"agg_{target_type}_{target_id}"))
    Evaluation.objects.filter(pk=current.pk).update(**values)
    current.refresh_from_db()
    return current


def _workflow_named(target_type: str, target_id: str) -> Workflow | None:
    """The workflow an evaluation of a workflow names, for its foreign key (which keeps the
    workflow from being deleted); None for an evaluation of anything else."""
    return Workflow.objects.filter(workflow_id=target_id).first() if target_type == "workflow" else None


def _target_exists(target_type: str, target_id: str) -> bool:
    model, field = {
        "execution": (Execution, "execution_id"),
        "agent": (Agent, "agent_id"),
        "workflow": (Workflow, "workflow_id"),
    }[target_type]
    return model._default_manager.filter(**{field: target_id}).exists()


@transaction.atomic
def evaluation_import_document(document: dict[str, Any], *, actor: str = "") -> tuple[Evaluation, str]:
    check_shape(document, EvaluationDocument, "evaluation")
    if not _target_exists(document["target_type"], document["target_id"]):
        raise DocumentError(f"{document['target_type']} '{document['target_id']}' does not exist", where="target_id")
    values = {
        "target_type": document["target_type"],
        "target_id": document["target_id"],
        "workflow": _workflow_named(document["target_type"], document["target_id"]),
        **document["scores"],
        "overall_score": document["overall_score"],
        "passed": document["pass"],
        "feedback": document.get("feedback", []),
        "action": document["action"],
    }
    evaluation = lock_row(Evaluation, missing_ok=True, evaluation_id=document["evaluation_id"])
    if evaluation is None:
        evaluation, created = Evaluation.objects.get_or_create(
            evaluation_id=document["evaluation_id"], defaults={**values, "created_by": actor}
        )
        if created:
            return evaluation, "created"
        evaluation = lock_row(Evaluation, evaluation.pk)  # created meanwhile by another import
    before = evaluation_document(evaluation)
    for name, value in values.items():
        setattr(evaluation, name, value)
    if evaluation_document(evaluation) == before:
        return evaluation, "unchanged"
    evaluation.save()
    return evaluation, "updated"


@transaction.atomic
def evaluation_create(*, document: dict[str, Any], actor: str = "") -> Evaluation:
    """Record an evaluation a person gives (§7); its id is made up when the document has
    none. Its overall score, pass and action follow from its scores by the formula computed
    evaluations use: left out, they are filled in; given otherwise, the evaluation is refused
    naming the field. Unlike an import, it never replaces a stored evaluation: that is a
    conflict, and the rollback leaves the stored one as it was."""
    check_storable(document)
    document = _with_verdict(document)
    if document.get("evaluation_id") is None:
        now = timezone.now()
        document = {**document, "evaluation_id": f"eval_{now:%Y%m%d%H%M%S}_{uuid.uuid4().hex[:8]}"}
    evaluation, outcome = evaluation_import_document(document, actor=actor)
    if outcome != "created":
        raise SwitchyardError(f"evaluation_id: evaluation '{evaluation.evaluation_id}' exists already; "
                              "evaluations are not rewritten", code="CONFLICT")
    evaluation_aggregate_refresh(target_type=evaluation.target_type, target_id=evaluation.target_id)
    record("evaluation.create", actor=actor, object_type="evaluation", object_id=evaluation.evaluation_id,
           after={"target": f"{evaluation.target_type} {evaluation.target_id}", "scores": document.get("scores"),
                  "overall_score": evaluation.overall_score, "passed": evaluation.passed,
                  "action": evaluation.action})
    return evaluation


def _with_verdict(document: dict[str, Any]) -> dict[str, Any]:
    scores = document.get("scores")
    if not (isinstance(scores, dict) and "accuracy" in scores and all(
            type(scores.get(name)) in (int, float) or (name == "accuracy" and scores[name] is None)
            for name in SCORES)):
        return document  # the shape check names what is wrong with the scores
    policy = evaluation_policy()
    derived = verdict_of(scores, policy)
    for key, value in derived.items():
        given = document.get(key, value)
        if given != value and not (key == "overall_score" and type(given) in (int, float) and abs(given - value) < 1e-4):
            weights = ", ".join(f"{policy.weights[name]:g} × {name}" for name in SCORES)
            raise DocumentError(
                f"{key} is {json.dumps(given)}, but the scores give {json.dumps(value)} (overall = {weights}, "
                f"divided by the sum of the weights, of the scores measured; pass from {policy.pass_score:g} "
                f"when accuracy was measured; revise from {policy.revise_score:g}, reject below)", where=key)
    return {**document, **derived}
