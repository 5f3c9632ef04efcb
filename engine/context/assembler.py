"""Assembling one node's context (data-transfer-protocol §2–§7, agent-data-message).

`ContextBuilder.assemble` is the one entry point: it resolves the node's data references,
chooses how each is passed, adds inline items and data messages, fits everything into
the agent's limit by priority, and returns a `ContextAssembly` whose `record` is the
§7.2 `context_management` object — what each input cost, every action taken and why,
and the tokens actually passed, counted by tiktoken.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.context.batching import plan_batches
from engine.context.content import DEFAULT_PRIORITIES, FALLBACK_PRIORITY, element_priority, render
from engine.context.limits import ContextLimits
from engine.context.messages import merge_messages, parse_message
from engine.context.reference import reference_transfer
from engine.context.resolution import ResolutionAborted, Resolver, Sources
from engine.context.transfer_modes import FULL, REFERENCE, SUMMARY, choose_mode
from engine.context.trimming import Item, Shrinker, summary_method_fields, trim
from engine.tokens import TokenCounter

# §4.2: the middle of each strategy's compression range, used when no summary_ratio is set.
DEFAULT_RATIOS = {"extractive": 0.3, "abstractive": 0.2, "key_points": 0.15, "truncate": 0.3}
DEFAULT_BATCH_SIZE = 30_000
# Data this small is passed whole even in summary mode: a summary would save nothing.
SUMMARY_FLOOR = 200


@dataclass
class InputReport:
    """How one input was passed: what the inspection page shows beside the budget bar."""

    name: str
    source: dict[str, Any]
    data_type: str
    priority: int
    resolved_at: str
    resolved_tokens: int
    transfer_mode: str
    reason: str
    item: Item | None = None  # None once trimming dropped it
    batches: int = 0
    cap: dict[str, Any] | None = None  # the rows a db_query source left out at its cap (CappedRows.record)

    def as_dict(self) -> dict[str, Any]:
        item = self.item
        passed = item is not None
        return {
            "name": self.name,
            "source": self.source,
            "data_type": self.data_type,
            "priority": self.priority,
            "resolved_at": self.resolved_at,
            "resolved_tokens": self.resolved_tokens,
            "transfer_mode": self.transfer_mode,
            "reason": self.reason,
            "passed": passed,
            "passed_tokens": item.tokens if item is not None else 0,
            "batches": self.batches,
            "cap": self.cap,
            "content": item.content if item is not None else None,
        }


@dataclass
class ContextAssembly:
    record: dict[str, Any]
    inputs: list[InputReport]
    failures: list[dict[str, Any]]
    items: list[Item] = field(default_factory=list)

    @property
    def batch_count(self) -> int:
        return max([len(item.batches) for item in self.items if item.batches] or [1])

    def texts(self, call: int = 0) -> list[tuple[str, str]]:
        """(name, text) of every passed input for one call; batched inputs give their `call`-th batch."""
        texts = []
        for item in self.items:
            content = item.content
            if item.batches:
                content = item.batches[min(call, len(item.batches) - 1)]
            texts.append((item.name, render(content)))
        return texts

    def as_dict(self) -> dict[str, Any]:
        return {"context_management": self.record, "inputs": [report.as_dict() for report in self.inputs],
                "resolution_failures": self.failures}


def reference_name(reference: dict[str, Any], taken: set[str]) -> str:
    name = reference.get("name")
    if not name:
        kind = reference["ref_type"]
        if kind == "task_output":
            name = f"{reference['task_id']}_output"
        elif kind == "file":
            name = reference["path"].rstrip("/").rsplit("/", 1)[-1]
        else:
            name = f"{reference['table']}_query"
    unique, n = name, 2
    while unique in taken:
        unique, n = f"{name}#{n}", n + 1
    taken.add(unique)
    return unique


def infer_data_type(reference: dict[str, Any], data: Any) -> str:
    if reference.get("data_type"):
        data_type: str = reference["data_type"]
        return data_type
    kind = reference["ref_type"]
    if kind == "file":
        return "structured" if reference.get("format") == "json" or not isinstance(data, str) else "text"
    if kind == "db_query":
        return {"relations": "relations", "papers": "metadata"}.get(reference["table"], "structured")
    return "text" if isinstance(data, str) else "structured"


def infer_priority(explicit: int | None, data_type: str, data: Any) -> int:
    """An explicit priority; else §6.3's default for the data type; else the most
    important element's; else "important"."""
    if explicit:
        return explicit
    if data_type in DEFAULT_PRIORITIES:
        return DEFAULT_PRIORITIES[data_type]
    elements = data if isinstance(data, list) else [v for value in data.values() if isinstance(value, list)
                                                     for v in value] if isinstance(data, dict) else []
    best = None
    for level in map(element_priority, elements):
        if level == 1:
            return 1  # none is more important: the rest need not be read
        if level and (best is None or level < best):
            best = level
    return best or FALLBACK_PRIORITY


class ContextBuilder:
    def __init__(self, *, limits: ContextLimits, counter: TokenCounter, sources: Sources,
                 resolver: Resolver | None = None, abstractive: Callable[[str, int], str] | None = None):
        self.limits = limits
        self.counter = counter
        self.resolver = resolver or Resolver(sources)
        self.shrinker = Shrinker(counter, abstractive)

    def assemble(self, *, task_id: str = "", references: Sequence[dict[str, Any]] = (), transfer_config: dict[str, Any] | None = None,
                 items: Sequence[dict[str, Any]] = (), messages: Sequence[dict[str, Any]] = ()) -> ContextAssembly:
        transfer_config = transfer_config or {}
        limit = self.limits.data_limit
        actions: list[dict[str, Any]] = []
        failures: list[Any] = []
        reports: list[InputReport] = []
        taken: set[str] = set()

        # 1. Resolve each reference and pass it in the mode §5 chooses.
        for reference in references:
            name = reference_name(reference, taken)
            try:
                resolved = self.resolver.resolve(reference, name)
            except ResolutionAborted as aborted:
                aborted.failures = [f.as_dict() for f in failures + [aborted.failure]]
                raise
            failures += resolved.failures
            if resolved.skipped:
                continue
            report = self._pass_reference(reference, name, resolved, transfer_config, actions)
            if resolved.cap:
                report.cap = resolved.cap
                report.reason = f"{_cap_reason(resolved.cap)}; {report.reason}"
            reports.append(report)

        # 2. Inline items and merged data messages are passed whole.
        for index, raw in enumerate(items):
            reports.append(self._inline(raw, index, taken))
        for message in merge_messages([parse_message(raw, index=i) for i, raw in enumerate(messages)]):
            reports.append(self._message(message, taken))

        # 3. A node's priority_filter keeps only the levels it names.
        allowed = transfer_config.get("priority_filter")
        if allowed:
            self._apply_priority_filter(reports, sorted(set(allowed)), actions)

        # 4. Over the limit: trim by priority (§6.3).
        passing = [report.item for report in reports if report.item is not None]
        trimmed_to_fit = sum(item.tokens for item in passing) > limit
        if trimmed_to_fit:
            kept, trimmed = trim(passing, limit, self.shrinker)
            actions += trimmed
            by_name = {item.name: item for item in kept}
            for report in reports:
                if report.item is not None:
                    report.item = by_name.get(report.name)
        for report in reports:
            if report.item is not None and report.item.pending_summary is not None:
                report.item = self._summarise(report.item, actions)
        resolved_by = "priority_based_trimming" if trimmed_to_fit else "transfer_modes" if actions else "none"
        kept_items = [report.item for report in reports if report.item is not None]

        # 5. The record: what was passed, counted from the texts themselves.
        passed = {item.name: self._passed_tokens(item) for item in kept_items}
        for item in kept_items:
            item.tokens = passed[item.name]
        total = sum(report.resolved_tokens for report in reports)
        final = sum(passed.values())
        record = {
            "task_id": task_id,
            "encoding": self.counter.name,  # what every count of this record is in
            "total_input_data": {
                report.name: {"tokens": report.resolved_tokens, "priority": report.priority,
                              "data_type": report.data_type, "transfer_mode": report.transfer_mode,
                              "passed_tokens": passed.get(report.name, 0)}
                for report in reports
            },
            "total_tokens": total,
            "context_limit": limit,
            "overflow": max(0, total - limit),
            "limits": self.limits.as_dict(),
            "resolution": {"strategy": resolved_by, "actions": actions, "final_tokens": final,
                           "within_limit": final <= limit},
        }
        return ContextAssembly(record, reports, [f.as_dict() for f in failures], kept_items)

    # -- one input -----------------------------------------------------------------------

    def _pass_reference(self, reference: dict[str, Any], name: str, resolved: Any, transfer_config: dict[str, Any],
                        actions: list[dict[str, Any]]) -> InputReport:
        data = resolved.data
        data_type = infer_data_type(reference, data)
        priority = infer_priority(reference.get("priority"), data_type, data)
        text = render(data)
        tokens = self.counter.count(text)
        report = InputReport(name, dict(reference), data_type, priority, resolved.resolved_at, tokens, FULL, "")
        item = Item(name, data, tokens, priority, data_type, dict(reference.get("summary_config") or {}))

        batch_config = reference.get("batch_config") or {}
        if batch_config.get("enabled") and tokens > batch_config.get("batch_size_tokens", DEFAULT_BATCH_SIZE):
            report.item = self._batch(item, batch_config, actions)
            report.batches = len(report.item.batches or ())
            report.reason = f"batch_config: {report.batches} batches of ≤ {report.item.tokens} tokens (§6.2)"
            return report

        explicit = reference.get("transfer_mode")
        if reference.get("transform") == "summary" and not explicit:
            explicit = SUMMARY
        choice = choose_mode(tokens=tokens, data_type=data_type, role=self.limits.role, explicit=explicit,
                             node_mode=transfer_config.get("mode"))
        report.transfer_mode, report.reason = choice.mode, choice.reason
        if choice.mode == SUMMARY and tokens <= SUMMARY_FLOOR:
            report.reason += f"; {tokens} tokens ≤ {SUMMARY_FLOOR}: nothing to summarise, passed whole"
        elif choice.mode == SUMMARY:
            target = self._summary_target(item, transfer_config)
            item = Item(name, data, target, priority, data_type, item.summary_config, pending_summary=target,
                        raw_tokens=tokens)
        elif choice.mode == REFERENCE:
            batches = math.ceil(tokens / DEFAULT_BATCH_SIZE) if choice.batched else None
            content = reference_transfer(reference, data, preview_count=transfer_config.get("inline_preview_count", 3),
                                         tokens=tokens, batches=batches,
                                         # render's text is the JSON text, but a string's (which is itself)
                                         dumped=None if isinstance(data, str) else text)
            reduced = self.shrinker.measure(content)
            actions.append(_transfer_action(name, "reference", tokens, reduced, choice.reason))
            item = Item(name, content, reduced, priority, data_type)
        report.item = item
        return report

    def _summary_target(self, item: Item, transfer_config: dict[str, Any]) -> int:
        """§4.2: summary_ratio of the data (by default the middle of the strategy's range), capped
        by summary_config.max_length and the node's transfer_config.max_tokens."""
        config = item.summary_config
        ratio = config.get("summary_ratio", DEFAULT_RATIOS.get(config.get("strategy", "extractive"), 0.3))
        target: int = max(math.ceil(item.tokens * ratio), SUMMARY_FLOOR)
        for cap in (config.get("max_length"), transfer_config.get("max_tokens")):
            if cap:
                target = min(target, cap)
        return max(1, target)

    def _summarise(self, item: Item, actions: list[dict[str, Any]]) -> Item:
        """Make a pending summary transfer (see Item.pending_summary)."""
        assert item.pending_summary is not None, "only an item with a summary pending is summarised"
        summary, used, note = self.shrinker.summarize(item, item.pending_summary)
        actions.append(_transfer_action(item.name, "summarize", item.raw_tokens, summary.tokens,
                                        f"summary transfer to ≤ {item.pending_summary} tokens",
                                        **summary_method_fields(used, note)))
        return summary

    def _batch(self, item: Item, config: dict[str, Any], actions: list[dict[str, Any]]) -> Item:
        plan = plan_batches(
            item.content, counter=self.counter,
            batch_size_tokens=config.get("batch_size_tokens", DEFAULT_BATCH_SIZE),
            overlap_tokens=config.get("overlap_tokens", 500), max_batches=config.get("max_batches", 10),
            batch_priority=config.get("batch_priority", "chronological"),
        )
        largest = max(plan.tokens)
        actions.append(_transfer_action(
            item.name, "batch", item.tokens, largest,
            f"split into {len(plan.batches)} batches (≤ {config.get('batch_size_tokens', DEFAULT_BATCH_SIZE)} tokens, "
            f"{plan.order} order); each call gets one",
            batches=len(plan.batches), left_out=plan.left_out,
            aggregation=config.get("aggregation_strategy", "merge"),
        ))
        return Item(item.name, plan.batches[0], largest, item.priority, item.data_type, item.summary_config,
                    batches=plan.batches)

    def _inline(self, raw: dict[str, Any], index: int, taken: set[str]) -> InputReport:
        if not isinstance(raw, dict) or "content" not in raw:
            raise ValueError(f"items[{index}]: an inline item needs at least 'content'")
        data_type = raw.get("data_type") or ("text" if isinstance(raw["content"], str) else "structured")
        name = reference_name({"ref_type": "inline", "name": raw.get("name") or f"item_{index + 1}"}, taken)
        priority = infer_priority(raw.get("priority"), data_type, raw["content"])
        if priority not in (1, 2, 3, 4):
            raise ValueError(f"items[{index}].priority must be 1–4, not {priority!r}")
        tokens = self.counter.count(render(raw["content"]))
        report = InputReport(name, {"inline": True}, data_type, priority, "before_scheduling", tokens, FULL,
                             "inline item: passed whole")
        report.item = Item(name, raw["content"], tokens, priority, data_type, dict(raw.get("summary_config") or {}))
        return report

    def _message(self, message: Any, taken: set[str]) -> InputReport:
        label = message.kind or "data"
        if message.instance is not None:
            label = f"{label}[{message.instance}]"
        name = reference_name({"ref_type": "message", "name": label}, taken)
        content = {"kind": message.kind, "data": message.data}
        tokens = self.counter.count(render(content))
        report = InputReport(name, {"data_message": message.identity is not None}, "data_message", 1,
                             "before_scheduling", tokens, FULL, "data message: persistent context, passed whole")
        report.item = Item(name, content, tokens, 1, "data_message")
        return report

    def _apply_priority_filter(self, reports: list[InputReport], allowed: list[int], actions: list[dict[str, Any]]) -> None:
        for report in reports:
            item = report.item
            if item is None:
                continue
            if item.priority not in allowed:
                actions.append(_transfer_action(item.name, "filter_by_priority", item.tokens, 0,
                                                f"priority {item.priority} is not in transfer_config.priority_filter",
                                                filter=f"priority in {allowed}"))
                report.item = None
                continue
            filtered = self.shrinker.filter_by_priority(item, max(allowed))
            if filtered is not None:
                actions.append(_transfer_action(item.name, "filter_by_priority", item.tokens, filtered.tokens,
                                                "elements outside transfer_config.priority_filter removed",
                                                filter=f"priority <= {max(allowed)}"))
                report.item = filtered

    def _passed_tokens(self, item: Item) -> int:
        if item.batches:
            return max(self.counter.count(render(batch)) for batch in item.batches)
        return self.counter.count(render(item.content))


def _cap_reason(cap: dict[str, Any]) -> str:
    return (f"limit {cap['limit_requested']} capped at {cap['limit_applied']} rows: "
            f"{cap['rows_left_out']} rows left out")


def _transfer_action(name: str, action: str, original: int, reduced: int, reason: str, **extra: Any) -> dict[str, Any]:
    return {"data": name, "action": action, "original_tokens": original, "reduced_tokens": reduced,
            "reason": reason, "stage": "transfer", **extra}
