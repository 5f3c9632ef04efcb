"""Reads for datasets: lists, one dataset, a version, its items (searched, a page at a time),
and a version written back as a file."""
from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from django.db.models import OuterRef, QuerySet, Subquery

from core.errors import DocumentError, NotFound, echo
from experiments import dataset_files
from experiments.models import Dataset, DatasetItem, DatasetVersion
from workflows.selectors import ID_PATTERN

SEARCH_MAX = 200
EXPORT_BATCH = 1000


def dataset_list(*, q: str = "") -> QuerySet[Dataset]:
    """Datasets by name, each with its latest version's number and item count."""
    latest = DatasetVersion.objects.filter(dataset=OuterRef("pk")).order_by("-number")
    datasets = Dataset.objects.annotate(latest_number=Subquery(latest.values("number")[:1]),
                                        latest_items=Subquery(latest.values("item_count")[:1])).order_by("name")
    if q:
        datasets = datasets.filter(name__icontains=q)
    return datasets


def dataset_get(name: str) -> Dataset:
    dataset = Dataset.objects.filter(name=name).first() if ID_PATTERN.match(name) else None
    if dataset is None:
        raise NotFound(f"no dataset '{echo(name)}'", details={"name": name})
    return dataset


def dataset_versions(dataset: Dataset) -> QuerySet[DatasetVersion]:
    return dataset.versions.order_by("-number")


def dataset_version(dataset: Dataset, number: int | None = None) -> DatasetVersion:
    """Version `number`, or the latest; an unknown one is not found, naming those there are."""
    versions = dataset.versions.order_by("-number")
    version = versions.first() if number is None else versions.filter(number=number).first()
    if version is None:
        last = versions.values_list("number", flat=True).first()
        there = f"its versions are 1 to {last}" if last else "it has no version"
        raise NotFound(f"dataset '{dataset.name}' has no version {number}; {there}",
                       details={"name": dataset.name, "version": number})
    return version


def version_items(version: DatasetVersion, *, q: str = "") -> QuerySet[DatasetItem]:
    """A version's items in order; with `q`, those whose id, input, expected or metadata hold
    it (any case)."""
    items = DatasetItem.objects.filter(version=version).order_by("position")
    if q:
        if len(q) > SEARCH_MAX:
            raise DocumentError(f"a search is at most {SEARCH_MAX} characters", where="q", details={"where": "q"})
        items = items.filter(search_text__contains=q.lower())
    return items


class Export(NamedTuple):
    chunks: Iterator[str]
    content_type: str
    filename: str


CONTENT_TYPES = {"jsonl": "application/x-ndjson", "json": "application/json", "csv": "text/csv"}


def dataset_export(version: DatasetVersion, fmt: str) -> Export:
    """A version as a file of `fmt`: JSONL and JSON as the items are; CSV with the columns the
    dataset was imported with, and a column for each key none of them holds."""
    fmt = dataset_files.format_of("", fmt)
    if fmt == "csv":  # its columns depend on every item: read whole (at most DATASET_MAX_BYTES came in)
        chunks = dataset_files.write_csv(list(_documents(version)), version.csv_columns)
    elif fmt == "json":
        chunks = dataset_files.write_json(_documents(version))
    else:
        chunks = dataset_files.write_jsonl(_documents(version))
    return Export(chunks, CONTENT_TYPES[fmt], f"{version.dataset.name}-v{version.number}.{fmt}")


def _documents(version: DatasetVersion) -> Iterator[dict]:
    for item in version.items.order_by("position").iterator(chunk_size=EXPORT_BATCH):
        yield item.document()
