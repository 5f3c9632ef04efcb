"""Splitting data that exceeds its budget into batches, and aggregating what the batches
produced (data-transfer-protocol §6.2).

    {"batch_config": {"enabled": true, "batch_size_tokens": 30000, "overlap_tokens": 500,
                      "max_batches": 10, "aggregation_strategy": "merge | vote | latest",
                      "batch_priority": "chronological | importance | random"}}

A list is split between its elements, a string between its tokens. Every batch's token
count is the exact count of the text it is passed as (`render`), and no batch exceeds
`batch_size_tokens` unless it is a single list element too big on its own.
"""
from __future__ import annotations

import json
import math
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard

from .content import element_priority, render

if TYPE_CHECKING:
    from engine.tokens import TokenCounter

PRIORITIES = ("chronological", "importance", "random")
AGGREGATIONS = ("merge", "vote", "latest", "weighted")
# Keys that name an element of a result list: two elements with the same one are the same.
IDENTITY_KEYS = ("atom_id", "id", "relation_id")


@dataclass
class BatchPlan:
    batches: list[Any]  # each batch: a list of elements (list data) or a str (text data)
    tokens: list[int]  # counter.count(render(batch)) for each batch, exact
    total_tokens: int  # tokens of the whole data as given
    left_out: int  # elements (or for text: tokens) not in any batch because of max_batches
    order: str  # the batch_priority applied
    # How much of each batch repeats the end of the previous one: elements (list data) or
    # characters (text data); 0 for the first batch.
    overlaps: list[int] = field(default_factory=list)


def plan_batches(
    data: Any,
    *,
    counter: TokenCounter,
    batch_size_tokens: int = 30000,
    overlap_tokens: int = 500,
    max_batches: int = 10,
    batch_priority: str = "chronological",
    seed: int = 0,
) -> BatchPlan:
    _check_int("batch_size_tokens", batch_size_tokens, 1)
    _check_int("overlap_tokens", overlap_tokens, 0)
    if overlap_tokens >= batch_size_tokens:
        raise ValueError(f"overlap_tokens ({overlap_tokens}) must be less than batch_size_tokens ({batch_size_tokens})")
    _check_int("max_batches", max_batches, 1)
    if batch_priority not in PRIORITIES:
        raise ValueError(f"batch_priority {batch_priority!r} is unknown (known: {', '.join(PRIORITIES)})")
    if isinstance(data, str):
        return _plan_text(data, counter, batch_size_tokens, overlap_tokens, max_batches)
    if isinstance(data, list):
        ordered = _order(data, batch_priority, seed)
        plan = _plan_list(ordered, counter, batch_size_tokens, overlap_tokens, max_batches)
        plan.total_tokens = counter.count(render(data))
        plan.order = batch_priority
        return plan
    raise ValueError(f"data: only a list or a string can be split into batches, not {type(data).__name__}")


def _check_int(name: str, value: Any, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer ≥ {minimum}, got {value!r}")


# ---------------------------------------------------------------- lists


def _order(elements: list[Any], priority: str, seed: int) -> list[Any]:
    if priority == "chronological":
        return list(elements)
    if priority == "random":
        shuffled = list(elements)
        random.Random(seed).shuffle(shuffled)
        return shuffled
    def key(element: Any) -> tuple[int, bool, float]:
        level = element_priority(element)
        strength = _strength(element)
        return (2 if level is None else level, strength is None, -(strength or 0))

    return sorted(elements, key=key)


def _strength(element: Any) -> float | None:
    """An element's own `confidence`, else its `score`; None when it has neither."""
    if isinstance(element, dict):
        for name in ("confidence", "score"):
            value = element.get(name)
            if _is_number(value) and not math.isnan(value):
                return value
    return None


def _plan_list(elements: list[Any], counter: TokenCounter, size: int, overlap: int, max_batches: int) -> BatchPlan:
    # An element costs what it costs inside the rendered list (strings are JSON-quoted there).
    costs = [counter.count(json.dumps(element, ensure_ascii=False, default=str)) for element in elements]

    def estimate(indices: list[int]) -> int:
        return sum(costs[i] for i in indices) + _allowance(len(indices))

    batches: list[list[Any]] = []
    tokens: list[int] = []
    overlaps: list[int] = []
    following = 0  # the first element not yet in any batch
    previous: list[int] = []
    while following < len(elements) and len(batches) < max_batches:
        carried = _trailing(previous, costs, overlap)
        # Room for at least the next new element: drop carried elements from the front.
        while carried and estimate(carried + [following]) > size:
            carried = carried[1:]
        members = carried + [following]
        filled = sum(costs[i] for i in members)
        position = following + 1
        while position < len(elements) and filled + costs[position] + _allowance(len(members) + 1) <= size:
            members.append(position)
            filled += costs[position]
            position += 1
        counted = counter.count(render([elements[i] for i in members]))
        # The estimate may be a few tokens short; give back elements until the batch fits.
        while counted > size and len(members) > 1:
            if len(members) > len(carried) + 1:
                members.pop()
            else:
                carried = carried[1:]
                members = members[1:]
            counted = counter.count(render([elements[i] for i in members]))
        batches.append([elements[i] for i in members])
        tokens.append(counted)
        overlaps.append(len(carried))
        following = members[-1] + 1
        previous = members
    return BatchPlan(batches, tokens, 0, len(elements) - following, "", overlaps)


def _allowance(count: int) -> int:
    """Tokens a rendered list adds to its elements' own: brackets and one per ", " separator
    (an estimate; every batch is checked with one exact count)."""
    return 2 + max(count - 1, 0)


def _trailing(members: list[int], costs: list[int], overlap: int) -> list[int]:
    """The last elements of a batch whose tokens together fit in `overlap`."""
    carried: list[int] = []
    used = 0
    for index in reversed(members):
        if used + costs[index] > overlap:
            break
        used += costs[index]
        carried.insert(0, index)
    return carried


# ---------------------------------------------------------------- text


def _plan_text(text: str, counter: TokenCounter, size: int, overlap: int, max_batches: int) -> BatchPlan:
    """Token windows cut only between characters, so the windows minus their overlaps are
    the text (a lone surrogate, which is not UTF-8, comes out as U+FFFD, as tiktoken sees it)."""
    encoding = counter.encoding
    ids = encoding.encode(text, disallowed_special=())
    pieces = encoding.decode_tokens_bytes(ids)
    raw = b"".join(pieces)
    offsets = [0]
    for token_bytes in pieces:
        offsets.append(offsets[-1] + len(token_bytes))
    # A window may only begin or end where a character begins, so no character is cut.
    clean = [offset == len(raw) or (raw[offset] & 0xC0) != 0x80 for offset in offsets]

    def window(start: int, end: int) -> str:
        return raw[offsets[start]:offsets[end]].decode("utf-8", errors="ignore")

    def clean_at_or_before(position: int, floor: int) -> int | None:
        while position > floor and not clean[position]:
            position -= 1
        return position if position > floor else None

    def clean_at_or_after(position: int) -> int:
        while not clean[position]:
            position += 1
        return position

    batches: list[str] = []
    tokens: list[int] = []
    overlaps: list[int] = []
    start, previous_end = 0, 0
    while start < len(ids) and len(batches) < max_batches:
        end = clean_at_or_before(min(start + size, len(ids)), start)
        if end is None:  # one character longer than a whole batch (tiny batch sizes only)
            end = clean_at_or_after(start + 1)
        piece = window(start, end)
        counted = counter.count(piece)
        # Re-encoding a window can differ from its slice at the edges; shrink until it fits.
        while counted > size:
            shorter = clean_at_or_before(end - 1, start)
            if shorter is None:
                break
            end = shorter
            piece = window(start, end)
            counted = counter.count(piece)
        batches.append(piece)
        tokens.append(counted)
        overlaps.append(len(window(start, previous_end)) if previous_end > start else 0)
        previous_end = end
        if end >= len(ids):
            break
        start = clean_at_or_after(max(end - overlap, start + 1))
    covered = previous_end if batches else 0
    return BatchPlan(batches, tokens, len(ids), len(ids) - covered, "chronological", overlaps)


# ---------------------------------------------------------------- aggregation


def aggregate(results: list[Any], aggregation: str, weights: list[float] | None = None) -> Any:
    """One result from the results of the batches, by `aggregation_strategy`."""
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation_strategy {aggregation!r} is unknown (known: {', '.join(AGGREGATIONS)})")
    if not isinstance(results, list) or not results:
        raise ValueError("aggregate needs a non-empty list of batch results")
    if weights is not None and aggregation != "weighted":
        raise ValueError(f"weights apply only to the 'weighted' strategy, not to {aggregation!r}")
    if aggregation == "latest":
        return results[-1]
    if aggregation == "vote":
        return _vote(results)
    if aggregation == "merge":
        return _merge_all(results)
    return _weighted(results, _weights(results, weights))


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def _vote(results: list[Any]) -> Any:
    keys = [_canonical(result) for result in results]
    tally = Counter(keys)
    best = max(tally.values())
    for result, key in zip(results, keys, strict=True):  # ties go to the earliest
        if tally[key] == best:
            return result


def _merge_all(results: list[Any]) -> Any:
    present = [result for result in results if result is not None]
    if not present:
        return None
    kinds = {_merge_kind(result) for result in present}
    if len(kinds) > 1:
        raise ValueError(f"merge: batch results are of different kinds ({', '.join(sorted(kinds))})")
    kind = kinds.pop()
    if kind == "list":
        return _merge_lists(present)
    if kind == "object":
        merged: dict[str, Any] = {}
        for result in present:
            merged = _merge_dicts(merged, result)
        return merged
    if kind == "string":
        return "\n\n".join(text for text in present if text)
    return present[-1]


def _merge_kind(value: Any) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, str):
        return "string"
    return "scalar"


def _element_key(element: Any) -> str:
    if isinstance(element, dict):
        for name in IDENTITY_KEYS:
            if element.get(name) is not None:
                return f"{name}={_canonical(element[name])}"
    return _canonical(element)


def _merge_lists(lists: list[list[Any]]) -> list[Any]:
    """Concatenated, each element kept at its first appearance (same id key, or same value)."""
    seen: set[str] = set()
    merged = []
    for items in lists:
        for element in items:
            key = _element_key(element)
            if key not in seen:
                seen.add(key)
                merged.append(element)
    return merged


def _merge_dicts(earlier: dict[str, Any], later: dict[str, Any]) -> dict[str, Any]:
    merged = dict(earlier)
    for key, value in later.items():
        mine = merged.get(key)
        if key not in merged:
            merged[key] = value
        elif isinstance(mine, dict) and isinstance(value, dict):
            merged[key] = _merge_dicts(mine, value)
        elif isinstance(mine, list) and isinstance(value, list):
            merged[key] = _merge_lists([mine, value])
        elif value is not None:  # a batch that found nothing does not erase what another found
            merged[key] = value
    return merged


def _weights(results: list[Any], weights: list[Any] | None) -> list[float]:
    if weights is None:
        # Each result's own confidence when every one carries a usable one, else equal.
        own: list[Any] = [result.get("confidence") if isinstance(result, dict) else None for result in results]
        usable = all(_is_number(value) and math.isfinite(value) and value >= 0 for value in own)
        return own if usable and any(own) else [1.0] * len(results)
    if not isinstance(weights, list) or len(weights) != len(results):
        count = len(weights) if isinstance(weights, list) else type(weights).__name__
        raise ValueError(f"weights: need one weight per result ({len(results)}), got {count}")
    for position, weight in enumerate(weights):
        if not _is_number(weight) or not math.isfinite(weight) or weight < 0:
            raise ValueError(f"weights[{position}] must be a finite number ≥ 0, got {weight!r}")
    if not any(weights):
        raise ValueError("weights: all are zero")
    return weights


def _weighted(results: list[Any], weights: list[float]) -> Any:
    if all(_is_number(result) for result in results):
        return _mean(results, weights)
    if all(isinstance(result, dict) for result in results):
        merged = {}
        keys = list(dict.fromkeys(key for result in results for key in result))
        for key in keys:
            having = [(result[key], weight) for result, weight in zip(results, weights, strict=True) if key in result]
            values = [value for value, _ in having]
            shares = [weight for _, weight in having]
            if all(_is_number(value) for value in values) and any(shares):
                merged[key] = _mean(values, shares)
            else:
                merged[key] = _heaviest(values, shares)
        return merged
    return _heaviest(results, weights)


def _mean(values: list[Any], weights: list[float]) -> float:
    total: float = sum(value * weight for value, weight in zip(values, weights, strict=True))
    return total / sum(weights)


def _heaviest(values: list[Any], weights: list[float]) -> Any:
    """The value of the highest weight; ties go to the earliest."""
    best = max(range(len(values)), key=lambda index: (weights[index], -index))
    return values[best]


def _is_number(value: Any) -> TypeGuard[int | float]:
    return type(value) in (int, float)
