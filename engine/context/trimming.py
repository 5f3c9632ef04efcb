"""Fitting the inputs into the context limit by priority (data-transfer-protocol §6.3).

An `Item` is one input as it would be passed. `trim` applies the seed's algorithm and
returns what is kept plus one action per reduction, each with its reason.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from engine.context.content import FALLBACK_PRIORITY, element_priority, render
from engine.context.summary import summarize, truncate_text
from engine.errors import EngineError
from engine.tokens import TokenCounter

THRESHOLDS = {2: 0.8, 3: 0.9, 4: 0.95}
MIN_SUMMARY_TOKENS = 32  # below this a "summary" says nothing; the item is dropped instead
NEVER_SUMMARISED = {"code", "formula", "instructions", "system_prompt"}
# §6.3: task instructions "必须完整传递" (are passed complete); so is the system prompt,
# which the backend receives whole whatever the context says.
PASSED_WHOLE = {"instructions", "system_prompt"}


class InstructionsTooLarge(EngineError):
    """The task instructions and system prompt alone exceed the context limit: they are
    never truncated, so the node cannot run with this agent's limits."""

    code = "INSTRUCTIONS_EXCEED_CONTEXT"


@dataclass
class Item:
    name: str
    content: Any
    tokens: int
    priority: int
    data_type: str = "structured"
    summary_config: dict[str, Any] = field(default_factory=dict)
    batches: list[Any] | None = None  # when batched: the content of each batch; `tokens` is the largest
    # A summary transfer not made yet: `content` is still the data, `tokens` the summary's
    # target (an upper bound). Summarising waits until trimming has decided the item is
    # passed, so nothing is summarised only to be dropped.
    pending_summary: int | None = None
    raw_tokens: int = 0


@dataclass
class Shrinker:
    """The reductions trimming may apply, bound to a token counter (and an LLM for abstractive summaries)."""

    counter: TokenCounter
    abstractive: Callable[[str, int], str] | None = None

    def measure(self, content: Any) -> int:
        return self.counter.count(render(content))

    def filter_by_priority(self, item: Item, max_priority: int) -> Item | None:
        """Drop the elements of a structured item whose own priority is above `max_priority`;
        None when that removes nothing."""
        filtered = _filter_elements(item.content, max_priority)
        if filtered is None:
            return None
        tokens = self.measure(filtered)
        if item.pending_summary is not None:
            return replace(item, content=filtered, raw_tokens=tokens, tokens=min(tokens, item.pending_summary),
                           pending_summary=min(tokens, item.pending_summary))
        return replace(item, content=filtered, tokens=tokens, batches=None)

    def summarize(self, item: Item, target: int) -> tuple[Item, str, str]:
        """The item summarised into `target` tokens, the summary method actually used, and the
        note saying why it is not the one asked for ("" when it is)."""
        if item.pending_summary is not None:
            target = min(target, item.pending_summary)
        config = item.summary_config
        result = summarize(
            item.content, target_tokens=target, counter=self.counter,
            method=config.get("strategy", "extractive"),
            preserve_fields=config.get("preserve_fields"), summarize_fields=config.get("summarize_fields"),
            abstractive=self.abstractive, name=item.name, data_type=item.data_type,
        )
        summary = replace(item, content=result.content, tokens=result.tokens, batches=None, pending_summary=None)
        return summary, result.method, result.note

    def truncate(self, item: Item, target: int) -> Item:
        text = truncate_text(render(item.content), target, self.counter)
        return replace(item, content=text, tokens=self.counter.count(text), batches=None, pending_summary=None)


def _filter_elements(content: Any, max_priority: int) -> Any:
    def keep(element: Any) -> bool:
        level = element_priority(element)
        return (level or FALLBACK_PRIORITY) <= max_priority

    if isinstance(content, list):
        kept = [element for element in content if keep(element)]
        return kept if len(kept) < len(content) else None
    if isinstance(content, dict):
        changed = False
        out = {}
        for key, value in content.items():
            filtered = _filter_elements(value, max_priority) if isinstance(value, list) else None
            changed |= filtered is not None
            out[key] = value if filtered is None else filtered
        return out if changed else None
    return None


def _action(item: Item, action: str, after: int, reason: str, **extra: Any) -> dict[str, Any]:
    if item.pending_summary is not None:  # the summary transfer it was waiting for is folded into this action
        return {"data": item.name, "action": action, "original_tokens": item.raw_tokens, "reduced_tokens": after,
                "reason": f"{reason} (instead of its summary transfer to ≤ {item.pending_summary} tokens)",
                "stage": "trimming", **extra}
    return {"data": item.name, "action": action, "original_tokens": item.tokens, "reduced_tokens": after,
            "reason": reason, "stage": "trimming", **extra}


def trim(items: list[Item], limit: int, shrinker: Shrinker) -> tuple[list[Item], list[dict[str, Any]]]:
    """§6.3, for inputs that together exceed `limit`:

    1. order the items by priority, 1 first (input order within a level);
    2. priority 1 is always kept; if those items alone exceed the limit they are
       shrunk (`_shrink_critical`), never dropped;
    3. priority 2 is kept while the running total stays under 0.8 × limit; otherwise its
       low-priority elements are filtered out and, if still too big, it is summarised into
       the room left under 0.8 × limit (dropped only when that room is too small for any
       summary, and code or formulas, which are never summarised, are dropped);
    4. priority 3 is kept under 0.9 × limit, priority 4 under 0.95 × limit; otherwise dropped.
    """
    ordered = sorted(items, key=lambda item: item.priority)
    actions: list[dict[str, Any]] = []
    kept = _shrink_critical([item for item in ordered if item.priority <= 1], limit, shrinker, actions)
    current = sum(item.tokens for item in kept)
    for item in (item for item in ordered if item.priority > 1):
        share = THRESHOLDS[min(item.priority, 4)]
        ceiling = share * limit
        if current + item.tokens < ceiling:
            kept.append(item)
            current += item.tokens
            continue
        if item.priority == 2:
            reduced = _fit_important(item, current, limit, shrinker, actions)
            if reduced is not None:
                kept.append(reduced)
                current += reduced.tokens
            continue
        actions.append(_action(item, "drop", 0, f"priority {item.priority}: {current} + {item.tokens} tokens "
                                                f"would reach {share:g} × limit ({ceiling:g})"))
    return kept, actions


def _fit_important(item: Item, current: int, limit: int, shrinker: Shrinker, actions: list[dict[str, Any]]) -> Item | None:
    """A priority-2 item over 0.8 × limit: its elements of priority 3–4 go first, then it is
    summarised into the room left under 0.8 × limit or, when that is too small for any
    summary, into the room left under the limit itself; dropped only when neither room can
    hold a summary, or when it is code or a formula (never summarised)."""
    share = THRESHOLDS[2]
    room_tokens = _room_under(share * limit, current)
    filtered = shrinker.filter_by_priority(item, 2)
    if filtered is not None:
        actions.append(_action(item, "filter_by_priority", filtered.tokens,
                               f"priority 2 input over {share:g} × limit: elements of priority 3–4 removed",
                               filter="priority <= 2"))
        item = filtered
        if item.tokens <= room_tokens:
            return item
    if item.data_type in NEVER_SUMMARISED:
        actions.append(_action(item, "drop", 0, f"{item.data_type} is never summarised and only {room_tokens} "
                                                f"tokens are left under {share:g} × limit"))
        return None
    where = f"the {room_tokens} tokens left under {share:g} × limit"
    if room_tokens < MIN_SUMMARY_TOKENS:
        room_tokens = max(0, limit - current)
        where = f"the {room_tokens} tokens left under the limit (under {share:g} × limit too few were left)"
    if room_tokens < MIN_SUMMARY_TOKENS:
        actions.append(_action(item, "drop", 0, f"only {room_tokens} tokens left under the limit, "
                                                f"too few for a summary"))
        return None
    summary, method, note = shrinker.summarize(item, room_tokens)
    actions.append(_action(item, "summarize", summary.tokens, f"priority 2 input over {share:g} × limit: "
                                                              f"summarised into {where}",
                           **summary_method_fields(method, note)))
    return summary


def _room_under(ceiling: float, current: int) -> int:
    """The tokens that keep `current` + them strictly under `ceiling`."""
    room = ceiling - current
    return max(0, int(room) - (1 if room == int(room) else 0))


def _shrink_critical(items: list[Item], limit: int, shrinker: Shrinker, actions: list[dict[str, Any]]) -> list[Item]:
    """Priority-1 items must all be passed; when together they exceed the limit:

    a. filter their elements by priority (keep ≤ 2, then ≤ 1);
    b. summarise the data items (not instructions, system prompts, code or formulas) into
       shares of what the others leave, proportional to their size;
    c. as a last resort truncate what is still too big, token-exactly, except the task
       instructions and the system prompt: they are passed complete, and when they alone
       exceed the limit the node cannot run (InstructionsTooLarge).
    """
    def total() -> int:
        return sum(item.tokens for item in items)

    if total() <= limit:
        return items
    whole = sum(item.tokens for item in items if item.data_type in PASSED_WHOLE)
    if whole > limit:
        raise InstructionsTooLarge(
            f"the task instructions and system prompt take {whole} tokens, more than the context limit of {limit}; "
            "they are passed complete, never truncated: raise the agent's max_input_tokens or shorten its prompt",
            details={"instruction_tokens": whole, "context_limit": limit})
    for max_priority in (2, 1):
        for index, item in enumerate(items):
            if total() <= limit:
                return items
            filtered = shrinker.filter_by_priority(item, max_priority)
            if filtered is not None:
                actions.append(_action(item, "filter_by_priority", filtered.tokens,
                                       "priority 1 inputs exceed the limit", filter=f"priority <= {max_priority}"))
                items[index] = filtered
    if total() <= limit:
        return items
    summarisable = [i for i, item in enumerate(items) if item.data_type not in NEVER_SUMMARISED]
    fixed = sum(item.tokens for i, item in enumerate(items) if i not in summarisable)
    budget = max(0, limit - fixed)
    weight = sum(items[i].tokens for i in summarisable)
    for i in summarisable:
        item = items[i]
        target = int(budget * item.tokens / weight) if weight else 0
        reduced, method, note = shrinker.summarize(item, target)
        actions.append(_action(item, "compress", reduced.tokens, f"priority 1 inputs exceed the limit: compressed "
                                                                 f"to a {target}-token share",
                               **summary_method_fields(method, note)))
        items[i] = reduced
    overflow = total() - limit
    truncatable = [(i, item) for i, item in enumerate(items) if item.data_type not in PASSED_WHOLE]
    for i, item in sorted(truncatable, key=lambda pair: -pair[1].tokens):
        if overflow <= 0:
            break
        target = max(0, item.tokens - overflow)
        reduced = shrinker.truncate(item, target)
        actions.append(_action(item, "truncate", reduced.tokens, "priority 1 inputs still exceed the limit: "
                                                                  "truncated as a last resort"))
        overflow -= item.tokens - reduced.tokens
        items[i] = reduced
    return items


def summary_method_fields(method: str, note: str) -> dict[str, Any]:
    """The summary method actually used for an action, and why it differs from the one
    asked for (or what it left out) when it does, under the record's keys `strategy` and
    `strategy_note`."""
    return {"strategy": method, "strategy_note": note} if note else {"strategy": method}
