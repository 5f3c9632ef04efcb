"""The `/api/datasets` operations: list, one, versions, items (searched, paged), import a
file (multipart), add a run as an item, remove an item, export a version."""

from django.http import StreamingHttpResponse
from ninja import File, Form, Query, Router, Status
from ninja.files import UploadedFile
from ninja.pagination import paginate

from core.api_support import Page, Rendered, responses
from core.roles import AUTHOR, require_role
from executions.selectors import execution_get
from experiments import dataset_selectors as selectors
from experiments import dataset_services as services
from experiments.dataset_files import format_of
from experiments.dataset_schemas import (
    ChangeOut,
    DatasetItemOut,
    DatasetOut,
    DatasetVersionOut,
    ExportQuery,
    FromRunIn,
    ImportForm,
    ItemsQuery,
)
from experiments.models import DatasetVersion

router = Router(tags=["datasets"])


def _change(version: DatasetVersion) -> dict:
    return {"dataset": version.dataset.name, "version": version.number, "items": version.item_count}


def _dataset_out(dataset) -> dict:
    latest = dataset.versions.order_by("-number").first()
    return {"name": dataset.name, "description": dataset.description, "created_at": dataset.created_at,
            "created_by": dataset.created_by, "updated_at": dataset.updated_at,
            "latest_version": latest.number if latest else None, "item_count": latest.item_count if latest else 0}


@router.get("/datasets", response=responses(200, list[DatasetOut]), summary="Datasets")
@paginate(Page)
def datasets_list(request):
    return Rendered(selectors.dataset_list(), lambda page: [
        {"name": d.name, "description": d.description, "created_at": d.created_at, "created_by": d.created_by,
         "updated_at": d.updated_at, "latest_version": d.latest_number, "item_count": d.latest_items or 0}
        for d in page])


@router.get("/datasets/{name}", response=responses(200, DatasetOut), summary="A dataset")
def datasets_get(request, name: str):
    return _dataset_out(selectors.dataset_get(name))


@router.get("/datasets/{name}/versions", response=responses(200, list[DatasetVersionOut]),
            summary="A dataset's versions, newest first")
@paginate(Page)
def dataset_versions_list(request, name: str):
    return selectors.dataset_versions(selectors.dataset_get(name))


@router.get("/datasets/{name}/items", response=responses(200, list[DatasetItemOut]), exclude_unset=True,
            summary="A version's items (the latest unless named), in order, searched with q")
@paginate(Page)
def dataset_items_list(request, name: str, query: Query[ItemsQuery]):
    version = selectors.dataset_version(selectors.dataset_get(name), query.version)
    return Rendered(selectors.version_items(version, q=query.q), lambda page: [item.document() for item in page])


@router.post("/datasets/{name}/import", response=responses(201, ChangeOut),
             summary="Import a file (multipart: file, format, column, append, note) as the dataset's next version "
                     "(authors); a new name creates the dataset")
def datasets_import(request, name: str, file: File[UploadedFile], form: Form[ImportForm]):
    require_role(request.user, AUTHOR, to="import datasets")
    services.check_size(file.size or 0)
    fmt = format_of(file.name or "", form.format)
    version = services.dataset_import(name=name, data=file.read(), fmt=fmt, columns=form.column,
                                      append=form.append, note=form.note, actor=request.user.get_username())
    return Status(201, _change(version))


@router.post("/datasets/{name}/items/from-run", response=responses(201, ChangeOut),
             summary="Add a run as an item: its input, and its output as expected when asked (authors)")
def dataset_items_from_run(request, name: str, payload: FromRunIn):
    require_role(request.user, AUTHOR, to="change datasets")
    version = services.dataset_add_run(name=name, execution=execution_get(payload.execution_id),
                                       item_id=payload.item_id, use_output=payload.use_output_as_expected,
                                       actor=request.user.get_username())
    return Status(201, _change(version))


@router.delete("/datasets/{name}/items/{path:item_id}", response=responses(200, ChangeOut),
               summary="Remove an item, as the dataset's next version (authors)")
def dataset_items_remove(request, name: str, item_id: str):
    require_role(request.user, AUTHOR, to="change datasets")
    version = services.dataset_remove_item(dataset=selectors.dataset_get(name), item_id=item_id,
                                           actor=request.user.get_username())
    return _change(version)


@router.get("/datasets/{name}/export", response=responses(200, None),
            summary="A version (the latest unless named) as a file: jsonl, json, or csv with its imported columns")
def datasets_export(request, name: str, query: Query[ExportQuery]):
    export = selectors.dataset_export(selectors.dataset_version(selectors.dataset_get(name), query.version),
                                      query.format)
    response = StreamingHttpResponse(export.chunks, content_type=f"{export.content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
    return response
