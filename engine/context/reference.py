"""Reference transfer (data-transfer-protocol §4.3): where the data is, what it holds, and a preview."""
from __future__ import annotations

import json
from typing import Any

PREVIEW_CHARS = 120
IDENTITY_KEYS = ("ref_type", "task_id", "path", "table", "conditions", "select", "order_by", "limit", "format", "sections")


def reference_transfer(reference: dict[str, Any], data: Any, *, preview_count: int = 3, tokens: int | None = None,
                       batches: int | None = None, dumped: str | None = None) -> dict[str, Any]:
    """The §4.3 object: the reference itself with `available_paths` and `data_stats`,
    and an `inline_preview` of the first `preview_count` elements. `dumped`: the data's JSON
    text, when the caller has it already (it is as long as the data's whole text)."""
    described = {key: reference[key] for key in IDENTITY_KEYS if key in reference}
    described["available_paths"] = available_paths(data)
    stats = data_stats(data, dumped)
    if tokens is not None:
        stats["tokens"] = tokens
    if batches:
        stats["batches"] = batches
    described["data_stats"] = stats
    return {"transfer_mode": "reference", "reference": described, "inline_preview": inline_preview(data, preview_count)}


def available_paths(data: Any) -> list[str]:
    if isinstance(data, dict):
        return [f"$.{key}" if key.isidentifier() else f"$['{key}']" for key in data]
    if isinstance(data, list):
        return ["$[*]"]
    return ["$"]


def data_stats(data: Any, dumped: str | None = None) -> dict[str, Any]:
    stats: dict[str, Any] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(value, list):
                stats[f"total_{key}"] = len(value)
    elif isinstance(data, list):
        stats["total_items"] = len(data)
    elif isinstance(data, str):
        stats["characters"] = len(data)
        stats["lines"] = data.count("\n") + 1
    if dumped is None:
        dumped = json.dumps(data, ensure_ascii=False, default=str)
    stats["estimated_size_bytes"] = len(dumped.encode())
    return stats


def inline_preview(data: Any, count: int) -> dict[str, Any]:
    if isinstance(data, str):
        return {"text_preview": _cut(data, PREVIEW_CHARS * 2), "preview_count": 1 if data and count else 0}
    if isinstance(data, list):
        return _list_preview("items", data, count)
    if isinstance(data, dict):
        preview: dict[str, Any] = {}
        shown = 0
        for key, value in data.items():
            if isinstance(value, list):
                part = _list_preview(key, value, count)
                preview[f"{key}_preview"] = part[f"{key}_preview"]
                shown = max(shown, part["preview_count"])
        preview["preview_count"] = shown
        return preview
    return {"value_preview": data, "preview_count": 1}


def _list_preview(key: str, elements: list[Any], count: int) -> dict[str, Any]:
    shown = [_preview_element(element) for element in elements[:count]]
    return {f"{key}_preview": shown, "preview_count": len(shown)}


def _preview_element(element: Any) -> Any:
    if isinstance(element, dict):
        preview = {}
        for key, value in element.items():
            if isinstance(value, str) and len(value) > 40:
                preview[f"{key}_preview"] = _cut(value, PREVIEW_CHARS)
            elif not isinstance(value, (dict, list)):
                preview[key] = value
        return preview
    if isinstance(element, str):
        return _cut(element, PREVIEW_CHARS)
    return element


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
