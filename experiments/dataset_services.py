"""Writes for datasets. Every change makes the dataset's next version with all its items;
what is refused is refused before anything is written (a file is parsed whole first)."""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.audit import compact, record
from core.errors import DocumentError, SwitchyardError, echo
from core.jsonutil import check_storable
from core.status_writes import lock_row
from executions.models import Execution
from executions.run_details import refuse_without_details
from executions.services.subworkflows import child_output
from experiments.dataset_files import ABSENT, ID_MAX_LENGTH, ParsedItem, check_unique, parse
from experiments.models import Dataset, DatasetItem, DatasetVersion
from workflows.selectors import ID_PATTERN

COPY_BATCH = 1000
# Page addresses under /datasets/ that a dataset's name would hide.
RESERVED_NAMES = ("upload", "add-run")


class DatasetTooLarge(DocumentError):
    code = "PAYLOAD_TOO_LARGE"


def check_size(size: int) -> None:
    """A file over DATASET_MAX_BYTES is refused before it is read."""
    limit = settings.DATASET_MAX_BYTES
    if size > limit:
        raise DatasetTooLarge(f"is {size} bytes; the limit is {limit} bytes (DATASET_MAX_BYTES)", where="file",
                              details={"where": "file", "size_bytes": size, "limit_bytes": limit})


def check_name(name: str) -> None:
    problem = ""
    if not isinstance(name, str) or not ID_PATTERN.match(name):
        problem = f"'{echo(str(name))}' is not a name: a name is 1-100 characters: letters, digits, and _ . : - (not starting with punctuation)"
    elif name in RESERVED_NAMES:
        problem = f"'{name}' is taken by a page; choose another name"
    if problem:
        raise DocumentError(problem, where="name", details={"where": "name"})


@transaction.atomic
def dataset_import(*, name: str, data: bytes, fmt: str, columns: Iterable[str] = (), append: bool = False,
                   note: str = "", actor: str = "") -> DatasetVersion:
    """The dataset's next version from a file: its items alone, or (`append`) after the last
    version's. A new name creates the dataset. Nothing is stored when anything is refused."""
    check_name(name)
    check_size(len(data))
    parsed = parse(data, fmt, columns=columns)
    dataset, previous = _locked(name, actor=actor, create=True)
    columns_kept = parsed.columns
    kept: Iterator[DatasetItem] = iter(())
    kept_count = 0
    if append and previous is not None:
        taken = dict.fromkeys(_item_ids(previous), f"version {previous.number} of dataset '{name}'")
        check_unique(parsed.items, taken)
        columns_kept = _merged_columns(previous.csv_columns, parsed.columns)
        kept, kept_count = _items_of(previous), previous.item_count
    change = DatasetVersion.Change.APPEND if append else DatasetVersion.Change.IMPORT
    return _new_version(dataset, previous, change=change, note=note or f"{fmt} import", actor=actor,
                        csv_columns=columns_kept, kept=kept, kept_count=kept_count, added=[_row(item) for item in parsed.items])


@transaction.atomic
def dataset_add_run(*, name: str, execution: Execution, item_id: str = "", use_output: bool = False,
                    actor: str = "") -> DatasetVersion:
    """The dataset's next version: its items and the run's input as one more (id: the run's
    unless named), with the run's output as its expected when asked (`run_output`). A new
    name creates the dataset."""
    check_name(name)
    item_id = (item_id or execution.execution_id).strip()
    if not item_id or len(item_id) > ID_MAX_LENGTH:
        raise DocumentError(f"an item id is 1-{ID_MAX_LENGTH} characters", where="item_id",
                            details={"where": "item_id"})
    if not isinstance(execution.input, dict):
        raise DocumentError("the run's input is not a JSON object", where="input", details={"where": "input"})
    if use_output:  # its last nodes' outputs are its node runs'
        refuse_without_details([execution], operation="added to a dataset with its output as expected")
    item = ParsedItem(item_id=item_id, input=execution.input, line=0,
                      expected=run_output(execution) if use_output else ABSENT,
                      metadata={"execution_id": execution.execution_id, "workflow_id": execution.workflow.workflow_id,
                                "status": execution.status})
    check_storable(item.document())
    dataset, previous = _locked(name, actor=actor, create=True)
    if previous is not None and previous.items.filter(item_id=item_id).exists():
        raise SwitchyardError(f"dataset '{name}' has an item '{echo(item_id)}' already (version {previous.number}); "
                              "name the item otherwise", code="CONFLICT", details={"where": "item_id"})
    return _new_version(dataset, previous, change=DatasetVersion.Change.ADD_RUN,
                        note=f"run {execution.execution_id} added", actor=actor,
                        csv_columns=previous.csv_columns if previous else None,
                        kept=_items_of(previous) if previous else iter(()),
                        kept_count=previous.item_count if previous else 0, added=[_row(item)])


def run_output(execution: Execution) -> dict[str, Any]:
    """A run's output, as a sub-workflow node receives a child run's: its final state and the
    outputs of its last nodes by node id (`{"state", "nodes"}`)."""
    return child_output(execution)


@transaction.atomic
def dataset_remove_item(*, dataset: Dataset, item_id: str, actor: str = "") -> DatasetVersion:
    """The dataset's next version, without one item."""
    dataset, previous = _locked(dataset.name, actor=actor, create=False)
    if previous is None or not previous.items.filter(item_id=item_id).exists():
        number = previous.number if previous else 0
        raise SwitchyardError(f"version {number} of dataset '{dataset.name}' has no item '{echo(item_id)}'",
                              code="NOT_FOUND", details={"where": "item_id"})
    removed = previous.items.filter(item_id=item_id).values("input", "expected", "has_expected").first()
    version = _new_version(dataset, previous, change=DatasetVersion.Change.REMOVE, note=f"item {item_id} removed",
                           actor=actor, csv_columns=previous.csv_columns,
                           kept=_items_of(previous.items.exclude(item_id=item_id)), kept_count=previous.item_count - 1,
                           added=[])
    record("dataset.remove_item", actor=actor, object_type="dataset", object_id=dataset.name,
           before={"version": previous.number, "items": previous.item_count, "item_id": item_id,
                   "item": compact(removed)},
           after={"version": version.number, "items": version.item_count})
    return version


# -- the one way a version is made ------------------------------------------------------


def _locked(name: str, *, actor: str, create: bool) -> tuple[Dataset, DatasetVersion | None]:
    """The dataset under its row lock (created when asked), with its latest version."""
    dataset = lock_row(Dataset, missing_ok=True, name=name)
    if dataset is None:
        if not create:
            raise SwitchyardError(f"no dataset '{name}'", code="NOT_FOUND", details={"name": name})
        try:
            with transaction.atomic():
                Dataset.objects.create(name=name, created_by=actor)
        except IntegrityError:  # created by someone else since
            pass
        dataset = lock_row(Dataset, name=name)
    return dataset, dataset.versions.order_by("-number").first()


def _item_ids(version: DatasetVersion) -> Iterator[str]:
    return version.items.values_list("item_id", flat=True).iterator(chunk_size=COPY_BATCH)


def _items_of(source) -> Iterator[DatasetItem]:
    """Unsaved copies of a version's items (or of a queryset of them), in order, read a batch at a time."""
    items = source.items.all() if isinstance(source, DatasetVersion) else source
    for item in items.order_by("position").iterator(chunk_size=COPY_BATCH):
        yield DatasetItem(item_id=item.item_id, input=item.input, has_expected=item.has_expected,
                          expected=item.expected, metadata=item.metadata, search_text=item.search_text)


def _row(item: ParsedItem) -> DatasetItem:
    has_expected = item.expected is not ABSENT
    return DatasetItem(item_id=item.item_id, input=item.input, has_expected=has_expected,
                       expected=item.expected if has_expected else None, metadata=item.metadata,
                       search_text=search_text(item.item_id, item.input, item.expected if has_expected else None,
                                               item.metadata))


def search_text(item_id: str, *parts: Any) -> str:
    return "\n".join([item_id, *(json.dumps(part, ensure_ascii=False) for part in parts if part is not None)]).lower()


def _new_version(dataset: Dataset, previous: DatasetVersion | None, *, change: str, note: str, actor: str,
                 csv_columns: list[dict[str, str]] | None, kept: Iterator[DatasetItem], kept_count: int,
                 added: list[DatasetItem]) -> DatasetVersion:
    """The next version, its items written with bulk_create a batch at a time: the `kept_count`
    items of `kept`, then `added`."""
    number = (previous.number if previous else 0) + 1
    version = DatasetVersion.objects.create(dataset=dataset, number=number, change=change, note=note[:200],
                                            created_by=actor, csv_columns=csv_columns,
                                            item_count=kept_count + len(added))
    position = 0
    batch: list[DatasetItem] = []
    for item in _chained(kept, added):
        item.version, item.position = version, position
        position += 1
        batch.append(item)
        if len(batch) == COPY_BATCH:
            DatasetItem.objects.bulk_create(batch)
            batch = []
    DatasetItem.objects.bulk_create(batch)
    if position != version.item_count:  # the previous version changed under its dataset's lock: never
        raise SwitchyardError(f"dataset '{dataset.name}': {position} items written, {version.item_count} counted")
    Dataset.objects.filter(pk=dataset.pk).update(updated_at=timezone.now())
    return version


def _chained(*parts: Iterable[DatasetItem]) -> Iterator[DatasetItem]:
    for part in parts:
        yield from part


def _merged_columns(before: list[dict[str, str]] | None, added: list[dict[str, str]] | None):
    """The CSV columns after an append: the earlier ones, then the new file's others."""
    if not before or not added:
        return before or added
    targets = {entry["target"] for entry in before}
    columns = {entry["column"] for entry in before}
    return before + [entry for entry in added if entry["target"] not in targets and entry["column"] not in columns]


