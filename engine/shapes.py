"""Typed document shapes: what every seed shape is built from, and a node's inputs.

Each shape of a document is one pydantic model, written once: the JSON Schema an imported
or posted document is checked against is generated from it (`engine.json_schema.
document_schema`), and the API's OpenAPI schema describes the same model. This module holds
the pieces every shape uses and the shapes of a node's inputs (data-transfer-protocol §2–§6,
the task chain of §7.1), which the context builder (`engine/context/`) reads; the apps'
shapes (agents, workflows, executions) live in their `schemas.py`.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from engine.context.filters import OPERATORS

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,99}$"
# The largest whole number a document may put in an integer column: PositiveIntegerField
# holds no more on PostgreSQL, and a larger one would fail at the database instead.
MAX_COLUMN_INT = 2**31 - 1

Identifier = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
Text = Annotated[str, StringConstraints(min_length=1)]



class _NullLeftOut:
    """Leaves null out of the JSON Schema of an `Optional[…]` (pydantic's `anyOf` with a null
    choice), keeping the rest, shared definitions included."""

    def __get_pydantic_json_schema__(self, schema: Any, handler: Any) -> dict[str, Any]:
        generated: dict[str, Any] = handler(schema)
        choices = generated.get("anyOf", [])
        if {"type": "null"} not in choices:
            return generated
        rest = {key: value for key, value in generated.items() if key != "anyOf"}
        kept = [choice for choice in choices if choice != {"type": "null"}]
        return {**rest, **kept[0]} if len(kept) == 1 else {**rest, "anyOf": kept}


T = TypeVar("T")
# A key a document may leave out but never set to null: its JSON Schema has no null, while
# the model takes None for "left out". An `Optional` rather than a union with a hidden None,
# so that pydantic's errors name the field alone (a union adds the member to the location).
Omittable = Annotated[T | None, _NullLeftOut()]


def between(low: float, high: float) -> Any:
    return Field(ge=low, le=high)


class Shape(BaseModel):
    """A closed shape: a key it does not declare is refused ("unknown field(s)")."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class OpenShape(BaseModel):
    """A shape the seeds leave open: its declared keys are typed, any other key is kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


# -- a data reference's settings (data-transfer-protocol §2–§6) ---------------------------

# An operator the filter does not know is the seed's REF_FILTER_ERROR when the reference is
# read, with its fallback, not a refused document.
FilterOperator = Annotated[str, Field(min_length=1, description="one of " + ", ".join(OPERATORS)
                                      + "; another is REF_FILTER_ERROR at run time")]
TransferMode = Literal["full", "summary", "reference", "auto"]
Priority = Annotated[int, between(1, 4)]


class FilterCondition(Shape):
    """A `filter` of a task_output reference, or one of a db_query's `conditions`."""

    field: Text
    operator: FilterOperator
    value: Any


class FallbackConfig(Shape):
    """§3.2: what to do when a reference fails."""

    strategy: Omittable[Literal["use_default", "retry", "skip", "abort"]] = None
    default_value: Any = None
    retry_count: Omittable[Annotated[int, between(0, 20)]] = None
    retry_delay_ms: Omittable[Annotated[int, between(0, 600_000)]] = None
    on_final_failure: Omittable[Literal["skip", "abort"]] = None


# §4.2 (a summary transfer) and §6.2 (batching): the fields the context builder reads are
# typed, so a run never meets a value it cannot use.
class SummaryConfig(OpenShape):
    strategy: Omittable[Literal["extractive", "abstractive", "key_points", "truncate"]] = None
    max_length: Omittable[Annotated[int, between(1, 10_000_000)]] = None
    summary_ratio: Omittable[Annotated[float, Field(gt=0, le=1)]] = None
    preserve_fields: Omittable[list[str]] = None
    summarize_fields: Omittable[list[str]] = None


class BatchConfig(OpenShape):
    enabled: Omittable[bool] = None
    batch_size_tokens: Omittable[Annotated[int, between(1, 10_000_000)]] = None
    overlap_tokens: Omittable[Annotated[int, between(0, 10_000_000)]] = None
    max_batches: Omittable[Annotated[int, between(1, 1000)]] = None
    aggregation_strategy: Omittable[Literal["merge", "vote", "latest", "weighted"]] = None
    batch_priority: Omittable[Literal["chronological", "importance", "random"]] = None


class ReferenceOptions(Shape):
    """Per-reference settings that override the automatic choices of the context builder."""

    name: Omittable[Text] = None
    priority: Omittable[Priority] = None
    data_type: Omittable[str] = None
    transfer_mode: Omittable[TransferMode] = None
    summary_config: Omittable[SummaryConfig] = None
    batch_config: Omittable[BatchConfig] = None
    fallback_config: Omittable[FallbackConfig] = None


class TaskOutputReference(ReferenceOptions):
    ref_type: Literal["task_output"]
    task_id: Identifier
    path: Omittable[Text] = None
    filter: Omittable[FilterCondition] = None
    transform: Omittable[Literal["none", "summary", "keys_only"]] = None


FileFormat = Literal["pdf", "md", "json", "txt"]  # how a file of the workspace is read (engine/context/files.py)


class FileReference(ReferenceOptions):
    ref_type: Literal["file"]
    path: Text
    format: Omittable[FileFormat] = None
    encoding: Omittable[Text] = None
    sections: Omittable[list[str]] = None


class OrderBy(Shape):
    field: str
    direction: Omittable[Literal["asc", "desc"]] = None


class DbQueryReference(ReferenceOptions):
    ref_type: Literal["db_query"]
    table: Text
    conditions: Omittable[list[FilterCondition]] = None
    select: Omittable[list[str]] = None
    order_by: Omittable[OrderBy] = None
    limit: Omittable[Annotated[int, between(1, 10_000)]] = None


DataReference = Annotated[TaskOutputReference | FileReference | DbQueryReference,
                          Field(discriminator="ref_type")]


class TransferConfig(OpenShape):
    """A node's transfer settings (§5, §7.1)."""

    mode: Omittable[TransferMode] = None
    max_tokens: Omittable[Annotated[int, Field(ge=1)]] = None
    priority_filter: Omittable[list[Priority]] = None
    inline_preview_count: Omittable[Annotated[int, Field(ge=0)]] = None


class NodeInput(OpenShape):
    """A node's `input_mapping` (a task's `input` in §7.1): its data references and transfer
    settings; any other key maps an input name to a JSONPath over the run or a constant."""

    data_references: Omittable[list[DataReference]] = None
    transfer_config: Omittable[TransferConfig] = None
