"""The evaluation pages: the list with its averages, one evaluation explained, and the form
an author records one with (through the service the API's POST uses)."""
from django import forms
from django.contrib import messages
from django.db.models import Avg, Count, Q
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse

from core.errors import SwitchyardError
from core.pages import paginate
from core.roles import AUTHOR, has_role
from engine.evaluation import SCORES
from executions import page_selectors
from executions.models import Evaluation
from quality.evaluations import evaluation_create, evaluation_policy


def evaluation_list(request):
    """Evaluations, newest first, filtered by what they are of (`target_type`, `target_id`),
    how they were made (`method`), whether they passed, or one `evaluation` id; with the
    averages of what the filter keeps (one aggregate query), so
    `?target_type=agent&target_id=X` is that agent's report. Aggregates are left out of
    the averages unless they are what was asked for: each is itself a mean of the others,
    and counting both would weigh the same runs twice."""
    filters = {key: request.GET.get(key, "").strip()
               for key in ("target_type", "target_id", "method", "pass", "evaluation")}
    evaluations = Evaluation.objects.order_by("-created_at", "-id")
    if filters["target_type"] in Evaluation.TargetType.values:
        evaluations = evaluations.filter(target_type=filters["target_type"])
    if filters["target_id"]:
        evaluations = evaluations.filter(target_id=filters["target_id"])
    if filters["method"] in Evaluation.Method.values:
        evaluations = evaluations.filter(method=filters["method"])
    if filters["pass"] in ("true", "false"):
        evaluations = evaluations.filter(passed=filters["pass"] == "true")
    if filters["evaluation"]:
        evaluations = evaluations.filter(evaluation_id=filters["evaluation"])
    aggregate = Q(method=Evaluation.Method.AGGREGATE)
    averaged = aggregate if filters["method"] == Evaluation.Method.AGGREGATE else ~aggregate
    summary = evaluations.aggregate(
        count=Count("id", filter=averaged), passed=Count("id", filter=averaged & Q(passed=True)),
        aggregates=Count("id", filter=~averaged),
        **{name: Avg(name, filter=averaged) for name in ("accuracy", "completeness", "efficiency", "overall_score")},
    )
    return render(request, "executions/evaluation_list.html", {
        **paginate(request, evaluations), "filters": filters, "summary": summary,
        "target_types": Evaluation.TargetType.choices, "methods": Evaluation.Method.choices,
        "filtered": any(filters.values()),
    })


class EvaluationForm(forms.Form):
    """An evaluation a person gives (§7). The overall score, pass and action follow from the
    scores by the same formula as computed ones (`evaluation_create` works them out)."""

    target_type = forms.ChoiceField(label="Of", choices=Evaluation.TargetType.choices)
    target_id = forms.CharField(label="Id", max_length=100, help_text="an execution, agent or workflow id")
    accuracy = forms.FloatField(min_value=0, max_value=1, required=False,
                                help_text="empty: not measured (the evaluation then does not pass)")
    completeness = forms.FloatField(min_value=0, max_value=1)
    efficiency = forms.FloatField(min_value=0, max_value=1)
    feedback = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}), help_text="one point a line")

    def document(self) -> dict:
        data = self.cleaned_data
        return {"target_type": data["target_type"], "target_id": data["target_id"].strip(),
                "scores": {name: data[name] for name in SCORES},
                "feedback": [line.strip() for line in data["feedback"].splitlines() if line.strip()]}


def evaluation_add(request):
    """Record an evaluation by hand (authors), through the service the API's POST uses."""
    if not has_role(request.user, AUTHOR):
        return render(request, "agents/forbidden.html", {"what": "record evaluations",
                                                          "back": reverse("evaluations:list")}, status=403)
    if request.method != "POST":
        form = EvaluationForm(initial={key: request.GET.get(key, "") for key in ("target_type", "target_id")})
    else:
        form = EvaluationForm(request.POST)
        if form.is_valid():
            try:
                evaluation = evaluation_create(document=form.document(), actor=request.user.get_username())
            except SwitchyardError as error:
                field = getattr(error, "where", None) if getattr(error, "where", None) in form.fields else None
                form.add_error(field, error.problem if field else str(error))
            else:
                messages.success(request, f"Recorded evaluation {evaluation.evaluation_id}.")
                return redirect("evaluations:detail", evaluation_id=evaluation.evaluation_id)
    policy = evaluation_policy()
    return render(request, "executions/evaluation_add.html", {"form": form, "policy": policy})


def evaluation_detail(request, evaluation_id: str):
    """One evaluation: its scores, pass and action, feedback, and for a computed one each
    score's formula with the figures it used; an aggregate's evaluations; the gate."""
    evaluation = page_selectors.evaluation_for_page(evaluation_id)
    if evaluation is None:
        raise Http404(f"no evaluation '{evaluation_id}'")
    return render(request, "executions/evaluation_detail.html", {
        "evaluation": evaluation,
        "explained": page_selectors.evaluation_explained(evaluation),
        "averaged": page_selectors.evaluations_averaged(evaluation),
        "same_run": page_selectors.evaluations_of_same_run(evaluation),
    })
