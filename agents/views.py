"""The agent pages (the derive-request pages are in `quality/derive_requests/views.py`).
Reads come from `agents.selectors`, and the runs and evaluations an agent's page lists from
`agents.run_readers` (executions registers them). The one write made here (the edit form)
goes through `agents.services.agent_update`, the service the API's PUT uses. Raising a
derive request from an agent's page happens in the page's script, through the API."""
from __future__ import annotations

from typing import Any, cast

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import Http404, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse

from agents import selectors, services
from agents.agent_tools import catalogue_choices, missing_tools, tool_listing
from agents.documents import TOOL_SETTING_FIELDS, agent_document
from agents.models import MAX_TOOL_CALLS, Agent, DeriveRequest
from agents.run_readers import run_readers
from core.errors import DocumentError, NotFound, SwitchyardError
from core.pages import paginate
from core.roles import AUTHOR, has_role

PROMPT_LABELS = {
    "system_prompt": "System prompt",
    "role_play": "Role play",
    "task_context": "Task context",
    "thinking_process": "Thinking process",
    "output_constraint": "Output constraint",
}
CAPABILITY_LABELS = {"skills": "Skills", "tools": "Tools", "knowledge_domains": "Knowledge domains"}
TEXT_CAPABILITIES = ("skills", "knowledge_domains")  # written as text in the editor; tools are picked


def _found(lookup, *args):
    try:
        return lookup(*args)
    except NotFound as error:
        raise Http404(error.message) from None


def agent_list(request):
    agents = Agent.objects.select_related("parent", "root").order_by("agent_id")
    filters = {key: request.GET.get(key, "").strip() for key in ("status", "type", "q")}
    if filters["status"]:
        agents = agents.filter(status=filters["status"])
    if filters["type"]:
        agents = agents.filter(type=filters["type"])
    if filters["q"]:
        agents = agents.filter(agent_id__icontains=filters["q"]) | agents.filter(name__icontains=filters["q"])
    return render(request, "agents/agent_list.html", {
        **paginate(request, agents), "filters": filters,
        "statuses": Agent.Status.choices, "types": Agent.Type.choices,
    })


def _comparison(request, versions: list[dict[str, Any]]) -> tuple[str, str] | None:
    """The two versions to compare: the ones asked for, else the previous against the latest."""
    if len(versions) < 2:
        return None
    names = [v["version"] for v in versions]
    older, newer = request.GET.get("from", ""), request.GET.get("to", "")
    if older not in names or newer not in names:
        older, newer = names[1], names[0]
    return older, newer


def _lineage_graph(family: dict[str, Any]) -> dict[str, Any]:
    """The family as the graph script draws it: one node per agent, an edge to each child."""
    nodes = [{"id": n["agent_id"], "label": f"{n['name']}\n{n['version']}", "status": n["status"],
              "current": n["current"], "href": reverse("agents:detail", args=[n["agent_id"]])}
             for n in family["nodes"]]
    edges = [{"source": n["parent_id"], "target": n["agent_id"]} for n in family["nodes"] if n["parent_id"]]
    return {"nodes": nodes, "edges": edges}


def agent_detail(request, agent_id: str):
    agent = _found(selectors.agent_for_page, agent_id)
    versions = selectors.agent_version_list(agent)
    compare = _comparison(request, versions)
    family = selectors.lineage_family(agent)
    limits = agent.context_limits
    runs = run_readers()
    return render(request, "agents/agent_detail.html", {
        "agent": agent,
        "prompt_parts": [(label, agent.prompt_config.get(key, "")) for key, label in PROMPT_LABELS.items()],
        "capabilities": [(CAPABILITY_LABELS[key], agent.capabilities.get(key, [])) for key in TEXT_CAPABILITIES],
        "tools": tool_listing(agent.capabilities.get("tools", []), agent.tools_needing_approval),
        "missing_tools": missing_tools(agent.capabilities.get("tools", [])),
        "limits": {
            "max_input_tokens": limits.max_input_tokens, "max_output_tokens": limits.max_output_tokens,
            "reserved_for_system_prompt": limits.reserved_for_system_prompt,
            "reserved_for_instructions": limits.reserved_for_instructions,
            "available_for_data": agent.available_for_data, "safety_margin": limits.safety_margin,
            "effective_data_limit": agent.effective_data_limit, "data_area": agent.data_area,
            "data_budget": agent.data_budget,
        },
        "limit_bar": _limit_bar(agent),
        "retention_days": settings.RETENTION_DAYS,  # the Cost card says deleted runs leave it
        # Where max_input_tokens and max_output_tokens came from: the agent's document, the
        # model catalogue (and which source), or Switchyard's default.
        "limit_sources": {key: value for key, value in (agent.limit_sources or {}).items() if isinstance(value, str)},
        "family": family,
        "lineage_graph": _lineage_graph(family),
        "versions": versions,
        "diff": selectors.agent_version_diff(agent, *compare) if compare else None,
        "executions": runs.agent_executions(agent, selectors.PAGE_WINDOW),
        "evaluations": runs.agent_evaluations(agent, selectors.PAGE_WINDOW),
        "derivations": selectors.agent_derive_requests(agent),
        "evaluations_url": f"{reverse('evaluations:list')}?target_type=agent&target_id={agent.agent_id}",
        "triggers": DeriveRequest.Trigger.choices,
    })


def _limit_bar(agent: Agent) -> list[dict[str, Any]]:
    """The input window split as §6.1 splits it: reserved parts, data, and the safety margin."""
    total = agent.max_input_tokens or 1
    data = agent.effective_data_limit
    parts = [
        ("system", "system prompt", agent.reserved_for_system_prompt),
        ("instructions", "instructions", agent.reserved_for_instructions),
        ("data", "data", data),
        ("margin", "safety margin", max(agent.available_for_data - data, 0)),
    ]
    return [{"kind": kind, "label": label, "tokens": tokens, "percent": round(100 * tokens / total, 2)}
            for kind, label, tokens in parts if tokens]


# --- editing -------------------------------------------------------------------------

def _split_commas(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _split_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


class ToolNames(forms.MultipleChoiceField):
    """Tool names ticked in the editor. Any name is taken here: whether the catalogue holds
    it is the service's to say (the API's refusal, at the same field)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, widget=forms.CheckboxSelectMultiple, **kwargs)

    def to_python(self, value: Any) -> list[str]:
        return [name for name in super().to_python(value) if name.strip()]

    def valid_value(self, value: str) -> bool:
        return True


def _kept_order(current: list[str], ticked: list[str]) -> list[str]:
    """The ticked names, those the agent had first in its order, then the new ones as ticked:
    re-saving the same choice never reorders the list (and so never makes a version)."""
    kept = [name for name in current if name in ticked]
    return list(dict.fromkeys(kept + ticked))


class AgentEditForm(forms.Form):
    name = forms.CharField(max_length=200)
    system_prompt = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 5}))
    role_play = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    task_context = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    thinking_process = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    output_constraint = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    skills = forms.CharField(required=False, help_text="comma-separated")
    tools = ToolNames()
    knowledge_domains = forms.CharField(required=False, help_text="comma-separated")
    constraints = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), help_text="one per line")
    backend = forms.ChoiceField(choices=())
    model = forms.CharField(max_length=200, required=False, help_text="empty: the backend's default")
    max_tool_calls = forms.IntegerField(label="Tool calls per node run", help_text=f"1 to {MAX_TOOL_CALLS}",
                                        widget=forms.NumberInput(attrs={"min": 1, "max": MAX_TOOL_CALLS}))
    parallel_tool_calls = forms.BooleanField(required=False, label="Calls of one model turn may run at once")
    tools_needing_approval = ToolNames()
    based_on = forms.CharField(widget=forms.HiddenInput)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["backend"].choices = [(name, name) for name in sorted(settings.LLM_BACKENDS)]

    @classmethod
    def for_agent(cls, agent: Agent) -> AgentEditForm:
        prompt, capabilities = agent.prompt_config, agent.capabilities
        return cls(initial={
            "name": agent.name, **{key: prompt.get(key, "") for key in PROMPT_LABELS},
            **{key: ", ".join(capabilities.get(key, [])) for key in TEXT_CAPABILITIES},
            "tools": list(capabilities.get("tools", [])),
            "constraints": "\n".join(agent.constraints), "backend": agent.backend, "model": agent.model,
            "max_tool_calls": agent.max_tool_calls, "parallel_tool_calls": agent.parallel_tool_calls,
            "tools_needing_approval": list(agent.tools_needing_approval),
            "based_on": agent.version,
        })

    def document(self, agent: Agent) -> dict[str, Any]:
        """The agent's whole §2.1 document with this form's fields in place (a PUT replaces
        the whole agent, so what the form does not show keeps its current value)."""
        data = self.cleaned_data
        document = agent_document(agent)
        document.pop("metadata")
        document["lineage"] = {"parent_id": document["lineage"]["parent_id"]}
        prompt = {key: value for key, value in agent.prompt_config.items() if key not in PROMPT_LABELS}
        prompt.update({key: data[key] for key in PROMPT_LABELS if data[key] or key in agent.prompt_config})
        capabilities = dict(agent.capabilities)
        capabilities.update({key: _split_commas(data[key]) for key in TEXT_CAPABILITIES})
        capabilities["tools"] = _kept_order(agent.capabilities.get("tools", []), data["tools"])
        document.update(name=data["name"], prompt_config=prompt, capabilities=capabilities,
                        constraints=_split_lines(data["constraints"]))
        document["runtime"] = {
            **document["runtime"], "backend": data["backend"], "model": data["model"],
            "max_tool_calls": data["max_tool_calls"], "parallel_tool_calls": data["parallel_tool_calls"],
            "tools_needing_approval": _kept_order(agent.tools_needing_approval, data["tools_needing_approval"]),
        }
        return document


# Where a service error points (`runtime.backend`, `capabilities.skills[2]`) → the form field.
FIELD_OF = {"name": "name", "constraints": "constraints", "runtime.backend": "backend", "runtime.model": "model",
            **{f"runtime.{key}": key for key in TOOL_SETTING_FIELDS},
            **{f"prompt_config.{key}": key for key in PROMPT_LABELS},
            **{f"capabilities.{key}": key for key in CAPABILITY_LABELS}}


def _field_of(where: str) -> str | None:
    for path, field in FIELD_OF.items():
        if where == path or where.startswith((f"{path}[", f"{path}.")):
            return field
    return None


def _add_service_error(form: AgentEditForm, error: SwitchyardError) -> None:
    """Put the service's error next to the field it concerns (each problem it lists)."""
    problems = []
    if isinstance(error, DocumentError):
        problems.append((error.where, error.problem))
    if isinstance(error.details, list):
        problems += [(p.get("where", ""), p.get("message", "")) for p in error.details if isinstance(p, dict)]
    placed = set()
    for where, message in problems or [("", error.message)]:
        field = _field_of(where or "")
        text = message if field else (f"{where}: {message}" if where else message)
        if (field, text) not in placed:
            placed.add((field, text))
            form.add_error(field, text)


def agent_edit(request, agent_id: str):
    agent = _found(selectors.agent_for_page, agent_id)
    if not has_role(request.user, AUTHOR):
        return render(request, "agents/forbidden.html", {
            "what": f"edit agent {agent.agent_id}", "back": reverse("agents:detail", args=[agent.agent_id]),
        }, status=403)
    if request.method != "POST":
        form = AgentEditForm.for_agent(agent)
    else:
        form = AgentEditForm(request.POST)
        if form.is_valid():
            if form.cleaned_data["based_on"] != agent.version:
                form.add_error(None, f"{agent.name} changed since you opened this form: it is version {agent.version} "
                                     f"now, not {form.cleaned_data['based_on']}. Check the versions below the form; "
                                     "save again to replace it with what you see here.")
                data = cast(QueryDict, form.data).copy()  # the posted form (request.POST), mutable
                data["based_on"] = agent.version
                form.data = data
            else:
                before = agent.version
                try:
                    saved = services.agent_update(agent=agent, document=form.document(agent), user=request.user)
                except SwitchyardError as error:
                    _add_service_error(form, error)
                else:
                    if saved.version == before:
                        messages.info(request, f"Nothing changed: {saved.name} stays at version {saved.version}.")
                        return redirect("agents:detail", agent_id=saved.agent_id)
                    messages.success(request, f"Saved {saved.name} as version {saved.version}.")
                    url = reverse("agents:detail", args=[saved.agent_id])
                    return redirect(f"{url}?from={before}&to={saved.version}#versions")
    for name in form.errors:
        if name in form.fields:  # mark the field itself, not only its message
            form.fields[name].widget.attrs.update({"class": "invalid", "aria-invalid": "true",
                                                   "aria-describedby": f"id_{name}-error"})
    ticked = [str(name) for name in form["tools"].value() or []]
    return render(request, "agents/agent_edit.html", {
        "agent": agent, "form": form,
        "prompt_fields": [form[key] for key in PROMPT_LABELS],
        "capability_fields": [form[key] for key in TEXT_CAPABILITIES],
        # The catalogue by server, and below it any ticked tool it does not hold (saving refuses those).
        "tool_groups": catalogue_choices(ticked),
        "ticked": set(ticked),
        "approval": {str(name) for name in form["tools_needing_approval"].value() or []},
    })
