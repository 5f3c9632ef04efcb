"""The experiment pages: the list (filtered, paged), the new-experiment form, an experiment
(what ran over what, its progress followed live, its aggregates, its items paged) and its
cancel. Writes go through the services the API calls; authors only."""
from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.db.models import Count
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from agents.models import AgentVersion
from core.errors import DocumentError, NotFound, SwitchyardError
from core.pages import paginate
from core.roles import AUTHOR, has_role, roles_of
from engine.experiments.scorers import ScorerError, check_scorers
from executions.page_selectors import cost_text
from executions.run_graphs import run_graph
from experiments import experiment_selectors as selectors
from experiments.dataset_selectors import dataset_list as datasets_all
from experiments.experiment_services import experiment_cancel, experiment_create, experiment_start
from experiments.models import Dataset, Experiment, ExperimentItem
from workflows.models import Workflow

ACTIVE = (Experiment.Status.PENDING, Experiment.Status.RUNNING)


def _forbidden(request, what: str, back: str):
    return render(request, "agents/forbidden.html", {"what": what, "back": back, "roles": roles_of(request.user)},
                  status=403)


# -- the list -------------------------------------------------------------------------------


def experiment_list(request):
    """Newest first, paged; by workflow, dataset and status. Each row's progress comes from
    one grouped count over the page's experiments."""
    filters = {key: request.GET.get(key, "").strip()[:100] for key in ("workflow", "dataset", "status")}
    status = filters["status"] if filters["status"] in Experiment.Status.values else ""
    rows = selectors.experiment_list(status=status, workflow_id=filters["workflow"])
    if filters["dataset"]:
        rows = rows.filter(dataset_version__dataset__name=filters["dataset"])
    context = paginate(request, rows)
    experiments = list(context["page"])
    counts: dict[int, dict[str, int]] = {experiment.pk: {} for experiment in experiments}
    for row in (ExperimentItem.objects.filter(experiment__in=experiments).values("experiment_id", "status")
                .annotate(n=Count("id")).order_by()):
        counts[row["experiment_id"]][row["status"]] = row["n"]
    for experiment in experiments:
        experiment.bar = _bar(counts[experiment.pk])
        experiment.main = _main_score(experiment)
    return render(request, "experiments/experiment_list.html", {
        **context, "experiments": experiments, "filters": filters, "statuses": Experiment.Status.values,
        "workflows": Workflow.objects.filter(experiments__isnull=False).distinct().order_by("workflow_id")
        .values_list("workflow_id", flat=True)[:200],
        "datasets": Dataset.objects.filter(versions__experiments__isnull=False).distinct().order_by("name")
        .values_list("name", flat=True)[:200],
        "can_write": has_role(request.user, AUTHOR),
    })


def _bar(counts: dict[str, int]) -> dict:
    total = sum(counts.values())
    ended = sum(counts.get(status, 0) for status in ExperimentItem.ENDED)
    return {"total": total, "ended": ended, "failed": counts.get("failed", 0),
            "percent": round(100 * ended / total) if total else 0}


def _scorers(experiment: Experiment) -> list:
    """The experiment's scorers, checked as when it was created (their names and thresholds)."""
    try:
        return check_scorers(experiment.scorers)
    except ScorerError:  # stored checked; never expected
        return []


def _main_score(experiment: Experiment) -> dict | None:
    """The first scorer's name and mean, the list's one figure."""
    scorers = _scorers(experiment)
    if not scorers:
        return None
    aggregate = ((experiment.summary or {}).get("aggregates") or {}).get("scorers", {}).get(scorers[0].name) or {}
    return {"name": scorers[0].name, "mean": (aggregate.get("summary") or {}).get("mean")}


# -- one experiment ---------------------------------------------------------------------------


def _comparable(experiment: Experiment) -> list[dict[str, Any]]:
    """The other experiments over the same dataset, newest first (at most 50): what
    "Compare with…" offers."""
    others = (Experiment.objects.filter(dataset_version__dataset_id=experiment.dataset_version.dataset_id)
              .exclude(pk=experiment.pk).order_by("-created_at", "-id")
              .values("experiment_id", "name", "workflow_version__number", "status")[:50])
    return [dict(other) for other in others]


def experiment_detail(request, experiment_id: str):
    """What ran over what, the progress (followed live by static/js/experiment_detail.js while
    it runs), the aggregates and the items, paged and filtered by `?status=`."""
    try:
        experiment = selectors.experiment_get(experiment_id)
    except NotFound as error:
        raise Http404(str(error)) from None
    status = request.GET.get("status", "").strip()
    status = status if status in ExperimentItem.Status.values else ""
    context = paginate(request, selectors.experiment_items(experiment, status=status))
    scorers = _scorers(experiment)
    for item in context["page"]:
        item.score_list = [_item_score(scorer, (item.scores or {}).get(scorer.name)) for scorer in scorers]
        item.cost_text = cost_text(item.cost) if item.status in ExperimentItem.ENDED else ""
    progress = selectors.experiment_progress(experiment)
    return render(request, "experiments/experiment_detail.html", {
        **context, "experiment": experiment, "status": status, "statuses": ExperimentItem.Status.values,
        "progress": progress, "percent": round(100 * progress["ended"] / progress["total"]) if progress["total"] else 0,
        "active": experiment.status in ACTIVE, "scorers": scorers, "pins": list(selectors.pins_named(experiment.agent_versions).items()),
        "overrides": [(node, json.dumps(parts, indent=1, ensure_ascii=False))
                      for node, parts in sorted(experiment.agent_overrides.items())],
        "scorers_json": json.dumps(experiment.scorers, indent=1, ensure_ascii=False),
        "figures": _figures(experiment, scorers, progress["total"]),
        "max_cost_text": cost_text(experiment.max_cost),
        "can_cancel": has_role(request.user, AUTHOR) and experiment.status in ACTIVE,
        "comparable": _comparable(experiment),
    })


def _item_score(scorer, result: dict | None) -> dict:
    if not result:
        return {"name": scorer.name, "text": "—", "reason": "", "kind": "none"}
    if "score" in result:
        passed = result["score"] >= scorer.threshold
        return {"name": scorer.name, "text": f"{result['score']:.2f}", "reason": result.get("reason", ""),
                "kind": "pass" if passed else "fail"}
    return {"name": scorer.name, "text": f"not scored: {result.get('not_scored', '')}",
            "reason": result.get("reason", ""), "kind": "unscored"}


def _figures(experiment: Experiment, scorers: list, total: int) -> dict | None:
    """The stored aggregates as the page shows them: per scorer its mean and 95 % interval as
    percentages of the bar's width, and costs as text. None before any item has ended."""
    aggregates = (experiment.summary or {}).get("aggregates")
    if not aggregates or not aggregates.get("items"):
        return None
    rows = []
    for scorer in scorers:
        aggregate = (aggregates.get("scorers") or {}).get(scorer.name) or {}
        summary = aggregate.get("summary") or {}
        interval = summary.get("interval") or {}
        mean = summary.get("mean")
        rows.append({
            "name": scorer.name, "type": scorer.type, "threshold": scorer.threshold, "mean": mean,
            "low": interval.get("low"), "high": interval.get("high"), "pass_rate": summary.get("pass_rate"),
            "count": summary.get("count", 0), "total": total,
            "not_scored": sorted((aggregate.get("not_scored") or {}).items()),
            "bar": _interval_bar(mean, interval.get("low"), interval.get("high")),
        })
    nodes = [{**node, "trimmed_percent": round(100 * node.get("trimmed_rate", 0)),
              "summarised_percent": round(100 * node.get("summarised_rate", 0))}
             for node in (aggregates.get("nodes") or {}).values()]
    return {
        "items": aggregates.get("items"), "scorers": rows, "statuses": sorted((aggregates.get("statuses") or {}).items()),
        "failures": sorted((aggregates.get("failures_by_code") or {}).items(), key=lambda pair: (-pair[1], pair[0])),
        "tokens_total": aggregates.get("tokens_total"), "tokens_mean": aggregates.get("tokens_mean"),
        "cost_total": cost_text(round(aggregates.get("cost_total") or 0)),
        "cost_mean": cost_text(round(aggregates["cost_mean"])) if aggregates.get("cost_mean") is not None else "",
        "latency_p50": aggregates.get("latency_p50"), "latency_p95": aggregates.get("latency_p95"),
        "nodes": sorted(nodes, key=lambda node: node.get("node_id", "")),
    }


def _interval_bar(mean, low, high) -> dict | None:
    """Where the mean and its whiskers sit on a 0–1 scale, in percent (an SVG's coordinates)."""
    if mean is None:
        return None
    low = mean if low is None else low
    high = mean if high is None else high
    clamp = lambda value: round(100 * min(1.0, max(0.0, value)), 2)  # noqa: E731
    return {"mean": clamp(mean), "low": clamp(low), "high": clamp(high)}


@require_POST
def experiment_cancel_view(request, experiment_id: str):
    back = reverse("experiments:detail", args=[experiment_id])
    if not has_role(request.user, AUTHOR):
        return _forbidden(request, "cancel experiments", back)
    try:
        experiment_cancel(experiment=selectors.experiment_get(experiment_id), actor=request.user.get_username())
    except NotFound as error:
        raise Http404(str(error)) from None
    except SwitchyardError as error:
        messages.error(request, str(error))
        return redirect(back)
    messages.success(request, "Cancelled: no more items start; the runs under way are being stopped.")
    return redirect(back)


# -- the new-experiment form --------------------------------------------------------------------

# The scorers with a checkbox, each with its fields (name in the form → the scorer's field).
SIMPLE_SCORERS = {
    "exact": {"path": "path"},
    "contains": {"path": "path", "case_sensitive": "case_sensitive"},
    "regex": {"path": "path", "pattern": "pattern"},
    "numeric": {"path": "path", "tolerance": "tolerance"},
}
EVALUATION_SCORES = ("overall", "accuracy", "completeness", "efficiency")


class ExperimentForm(forms.Form):
    """What experiment_create takes, a field for each; the pins and overrides are made for the
    chosen workflow's nodes and agents (`node_fields`, `agent_fields`)."""

    name = forms.CharField(label="Name", max_length=200, required=False, help_text="optional")
    workflow_id = forms.ChoiceField(label="Workflow")
    workflow_version = forms.TypedChoiceField(label="Workflow version", required=False, coerce=int, empty_value=None)
    dataset = forms.ChoiceField(label="Dataset")
    dataset_version = forms.TypedChoiceField(label="Dataset version", required=False, coerce=int, empty_value=None)
    concurrency = forms.IntegerField(label="Concurrency", required=False, min_value=1, max_value=1000,
                                     help_text=f"items run at once; empty: {settings.EXPERIMENT_CONCURRENCY}")
    max_cost = forms.DecimalField(label="Max cost (USD)", required=False, min_value=Decimal("0.000001"),
                                  max_value=1_000_000, help_text="the runs and the judge together; empty: no limit")
    exact = forms.BooleanField(label="exact: the output equals the expected value", required=False)
    exact_path = forms.CharField(label="Path", required=False, max_length=500, initial="$")
    contains = forms.BooleanField(label="contains: the output's text contains the expected text", required=False)
    contains_path = forms.CharField(label="Path", required=False, max_length=500, initial="$")
    contains_case_sensitive = forms.BooleanField(label="Case sensitive", required=False, initial=True)
    regex = forms.BooleanField(label="regex: a pattern is found in the output's text", required=False)
    regex_path = forms.CharField(label="Path", required=False, max_length=500, initial="$")
    regex_pattern = forms.CharField(label="Pattern", required=False, max_length=1000)
    numeric = forms.BooleanField(label="numeric: the output is the expected number, within a tolerance", required=False)
    numeric_path = forms.CharField(label="Path", required=False, max_length=500, initial="$")
    numeric_tolerance = forms.FloatField(label="Tolerance", required=False, min_value=0, initial=0)
    evaluation = forms.BooleanField(label="evaluation: the run's evaluation", required=False)
    evaluation_score = forms.ChoiceField(label="Score", required=False, choices=[(s, s) for s in EVALUATION_SCORES])
    evaluation_pass_at = forms.FloatField(label="Passes at", required=False, min_value=0, max_value=1, initial=0.7)
    llm_judge = forms.BooleanField(label="llm_judge: a judge agent scores it by a rubric", required=False)
    llm_judge_rubric = forms.CharField(label="Rubric", required=False, max_length=20000,
                                       widget=forms.Textarea(attrs={"rows": 3}))
    llm_judge_agent = forms.CharField(label="Judge agent", required=False, max_length=100,
                                      help_text="an agent id; empty: the workflow's judge")
    scorers_json = forms.CharField(label="More scorers (a JSON list)", required=False, max_length=100_000,
                                   widget=forms.Textarea(attrs={"rows": 4}),
                                   help_text='e.g. [{"type": "json_schema", "schema": {"type": "object"}}]')

    def __init__(self, *args, graph=None, versions=(), dataset_versions=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["workflow_id"].choices = [("", "—"), *((w.workflow_id, f"{w.name} ({w.workflow_id})")
                                                         for w in Workflow.objects.order_by("workflow_id")[:500])]
        self.fields["dataset"].choices = [("", "—"), *((d.name, d.name) for d in datasets_all()[:500])]
        self.fields["workflow_version"].choices = [("", "the latest"), *((n, f"version {n}") for n in versions)]
        self.fields["dataset_version"].choices = [("", "the latest"), *((n, f"version {n}") for n in dataset_versions)]
        self.node_fields: list[str] = []
        self.agent_fields: list[tuple[str, str, str]] = []  # (agent id, backend field, model field)
        if graph is not None:
            self._graph_fields(graph)

    def _graph_fields(self, graph) -> None:
        """A version pin per node that calls its agent; a backend and model per agent."""
        backends = [("", "its own"), *((name, name) for name in sorted(settings.LLM_BACKENDS))]
        agents: dict[str, object] = {}
        for node_id in graph.nodes:
            agent = graph.agents.get(graph.plan.agents.get(node_id))
            if agent is None or not graph.kinds[node_id].calls_agent:
                continue
            agents.setdefault(agent.agent_id, agent)
            versions = AgentVersion.objects.filter(agent=agent).values_list("version", flat=True)[:100]
            field = f"pin__{node_id}"
            self.fields[field] = forms.ChoiceField(
                label=f"{node_id} runs {agent.agent_id}", required=False,
                choices=[("", "its latest version"), *((v, v) for v in versions)])
            self.node_fields.append(field)
        for agent_id in agents:
            backend, model = f"backend__{agent_id}", f"model__{agent_id}"
            self.fields[backend] = forms.ChoiceField(label=f"{agent_id}: backend", required=False, choices=backends)
            self.fields[model] = forms.CharField(label=f"{agent_id}: model", required=False, max_length=200,
                                                 help_text="empty: the backend's")
            self.agent_fields.append((agent_id, backend, model))

    def scorers(self) -> tuple[list, list[str]]:
        """The scorers asked for, and for each the form field a refusal of it is shown at."""
        data = self.cleaned_data
        scorers: list = []
        fields: list[str] = []
        for kind, parts in SIMPLE_SCORERS.items():
            if not data.get(kind):
                continue
            scorer: dict = {"type": kind}
            for part, key in parts.items():
                value = data.get(f"{kind}_{part}")
                if value not in (None, ""):
                    scorer[key] = value
            scorers.append(scorer)
            fields.append(kind)
        if data.get("evaluation"):
            scorer = {"type": "evaluation", "score": data.get("evaluation_score") or "overall"}
            if data.get("evaluation_pass_at") is not None:
                scorer["pass_at"] = data["evaluation_pass_at"]
            scorers.append(scorer)
            fields.append("evaluation")
        if data.get("llm_judge"):
            scorer = {"type": "llm_judge", "rubric": data.get("llm_judge_rubric", "")}
            if data.get("llm_judge_agent"):
                scorer["agent"] = data["llm_judge_agent"]
            scorers.append(scorer)
            fields.append("llm_judge")
        if data.get("scorers_json", "").strip():
            try:
                more = json.loads(data["scorers_json"])
            except ValueError as error:
                raise DocumentError(f"is not JSON: {error}", where="scorers_json") from None
            if not isinstance(more, list):
                raise DocumentError("is a JSON list of scorers", where="scorers_json")
            scorers += more
            fields += ["scorers_json"] * len(more)
        return scorers, fields

    def asked(self) -> dict:
        """The pins by node and the model overrides by agent, as experiment_create takes them."""
        data = self.cleaned_data
        pins = {field.split("__", 1)[1]: data[field] for field in self.node_fields if data.get(field)}
        overrides = {}
        for agent_id, backend, model in self.agent_fields:
            runtime = {key: data[field] for key, field in (("backend", backend), ("model", model)) if data.get(field)}
            if runtime:
                overrides[agent_id] = {"runtime": runtime}
        return {"agent_versions": pins, "agent_overrides": overrides}


def experiment_new(request):
    """The form: the workflow and dataset chosen (prefilled by `?workflow=` and `?dataset=`),
    their versions, pins and model overrides for the chosen workflow's nodes and agents,
    scorers, caps. Sent: created and started, then its page; a refusal is shown at the
    field it names, with everything typed kept, and nothing is stored. Choosing another
    workflow asks for the form again (a GET with what was typed) with that workflow's nodes."""
    if not has_role(request.user, AUTHOR):
        return _forbidden(request, "run experiments", reverse("experiments:list"))
    source = request.POST if request.method == "POST" else request.GET
    workflow = Workflow.objects.filter(workflow_id=source.get("workflow_id") or source.get("workflow") or "").first()
    dataset = Dataset.objects.filter(name=source.get("dataset") or "").first()
    graph, problem = _graph(workflow, source.get("workflow_version"))
    kwargs = {"graph": graph,
              "versions": list(workflow.versions.order_by("-number").values_list("number", flat=True)[:200])
              if workflow else [],
              "dataset_versions": list(dataset.versions.order_by("-number").values_list("number", flat=True)[:200])
              if dataset else []}
    if request.method == "POST":
        form = ExperimentForm(request.POST, **kwargs)
        if form.is_valid():
            experiment = _create(request, form)
            if experiment is not None:
                messages.success(request, f"Started experiment {experiment.experiment_id} over "
                                          f"{experiment.dataset_version.item_count} items.")
                return redirect("experiments:detail", experiment_id=experiment.experiment_id)
    else:
        initial = {key: value for key, value in request.GET.items() if key != "csrfmiddlewaretoken"}
        initial.update({"workflow_id": workflow.workflow_id if workflow else "", "dataset": dataset.name if dataset else ""})
        form = ExperimentForm(initial=initial, **kwargs)
    return render(request, "experiments/experiment_new.html", {
        "form": form, "graph_problem": problem, "workflow": workflow,
        "simple_scorers": [(form[kind], [form[f"{kind}_{part}"] for part in parts])
                           for kind, parts in SIMPLE_SCORERS.items()],
        "pin_fields": [form[field] for field in form.node_fields],
        "agent_fields": [(agent_id, form[backend], form[model]) for agent_id, backend, model in form.agent_fields],
    })


def _graph(workflow: Workflow | None, number: str | None):
    """The chosen workflow version's graph (its nodes and agents make the pins and overrides),
    and the problem when it cannot be read."""
    if workflow is None:
        return None, ""
    try:
        _, graph = run_graph(workflow, int(number) if number and number.isdigit() and len(number) < 10 else None)
    except SwitchyardError as error:
        return None, str(error)
    return graph, ""


# The fields experiment_create names as the form names them.
SAME_NAME = ("workflow_id", "workflow_version", "dataset", "dataset_version", "concurrency", "max_cost", "name",
             "scorers_json")


def _create(request, form: ExperimentForm) -> Experiment | None:
    """experiment_create and experiment_start, as the API does; a refusal added to the form at
    the field it names (None returned)."""
    data = form.cleaned_data
    scorer_fields: list[str] = []
    try:
        scorers, scorer_fields = form.scorers()
        asked = form.asked()
        experiment = experiment_create(
            workflow_id=data["workflow_id"], workflow_version=data["workflow_version"], dataset=data["dataset"],
            dataset_version_number=data["dataset_version"], name=data["name"], scorers=scorers,
            concurrency=data["concurrency"], max_cost=data["max_cost"], actor=request.user.get_username(), **asked)
        return experiment_start(experiment=experiment)
    except SwitchyardError as error:
        form.add_error(_field_of(form, str(getattr(error, "where", "") or ""), scorer_fields), str(error))
        return None


def _field_of(form: ExperimentForm, where: str, scorer_fields: list[str]) -> str | None:
    """The form's field for a refusal's `where` (agent_versions.NODE, agent_overrides.AGENT…,
    scorers[i]…); None: shown above the form."""
    head = where.split(".", 1)[0]
    if head in SAME_NAME:
        return head
    if head.startswith("scorers[") and "]" in head:
        index = head[len("scorers["):head.index("]")]
        if index.isdigit() and int(index) < len(scorer_fields):
            return scorer_fields[int(index)]
        return None
    parts = where.split(".")
    if head == "agent_versions" and len(parts) > 1 and f"pin__{parts[1]}" in form.fields:
        return f"pin__{parts[1]}"
    if head == "agent_overrides" and len(parts) > 1:
        model = f"model__{parts[1]}" if parts[-1] == "model" else None
        backend = f"backend__{parts[1]}"
        for candidate in (model, backend):
            if candidate and candidate in form.fields:
                return candidate
    return None
