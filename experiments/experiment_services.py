"""Writes for experiments: create (everything checked first), start, advance, cancel.

An experiment runs a pinned workflow version over a dataset version, one real run per item.
`experiment_advance` is the one place items start: under the experiment's row lock it starts
pending items up to the caps (its `concurrency`, and EXPERIMENT_MAX_RUNNING_ITEMS across all
experiments, so people's own runs keep workers), each item's run created in the same
transaction as its move from pending to running — a crash loses the two together or keeps
them together, so an item is never run twice nor lost. It is idempotent: the task that
scores an ended item calls it, and so does the sweep (experiments/scoring.py).
"""
from __future__ import annotations

import uuid
from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from agents.backends.metering import units, usd
from agents.documents import CONTEXT_LIMIT_FIELDS, RUNTIME_FIELDS, agent_document
from agents.models import Agent, AgentVersion
from agents.schemas import AgentDocument
from core.errors import DocumentError, IllegalTransition, SwitchyardError, WorkflowInvalid, echo
from core.jsonutil import check_shape, json_object
from core.status_writes import lock_row, transition, transition_all
from engine.experiments.scorers import ScorerError, check_scorers
from executions.models import Execution
from executions.run_graphs import run_graph
from executions.services import execution_cancel, execution_start
from experiments.dataset_selectors import dataset_get, dataset_version
from experiments.models import DatasetItem, Experiment, ExperimentItem
from experiments.summaries import summary_refresh
from workflows.models import Workflow

ITEMS_BATCH = 1000
OVERRIDE_PARTS = ("name", "type", "prompt_config", "capabilities", "constraints", "runtime", "context_limits")
CURRENT = "current"
MAX_COST_USD = 1_000_000
# The key of the lock every advance takes first on PostgreSQL, so that two experiments
# advancing at once never together start more than EXPERIMENT_MAX_RUNNING_ITEMS items.
ADVANCE_LOCK = 0x5377_6578  # "Swex"


def experiment_create(*, workflow_id: str, dataset: str, workflow_version: int | None = None,
                      dataset_version_number: int | None = None, agent_versions: Any = None,
                      agent_overrides: Any = None, scorers: Any = None, concurrency: Any = None,
                      max_cost: Any = None, name: str = "", actor: str = "") -> Experiment:
    """A pending experiment and one pending item per item of the dataset version. Everything
    is checked before anything is written; a refusal names its field."""
    workflow = Workflow.objects.filter(workflow_id=workflow_id).first() if isinstance(workflow_id, str) else None
    if workflow is None:
        raise DocumentError(f"workflow '{echo(str(workflow_id))}' does not exist", where="workflow_id")
    version, graph = run_graph(workflow, workflow_version)
    if version is None:
        raise DocumentError(f"workflow '{workflow.workflow_id}' has no saved version to pin: save it first",
                            where="workflow_version")
    if graph.problems:
        raise WorkflowInvalid(graph.problems, workflow_id=workflow.workflow_id)
    try:
        data_version = dataset_version(dataset_get(dataset), dataset_version_number)
    except SwitchyardError as missing:
        raise DocumentError(missing.message, where="dataset_version" if dataset_version_number else "dataset") from None
    if not data_version.item_count:
        raise DocumentError(f"version {data_version.number} of dataset '{dataset}' has no items", where="dataset_version")
    pins = _pins(json_object(agent_versions, "agent_versions", storable=True), graph)
    overrides = _overrides(json_object(agent_overrides, "agent_overrides", storable=True), graph)
    _scorers(scorers if scorers is not None else [], graph)
    if not isinstance(name, str) or len(name) > 200:
        raise DocumentError("is a text of at most 200 characters", where="name")
    with transaction.atomic():
        experiment = Experiment.objects.create(
            experiment_id=f"exp_{timezone.now():%Y%m%d%H%M%S}_{uuid.uuid4().hex[:8]}", name=name,
            workflow=workflow, workflow_version=version, dataset_version=data_version,
            agent_versions={node: pk for node, pk in pins.items()}, agent_overrides=overrides,
            asked={"agent_versions": agent_versions or {}, "agent_overrides": agent_overrides or {}},
            scorers=scorers or [], concurrency=_concurrency(concurrency), max_cost=_max_cost(max_cost),
            created_by=actor,
        )
        _create_items(experiment, data_version)
    return experiment


def experiment_start(*, experiment: Experiment) -> Experiment:
    """Start a pending experiment: its first items start at once (up to the caps)."""
    with transaction.atomic():
        moved = transition(Experiment, experiment.pk, Experiment.Status.PENDING, Experiment.Status.RUNNING,
                           started_at=timezone.now())
        if moved != 1:
            raise IllegalTransition(f"experiment {experiment.experiment_id} has started already", code="CONFLICT")
    experiment_advance(experiment_pk=experiment.pk)
    experiment.refresh_from_db()
    return experiment


def experiment_advance(*, experiment_pk: int) -> str:
    """Start pending items up to the caps, and end the experiment once no item is pending or
    running. Safe to call any number of times, from anywhere: what it does is decided under
    the experiment's row lock. Returns the experiment's status."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [ADVANCE_LOCK])
        experiment = lock_row(Experiment, experiment_pk)
        if experiment.status != Experiment.Status.RUNNING:
            return experiment.status
        items = ExperimentItem.objects.filter(experiment=experiment)
        if over_budget(experiment):
            transition_all(items, ExperimentItem.Status.PENDING, ExperimentItem.Status.CANCELLED,
                           error_code="BUDGET_EXCEEDED", completed_at=timezone.now(),
                           error=f"not started: the experiment's max_cost ${usd(experiment.max_cost)} was reached")
        else:
            _start_items(experiment, items)
        left = items.filter(status__in=(ExperimentItem.Status.PENDING, ExperimentItem.Status.RUNNING)).exists()
        if left:
            return experiment.status
        budget_ended = items.filter(error_code="BUDGET_EXCEEDED").exists()
        status = Experiment.Status.CANCELLED if budget_ended else Experiment.Status.SUCCESS
        transition(Experiment, experiment.pk, Experiment.Status.RUNNING, status, completed_at=timezone.now(),
                   cancelled_by="max_cost" if budget_ended else "")
        summary_refresh(experiment.pk, force=True)
        return status


def _start_items(experiment: Experiment, items) -> None:
    running_here = items.filter(status=ExperimentItem.Status.RUNNING).count()
    running_all = ExperimentItem.objects.filter(status=ExperimentItem.Status.RUNNING).count()
    room = min(experiment.concurrency - running_here, settings.EXPERIMENT_MAX_RUNNING_ITEMS - running_all)
    if room <= 0:
        return
    pending = list(items.filter(status=ExperimentItem.Status.PENDING).select_related("dataset_item")
                   .order_by("position")[:room])
    if not pending:
        return
    workflow, number = experiment.workflow, experiment.workflow_version.number
    for item in pending:
        _start_item(experiment, item, workflow, number)


def _start_item(experiment: Experiment, item: ExperimentItem, workflow: Workflow, number: int) -> None:
    """The item's run, created in the same transaction as the item's move to running. An
    input the workflow refuses fails the item, naming why."""
    now = timezone.now()
    try:
        with transaction.atomic():
            execution = execution_start(
                workflow=workflow, input=item.dataset_item.input, version=number, experiment=experiment.experiment_id,
                agent_versions=experiment.agent_versions, agent_overrides=experiment.agent_overrides,
                execution_id=f"{experiment.experiment_id}_{item.position}_{uuid.uuid4().hex[:6]}")
            transition(ExperimentItem.objects, item.pk, ExperimentItem.Status.PENDING, ExperimentItem.Status.RUNNING,
                       execution=execution, started_at=now)
    except (DocumentError, WorkflowInvalid) as refused:
        transition(ExperimentItem.objects, item.pk, ExperimentItem.Status.PENDING, ExperimentItem.Status.FAILED,
                   error_code=refused.code, error=str(refused)[:2000], completed_at=now)


def experiment_cancel(*, experiment: Experiment, actor: str = "") -> Experiment:
    """Cancel an experiment: its pending items are cancelled, its running items' runs are
    cancelled (each item then ends cancelled when its run's end is scored), and no item
    starts again."""
    with transaction.atomic():
        locked = lock_row(Experiment, experiment.pk)
        if locked.status not in (Experiment.Status.PENDING, Experiment.Status.RUNNING):
            raise IllegalTransition(f"experiment {locked.experiment_id} is {locked.status}: only a pending or "
                                    "running experiment can be cancelled", code="CONFLICT")
        now = timezone.now()
        transition(Experiment, locked.pk, locked.status, Experiment.Status.CANCELLED, completed_at=now,
                   cancelled_by=actor or "someone")
        transition_all(ExperimentItem.objects.filter(experiment=locked), ExperimentItem.Status.PENDING,
                       ExperimentItem.Status.CANCELLED, completed_at=now, error_code="CANCELLED",
                       error=f"not started: the experiment was cancelled by {actor or 'someone'}")
    summary_refresh(experiment.pk, force=True)
    running = Execution.objects.filter(experiment_item__experiment=experiment,
                                       status__in=(Execution.Status.PENDING, Execution.Status.RUNNING,
                                                   Execution.Status.ESCALATED, Execution.Status.WAITING))
    for execution in running:
        try:
            execution_cancel(execution=execution, actor=_Actor(actor))
        except IllegalTransition:  # it ended meanwhile: its end is scored as any other
            pass
    experiment.refresh_from_db()
    return experiment


class _Actor:
    """Who cancelled, as execution_cancel names them."""

    def __init__(self, username: str):
        self.username = username or "someone"
        self.pk = None


def over_budget(experiment: Experiment) -> bool:
    """Whether the experiment has spent its max_cost (its runs' and its judge's calls)."""
    return experiment.max_cost is not None and spent(experiment) >= experiment.max_cost


def spent(experiment: Experiment) -> int:
    """Units spent by the experiment: its items' runs and its judge's calls, and those claimed."""
    runs = Execution.objects.filter(experiment_item__experiment_id=experiment.pk).aggregate(cost=Sum("cost"))["cost"]
    row = Experiment.objects.filter(pk=experiment.pk).values("judge_cost", "cost_reserved").get()
    return (runs or 0) + row["judge_cost"] + row["cost_reserved"]


def status_counts(experiment: Experiment) -> dict[str, int]:
    """Items by status, in one grouped query (read from the index)."""
    counts = dict.fromkeys(ExperimentItem.Status.values, 0)
    rows = ExperimentItem.objects.filter(experiment=experiment).values("status").annotate(n=Count("id")).order_by()
    counts.update({row["status"]: row["n"] for row in rows})
    return counts


# -- what create checks ------------------------------------------------------------------


def _nodes_of(key: str, graph, where: str) -> list[str]:
    """The nodes a key names: a node id, else every node that runs the agent of that id."""
    if key in graph.nodes:
        return [key]
    nodes = [node_id for node_id, agent_pk in graph.plan.agents.items()
             if graph.agents.get(agent_pk) is not None and graph.agents[agent_pk].agent_id == key
             and graph.kinds[node_id].calls_agent]
    if not nodes:
        known = ", ".join(sorted(graph.nodes))
        raise DocumentError(f"'{echo(key)}' is neither a node of the workflow ({known}) nor an agent one of its "
                            "nodes runs", where=where)
    return nodes


def _pins(asked: dict, graph) -> dict[str, int]:
    """node id → the AgentVersion pk its runs use: a version name of its agent, or `current`;
    a pin by agent applies to every node that runs it (a pin by node wins over it)."""
    pinned: dict[str, int] = {}
    by_node: set[str] = set()
    for key, name in sorted(asked.items(), key=lambda pair: pair[0] in graph.nodes):  # agents first, nodes win
        where = f"agent_versions.{key}"
        if not isinstance(name, str) or not name:
            raise DocumentError(f"is a version name of the agent, or '{CURRENT}'", where=where)
        for node_id in _nodes_of(key, graph, where):
            if not graph.kinds[node_id].calls_agent:
                raise DocumentError(f"node '{node_id}' never calls its agent, so it has no version to pin", where=where)
            agent = graph.agents[graph.plan.agents[node_id]]
            versions = AgentVersion.objects.filter(agent=agent)
            version = versions.first() if name == CURRENT else versions.filter(version=name).first()
            if version is None:
                known = ", ".join(versions.values_list("version", flat=True)) or "none"
                raise DocumentError(f"agent '{agent.agent_id}' has no version '{echo(name)}' (its versions: {known})",
                                    where=where)
            if node_id not in by_node:
                pinned[node_id] = version.pk
            if key in graph.nodes:
                by_node.add(node_id)
    return pinned


def _overrides(asked: dict, graph) -> dict[str, dict]:
    """node id → the agent content parts its runs use instead of its agent's: checked part by
    part (a backend must be configured); by agent, for every node that runs it."""
    overrides: dict[str, dict] = {}
    for key, parts in sorted(asked.items(), key=lambda pair: pair[0] in graph.nodes):
        where = f"agent_overrides.{key}"
        nodes = _nodes_of(key, graph, where)
        checked = _parts(parts, where)
        for node_id in nodes:
            if not graph.kinds[node_id].calls_agent:
                raise DocumentError(f"node '{node_id}' never calls its agent, so nothing runs in its place", where=where)
            _check_as_agent(graph.agents[graph.plan.agents[node_id]], checked, where)
            overrides[node_id] = {**overrides.get(node_id, {}), **checked}
    return overrides


def _check_as_agent(agent: Agent, parts: dict, where: str) -> None:
    """The agent with the parts in their place must be an agent document like any other: a
    part of the wrong type is refused here, naming it, not when a node runs it."""
    document = agent_document(agent)
    merged = {**document, **{part: value for part, value in parts.items() if part not in ("runtime", "context_limits")}}
    for part in ("runtime", "context_limits"):
        merged[part] = {**document.get(part, {}), **parts.get(part, {})}
    try:
        check_shape(merged, AgentDocument, "agent")
    except DocumentError as error:
        raise DocumentError(error.problem, where=f"{where}.{error.where}", details=error.details) from None


def _parts(parts: Any, where: str) -> dict:
    if not isinstance(parts, dict) or not parts:
        raise DocumentError(f"is an object of agent parts ({', '.join(OVERRIDE_PARTS)})", where=where)
    for part, value in parts.items():
        at = f"{where}.{part}"
        if part not in OVERRIDE_PARTS:
            raise DocumentError(f"is not a part an experiment can change (those: {', '.join(OVERRIDE_PARTS)})", where=at)
        if part in ("name", "type") and not isinstance(value, str):
            raise DocumentError("is a text", where=at)
        if part in ("prompt_config", "capabilities", "runtime", "context_limits") and not isinstance(value, dict):
            raise DocumentError("is a JSON object", where=at)
        if part == "constraints" and not (isinstance(value, list) and all(isinstance(c, str) for c in value)):
            raise DocumentError("is a list of texts", where=at)
    for field, value in parts.get("runtime", {}).items():
        at = f"{where}.runtime.{field}"
        if field not in RUNTIME_FIELDS:
            raise DocumentError(f"is not a runtime field (those: {', '.join(RUNTIME_FIELDS)})", where=at)
        if field in ("backend", "model", "encoding", "role") and not isinstance(value, str):
            raise DocumentError("is a text", where=at)
    backend = parts.get("runtime", {}).get("backend")
    if backend is not None and backend not in (getattr(settings, "LLM_BACKENDS", {}) or {}):
        available = ", ".join(sorted(settings.LLM_BACKENDS)) or "none"
        raise DocumentError(f"'{echo(backend)}' is not a configured backend (available: {available})",
                            where=f"{where}.runtime.backend")
    for field, value in parts.get("context_limits", {}).items():
        at = f"{where}.context_limits.{field}"
        if field not in CONTEXT_LIMIT_FIELDS:
            raise DocumentError(f"is not a context limit (those: {', '.join(CONTEXT_LIMIT_FIELDS)})", where=at)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise DocumentError("is a whole number ≥ 0", where=at)
    return parts


def _scorers(doc: Any, graph) -> list:
    """The scorers, checked (engine.experiments.scorers); a judge needs an agent to ask."""
    try:
        checked = check_scorers(doc)
    except ScorerError as error:
        raise DocumentError(str(error)[len(error.field) + 1:], where=error.field) from None
    for index, scorer in enumerate(checked):
        if scorer.type != "llm_judge":
            continue
        named = scorer.config.get("agent")
        if named is None and graph.settings.judge_agent is None:
            raise DocumentError("the workflow has no judge agent: name the agent that judges", where=f"scorers[{index}].agent")
        if named is not None and not Agent.objects.filter(agent_id=named).exists():
            raise DocumentError(f"agent '{named}' does not exist", where=f"scorers[{index}].agent")
    return checked


def _concurrency(value: Any) -> int:
    if value is None:
        return settings.EXPERIMENT_CONCURRENCY
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1000:
        raise DocumentError("is a whole number from 1 to 1000: how many items run at once", where="concurrency")
    return value


def _max_cost(value: Any) -> int | None:
    """USD (a number, or a decimal text) as units of 10⁻¹² USD."""
    if value is None:
        return None
    try:
        amount = Decimal(str(value)) if not isinstance(value, bool) else None
    except InvalidOperation:
        amount = None
    if amount is None or not amount.is_finite() or not 0 < amount <= MAX_COST_USD:
        raise DocumentError(f"is an amount of USD above 0 and at most {MAX_COST_USD:,}, e.g. 2.50", where="max_cost")
    return units(amount)


def _create_items(experiment: Experiment, version) -> None:
    """One pending item per dataset item, in the dataset's order, written a batch at a time."""
    batch: list[ExperimentItem] = []
    rows = DatasetItem.objects.filter(version=version).order_by("position").values_list("pk", "position")
    for pk, position in rows.iterator(chunk_size=ITEMS_BATCH):
        batch.append(ExperimentItem(experiment=experiment, dataset_item_id=pk, position=position))
        if len(batch) == ITEMS_BATCH:
            ExperimentItem.objects.bulk_create(batch)
            batch = []
    ExperimentItem.objects.bulk_create(batch)


def experiments_to_sweep() -> list[int]:
    """Running experiments with an item whose run ended unscored, or with room to start more."""
    ended = (Execution.Status.SUCCESS, Execution.Status.FAILED, Execution.Status.CANCELLED)
    running = Experiment.objects.filter(status=Experiment.Status.RUNNING)
    return list(running.annotate(
        unscored=Count("items", filter=Q(items__status=ExperimentItem.Status.RUNNING,
                                         items__execution__status__in=ended)),
        pending=Count("items", filter=Q(items__status=ExperimentItem.Status.PENDING)),
        active=Count("items", filter=Q(items__status=ExperimentItem.Status.RUNNING)),
    ).filter(Q(unscored__gt=0) | Q(pending__gt=0) | Q(active=0)).values_list("pk", flat=True)[:100])
