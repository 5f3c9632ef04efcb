"""Tool results are inputs (data-transfer-protocol §5–§6): a node whose agent calls tools
passes each result into the next model turn by the same rules as any input, and holds the
same budget across its turns.

`ToolBudget` follows one node run's conversation. Each turn's results are

1. passed in the mode §5.4 chooses for their size, data type and the agent's role
   (`choose_mode`): whole under 2K tokens, else a summary (to `summary_ratio` of it, as the
   assembler summarises) or a reference with a preview — the whole result stays on the node
   run's record, where the reference points;
2. held to the node's data limit together with the data the prompt already carries: when
   the conversation is over it, results of earlier turns are trimmed first, oldest first
   (they matter least to the next turn), each replaced by a note of what it was; then this
   turn's results are passed as references with a shorter preview. The prompt's own data
   and the instructions are never touched here: they were fitted when the prompt was
   assembled. If even references do not fit, `ToolResultsOverBudget`.

Every decision is an action in the §7.2 record of the turn (`record`), with the tokens
before and after and why, the shape the budget bar draws.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.context.content import render
from engine.context.summary import summarize, truncate_text
from engine.context.transfer_modes import FULL, REFERENCE, SUMMARY, choose_mode
from engine.errors import EngineError
from engine.tokens import TokenCounter

SUMMARY_RATIO = 0.3  # the extractive summary's share, as the assembler's default
SUMMARY_FLOOR = 200
PREVIEW_TOKENS = 300  # a reference's preview
SHORT_PREVIEW_TOKENS = 60  # … when the budget is short
PROMPT_DATA = "prompt data"


class ToolResultsOverBudget(EngineError):
    """Even as references, a turn's tool results do not fit the node's data limit."""

    code = "CONTEXT_BUDGET_EXCEEDED"


@dataclass
class Passed:
    """A result as the next turn gets it."""

    call_id: str
    tool: str
    turn: int
    content: Any
    tokens: int  # as passed
    original_tokens: int
    mode: str  # full | summary | reference | trimmed

    @property
    def name(self) -> str:
        """How the record names it among the turn's inputs."""
        return f"{self.tool} result ({self.call_id})"


class ToolBudget:
    def __init__(self, *, limit: int, prompt_tokens: int, counter: TokenCounter, role: str = "",
                 abstractive: Callable[[str, int], str] | None = None) -> None:
        self.limit = limit  # the node's data limit (ContextLimits.data_limit)
        self.prompt_tokens = prompt_tokens  # what the prompt's data already takes of it
        self.counter = counter
        self.role = role
        self.abstractive = abstractive
        self.passed: list[Passed] = []

    def saved(self) -> list[dict[str, Any]]:
        """What has been passed so far, to go on from later (`restore`)."""
        return [dataclasses.asdict(entry) for entry in self.passed]

    def restore(self, saved: list[dict[str, Any]]) -> None:
        self.passed = [Passed(**entry) for entry in saved]

    def used(self) -> int:
        return self.prompt_tokens + sum(entry.tokens for entry in self.passed)

    def add(self, turn: int, results: list[tuple[str, str, Any]]) -> tuple[list[Any], dict[str, Any]]:
        """Pass one turn's results, each (call id, tool name, result): (what the model gets
        for each, in order; the turn's §7.2 record)."""
        actions: list[dict[str, Any]] = []
        used_before = self.used()
        new = [self._pass(turn, call_id, tool, result, actions) for call_id, tool, result in results]
        self.passed += new
        for entry in self.passed:  # 2. earlier turns first, oldest first
            if self.used() <= self.limit:
                break
            if entry.turn < turn and entry.mode != "trimmed":
                self._trim(entry, actions)
        for entry in new:  # then this turn's, to a reference with a short preview
            if self.used() <= self.limit:
                break
            if entry.mode != REFERENCE:
                self._to_reference(entry, results, actions)
        if self.used() > self.limit:
            raise ToolResultsOverBudget(
                f"the tool results of turn {turn} do not fit the node's data limit of {self.limit} tokens even as "
                f"references ({self.used()} tokens with the prompt's data): raise the agent's max_input_tokens "
                "or ask for smaller results", details={"limit": self.limit, "tokens": self.used()})
        return [entry.content for entry in new], self.record(turn, used_before, actions)

    def record(self, turn: int, used_before: int, actions: list[dict[str, Any]]) -> dict[str, Any]:
        inputs = {PROMPT_DATA: {"tokens": self.prompt_tokens, "passed_tokens": self.prompt_tokens,
                                "transfer_mode": FULL, "priority": "high", "data_type": "text"}}
        for entry in self.passed:
            inputs[entry.name] = {
                "tokens": entry.original_tokens, "passed_tokens": entry.tokens, "transfer_mode": entry.mode,
                "priority": "high" if entry.turn == turn else "medium", "data_type": "tool_result"}
        total = self.prompt_tokens + sum(entry.original_tokens for entry in self.passed)
        final = self.used()
        return {"turn": turn, "encoding": self.counter.name, "total_input_data": inputs, "total_tokens": total,
                "context_limit": self.limit, "overflow": max(0, total - self.limit), "tokens_before": used_before,
                "resolution": {"strategy": "tool_results" if actions else "none", "actions": actions,
                               "final_tokens": final, "within_limit": final <= self.limit}}

    # -- one result --------------------------------------------------------------------

    def _count(self, content: Any) -> int:
        return self.counter.count(render(content))

    def _pass(self, turn: int, call_id: str, tool: str, result: Any, actions: list[dict[str, Any]]) -> Passed:
        tokens = self._count(result)
        choice = choose_mode(tokens=tokens, data_type="tool_result", role=self.role)
        entry = Passed(call_id, tool, turn, result, tokens, tokens, FULL)
        name = entry.name
        if choice.mode == SUMMARY:
            target = max(math.ceil(tokens * SUMMARY_RATIO), SUMMARY_FLOOR)
            method = "abstractive" if self.abstractive else "extractive"
            summary = summarize(result, target_tokens=target, counter=self.counter, method=method,
                                abstractive=self.abstractive, name="items")
            entry.content, entry.tokens, entry.mode = summary.content, summary.tokens, SUMMARY
            actions.append(_action(name, "summarize", tokens, summary.tokens, f"{choice.reason}; to ≤ {target} tokens",
                                   strategy=summary.method, **({"note": summary.note} if summary.note else {})))
        elif choice.mode == REFERENCE:
            entry.content, entry.mode = self._reference(call_id, result, PREVIEW_TOKENS), REFERENCE
            entry.tokens = self._count(entry.content)
            actions.append(_action(name, "reference", tokens, entry.tokens, f"{choice.reason}; a preview of "
                                   f"≤ {PREVIEW_TOKENS} tokens, the whole result on the record"))
        return entry

    def _reference(self, call_id: str, result: Any, preview_tokens: int) -> dict[str, Any]:
        text = render(result)
        return {"transfer_mode": "reference", "tool_call": call_id, "tokens": self.counter.count(text),
                "preview": truncate_text(text, preview_tokens, self.counter),
                "note": "the whole result is kept on this node run's record (tool_calls)"}

    def _trim(self, entry: Passed, actions: list[dict[str, Any]]) -> None:
        before = entry.tokens
        entry.content = {"trimmed": True, "tool_call": entry.call_id,
                         "note": f"the result of {entry.tool} in turn {entry.turn} was left out to fit the budget"}
        entry.tokens, entry.mode = self._count(entry.content), "trimmed"
        actions.append(_action(entry.name, "trim", before, entry.tokens,
                               f"over the data limit of {self.limit} tokens: results of earlier turns go first",
                               stage="trimming"))

    def _to_reference(self, entry: Passed, results: list[tuple[str, str, Any]], actions: list[dict[str, Any]]) -> None:
        before = entry.tokens
        original = next(result for call_id, _, result in results if call_id == entry.call_id)
        entry.content = self._reference(entry.call_id, original, SHORT_PREVIEW_TOKENS)
        entry.tokens, entry.mode = self._count(entry.content), REFERENCE
        actions.append(_action(entry.name, "reference", before, entry.tokens,
                               f"over the data limit of {self.limit} tokens with earlier results trimmed: "
                               f"a reference with a preview of ≤ {SHORT_PREVIEW_TOKENS} tokens", stage="trimming"))


def _action(name: str, action: str, original: int, reduced: int, reason: str, *, stage: str = "transfer",
            **extra: Any) -> dict[str, Any]:
    return {"data": name, "action": action, "original_tokens": original, "reduced_tokens": reduced,
            "reason": reason, "stage": stage, **extra}
