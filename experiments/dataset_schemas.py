"""What the datasets router reads and answers."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema

Format = Literal["jsonl", "json", "csv"]


class DatasetOut(Schema):
    name: str
    description: str
    created_at: datetime
    created_by: str
    updated_at: datetime
    latest_version: int | None = Field(None, description="the number of its latest version")
    item_count: int = Field(0, description="items in its latest version")


class DatasetVersionOut(Schema):
    number: int
    change: str = Field(..., description="import, append, add_run or remove")
    note: str
    item_count: int
    csv_columns: list[dict[str, str]] | None = Field(None, description="the CSV columns its items came with, "
                                                                      "[{column, target}], in order")
    created_at: datetime
    created_by: str


class ChangeOut(Schema):
    """What a change made: the dataset's new version and how many items it holds."""

    dataset: str
    version: int
    items: int


class DatasetItemOut(Schema):
    id: str
    input: dict[str, Any]
    expected: Any = Field(None, description="left out when the item has none (which null is not)")
    metadata: dict[str, Any] | None = None


class ImportForm(Schema):
    format: Format | None = Field(None, description="jsonl, json or csv; else told by the file's name")
    column: list[str] = Field([], description="CSV only: COLUMN=TARGET (id, expected, input.KEY, metadata.KEY), "
                                              "one per mapping")
    append: bool = Field(False, description="add the items to the latest version's rather than replace them")
    note: str = Field("", max_length=200, description="why this version was made")


class FromRunIn(Schema):
    execution_id: str = Field(..., min_length=1, max_length=100)
    item_id: str = Field("", max_length=200, description="the item's id; empty: the run's id")
    use_output_as_expected: bool = Field(False, description="the run's output (its final state and the outputs "
                                                            "of its last nodes) as the item's expected")


class ItemsQuery(Schema):
    version: int | None = Field(None, ge=1, description="a version number; none: the latest")
    q: str = Field("", max_length=200, pattern=r"^[^\x00]*$",
                   description="text in the item's id, input, expected or metadata, any case")


class ExportQuery(Schema):
    version: int | None = Field(None, ge=1, description="a version number; none: the latest")
    format: Format = "jsonl"
