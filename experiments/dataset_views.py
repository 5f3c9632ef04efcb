"""The dataset pages: the list, a dataset (its versions, a version's items searched and paged,
export, removing an item), the upload form, and adding a run as an item. Writes go through
the services the API calls; authors only."""
from __future__ import annotations

import json

from django import forms
from django.contrib import messages
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.errors import NotFound, SwitchyardError
from core.pages import paginate
from core.roles import AUTHOR, has_role, roles_of
from executions.models import Execution
from experiments import dataset_selectors as selectors
from experiments import dataset_services as services
from experiments.dataset_files import FORMATS, format_of
from workflows.selectors import ID_PATTERN


def _forbidden(request, what: str, back: str):
    return render(request, "agents/forbidden.html", {"what": what, "back": back, "roles": roles_of(request.user)},
                  status=403)


def dataset_list(request):
    q = request.GET.get("q", "").strip()[:200]
    return render(request, "experiments/dataset_list.html", {
        **paginate(request, selectors.dataset_list(q=q)), "q": q, "can_write": has_role(request.user, AUTHOR),
    })


def dataset_detail(request, name: str):
    """A dataset: its versions, and one version's items (the latest unless `?version=`),
    searched with `?q=` and paged."""
    try:
        dataset = selectors.dataset_get(name)
        number = request.GET.get("version", "").strip()
        version = selectors.dataset_version(dataset, int(number) if number.isdigit() and len(number) < 10 else None)
    except NotFound as error:
        raise Http404(str(error)) from None
    q = request.GET.get("q", "").strip()[:selectors.SEARCH_MAX]
    context = paginate(request, selectors.version_items(version, q=q))
    for item in context["page"]:
        item.input_json = _shown(item.input)
        item.expected_json = _shown(item.expected) if item.has_expected else ""
        item.metadata_json = _shown(item.metadata) if item.metadata is not None else ""
    return render(request, "experiments/dataset_detail.html", {
        **context, "dataset": dataset, "version": version, "q": q, "formats": FORMATS,
        "versions": selectors.dataset_versions(dataset)[:50], "latest": dataset.versions.order_by("-number").first(),
        "can_write": has_role(request.user, AUTHOR),
    })


SHOWN_MAX = 2000


def _shown(value) -> str:
    """A value as the items table shows it: indented JSON, cut after SHOWN_MAX characters."""
    text = json.dumps(value, indent=1, ensure_ascii=False)
    return text if len(text) <= SHOWN_MAX else f"{text[:SHOWN_MAX]}… ({len(text)} characters; export for all)"


def dataset_export(request, name: str):
    try:
        dataset = selectors.dataset_get(name)
        number = request.GET.get("version", "").strip()
        version = selectors.dataset_version(dataset, int(number) if number.isdigit() and len(number) < 10 else None)
        export = selectors.dataset_export(version, request.GET.get("format", "jsonl"))
    except NotFound as error:
        raise Http404(str(error)) from None
    except SwitchyardError as error:
        return render(request, "experiments/error.html", {"message": str(error)}, status=400)
    response = StreamingHttpResponse(export.chunks, content_type=f"{export.content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
    return response


@require_POST
def dataset_item_remove(request, name: str, item_id: str):
    back = reverse("datasets:detail", args=[name])
    if not has_role(request.user, AUTHOR):
        return _forbidden(request, "change datasets", back)
    try:
        version = services.dataset_remove_item(dataset=selectors.dataset_get(name), item_id=item_id,
                                               actor=request.user.get_username())
    except NotFound as error:
        raise Http404(str(error)) from None
    except SwitchyardError as error:
        messages.error(request, str(error))
        return redirect(back)
    messages.success(request, f"Removed item {item_id}: version {version.number} has {version.item_count} items.")
    return redirect(back)


class UploadForm(forms.Form):
    name = forms.CharField(label="Dataset", max_length=100, help_text="an existing dataset, or a new name")
    file = forms.FileField(label="File", help_text="JSONL, JSON (an array of items) or CSV")
    format = forms.ChoiceField(label="Format", required=False, choices=[("", "by the file's name"),
                                                                          *((f, f) for f in FORMATS)])
    columns = forms.CharField(label="CSV columns", required=False, widget=forms.Textarea(attrs={"rows": 3}),
                              help_text="one COLUMN=TARGET a line; TARGET is id, expected, input.KEY or metadata.KEY")
    append = forms.BooleanField(label="Add to the latest version's items (else replace them)", required=False)
    note = forms.CharField(label="Note", max_length=200, required=False)


def dataset_upload(request):
    """Import a file as a dataset's next version; a refusal is shown on the form, naming the
    line, and nothing is stored."""
    if not has_role(request.user, AUTHOR):
        return _forbidden(request, "import datasets", reverse("datasets:list"))
    if request.method != "POST":
        form = UploadForm(initial={"name": request.GET.get("name", "")})
    else:
        form = UploadForm(request.POST, request.FILES)
        if form.is_valid():
            data = form.cleaned_data
            upload = data["file"]
            try:
                services.check_size(upload.size or 0)
                version = services.dataset_import(
                    name=data["name"].strip(), data=upload.read(), fmt=format_of(upload.name or "", data["format"]),
                    columns=[line.strip() for line in data["columns"].splitlines() if line.strip()],
                    append=data["append"], note=data["note"], actor=request.user.get_username())
            except SwitchyardError as error:
                field = "name" if getattr(error, "where", "") == "name" else None
                form.add_error(field, getattr(error, "problem", "") if field else str(error))
            else:
                messages.success(request, f"Imported {version.item_count} items as version {version.number}.")
                return redirect("datasets:detail", name=version.dataset.name)
    return render(request, "experiments/dataset_upload.html", {"form": form})


class AddRunForm(forms.Form):
    dataset = forms.CharField(label="Dataset", max_length=100, help_text="an existing dataset, or a new name",
                              widget=forms.TextInput(attrs={"list": "dataset-names"}))
    item_id = forms.CharField(label="Item id", max_length=200)
    use_output = forms.BooleanField(label="Use its output as expected", required=False,
                                    help_text="the run's final state and the outputs of its last nodes")


def dataset_add_run(request, execution_id: str):
    """Add a run to a dataset: its input as an item's input, its output as expected if asked."""
    execution = Execution.objects.select_related("workflow").filter(execution_id=execution_id).first() \
        if ID_PATTERN.match(execution_id) else None
    if execution is None:
        raise Http404(f"no execution '{execution_id}'")
    back = reverse("executions:detail", args=[execution_id])
    if not has_role(request.user, AUTHOR):
        return _forbidden(request, "change datasets", back)
    if request.method != "POST":
        form = AddRunForm(initial={"item_id": execution_id, "dataset": request.GET.get("dataset", "")})
    else:
        form = AddRunForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                version = services.dataset_add_run(name=data["dataset"].strip(), execution=execution,
                                                   item_id=data["item_id"], use_output=data["use_output"],
                                                   actor=request.user.get_username())
            except SwitchyardError as error:
                where = (error.details or {}).get("where") if isinstance(error.details, dict) else None
                field = {"name": "dataset", "item_id": "item_id"}.get(where or "")
                form.add_error(field, getattr(error, "problem", error.message) if field else str(error))
            else:
                messages.success(request, f"Added run {execution_id} as item {data['item_id']}: "
                                          f"version {version.number} has {version.item_count} items.")
                return redirect("datasets:detail", name=version.dataset.name)
    return render(request, "experiments/dataset_add_run.html", {
        "form": form, "execution": execution, "datasets": selectors.dataset_list()[:200], "back": back,
    })
