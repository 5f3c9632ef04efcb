"""The conversation of a node whose agent has tools: ask the model, run the calls it asks
for, give it their results, ask again — until it answers without calls.

The agent's `capabilities.tools` are looked up in the catalogue (tools/catalogue.py) and
sent with every turn; a name the catalogue does not hold is a missing tool, which the
model is never offered. Each call's arguments are checked against the tool's schema
before it runs; a failed call (its code from tools/errors.py) is returned to the model as
an error result, as the protocols do, and recorded. The node fails only when the loop
cannot finish: the model still asks for calls after `max_tool_calls` (TOOL_LOOP_LIMIT, or
the last failed call's code when the last turn's calls all failed), or a skill needs a tool
the agent lacks (CAPABILITY_GAP naming it).

Results are inputs: engine/context/tool_results.py passes each into the next turn in the
mode its size calls for and holds the node's budget across turns. What happened is on the
node run: `turns` (each model turn: tokens, text, the calls it asked for, the context record
of what it was given) and `tool_calls` (each call: tool, arguments, status, result preview,
digest and the result itself up to RESULT_KEPT_BYTES, duration, result tokens).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.utils import timezone

from agents.agent_tools import needs_approval
from agents.backends import BackendRequest, BackendResponse
from agents.backends.metering import calling
from core.cancellation import stoppable
from core.jsonutil import iso
from engine import gates
from engine.context.tool_results import ToolBudget, ToolResultsOverBudget
from executions.node_errors import NodeFailure, NodeWaits
from tools import catalogue
from tools.call_groups import CallGroup
from tools.errors import TOOL_ARGUMENTS_INVALID, TOOL_CALL_REJECTED, TOOL_LOOP_LIMIT, TOOL_UNAVAILABLE

RESULT_KEPT_BYTES = 64_000  # a result larger than this is kept as its preview and digest only
PREVIEW_CHARS = 500
TEXT_KEPT_CHARS = 2_000


TOOL_CALL_GATE = "tool_call"  # the `kind` of the gate a node run opens on calls that need approval
AWAITING = "awaiting_approval"  # the status of a call waiting for that decision


@dataclasses.dataclass
class Toolbox:
    """What one node run's agent can call."""

    tools: dict[str, catalogue.Tool]
    missing: list[str]  # named by the agent, not in the catalogue
    max_calls: int
    parallel: bool
    needs_approval: set[str]
    deciders: dict[str, list[str]] = dataclasses.field(default_factory=lambda: {"roles": list(gates.DEFAULT_ROLES)})

    @classmethod
    def of(cls, agent) -> Toolbox | None:
        """The agent's tools, or None when it names none."""
        wanted = list((agent.capabilities or {}).get("tools") or [])
        if not wanted:
            return None
        tools, missing = catalogue.resolve(wanted)
        return cls({tool.name: tool for tool in tools}, missing, agent.max_tool_calls, agent.parallel_tool_calls,
                   {tool.name for tool in tools if needs_approval(agent.tools_needing_approval, tool.name)})

    def specs(self) -> list[dict[str, Any]]:
        return [{"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
                for tool in self.tools.values()]


def converse(backend, request: BackendRequest, toolbox: Toolbox, budget: ToolBudget, record: dict,
             *, purpose: str = "node", resume: dict | None = None) -> BackendResponse:
    """The model's final answer to `request`, after as many turns of tool calls as it asks
    for. `record["turns"]` and `record["tool_calls"]` grow as it goes (so that a failure
    still shows what was done); the response's tokens are every turn's.

    A turn that asks for a call of a tool needing approval stops the node (NodeWaits) before
    any of its calls runs; `resume` is what it stopped with (`NodeWaits.conversation`), the
    person's decision added, and the conversation goes on from there without asking the
    model again what it already answered."""
    request = dataclasses.replace(request, tools=toolbox.specs(), transcript=[], parallel_tool_calls=toolbox.parallel)
    turns = record.setdefault("turns", [])
    calls = record.setdefault("tool_calls", [])
    tokens_in = tokens_out = 0
    context: dict[str, Any] | None = None  # what the turn is given besides the prompt
    pending = None
    if resume is not None:
        request = dataclasses.replace(request, transcript=resume["transcript"])
        budget.restore(resume["passed"])
        tokens_in, tokens_out, pending = resume["tokens_in"], resume["tokens_out"], resume["pending"]
    while True:
        if pending is None:
            turn = len(turns) + 1
            with calling(f"{purpose}, turn {turn}"):
                response = backend.complete(request)
            tokens_in += response.tokens_in
            tokens_out += response.tokens_out
            turns.append({"turn": turn, "tokens_in": response.tokens_in, "tokens_out": response.tokens_out,
                          "text": (response.text or "")[:TEXT_KEPT_CHARS],
                          "tool_call_ids": [call.get("id", "") for call in response.tool_calls],
                          **({"context": context} if context else {})})
            if not response.tool_calls:
                return dataclasses.replace(response, tokens_in=tokens_in, tokens_out=tokens_out)
            if len(calls) + len(response.tool_calls) > toolbox.max_calls:
                raise _loop_limit(toolbox, calls, len(response.tool_calls), record)
            pending = {"turn": turn, "text": response.text or "", "asked": response.tool_calls, "decided": {}}
        undecided = [call for call in pending["asked"]
                     if call.get("name") in toolbox.needs_approval and call.get("id") not in pending["decided"]]
        if undecided:
            record.update(tokens_in=tokens_in, tokens_out=tokens_out)
            raise _waits(toolbox, undecided, record, {
                "transcript": request.transcript, "passed": budget.saved(), "pending": pending,
                "tokens_in": tokens_in, "tokens_out": tokens_out})
        turn = pending["turn"]
        done = run_calls(toolbox, pending["asked"], turn, record, pending["decided"])
        outcomes = [entry for entry, _ in done]
        calls += outcomes
        try:
            passed, context = budget.add(turn, [(entry["id"], entry["name"], _content(outcome))
                                                for entry, outcome in done])
        except ToolResultsOverBudget as error:
            raise NodeFailure(str(error), code=error.code, retryable=False, record=record,
                              details=error.details) from None
        given = {entry.call_id: entry.tokens for entry in budget.passed}  # as the next turn gets them
        for entry in outcomes:
            entry["result_tokens"] = given[entry["id"]]
        transcript = [*request.transcript,
                      {"role": "assistant", "text": pending["text"],
                       "tool_calls": [{"id": entry["id"], "name": entry["name"], "arguments": entry["arguments"]}
                                      for entry in outcomes]}]
        transcript += [{"role": "tool", "id": entry["id"], "name": entry["name"], "status": entry["status"],
                        "content": content} for entry, content in zip(outcomes, passed, strict=True)]
        request = dataclasses.replace(request, transcript=transcript)
        pending = None


def _waits(toolbox: Toolbox, undecided: list[dict[str, Any]], record: dict, conversation: dict) -> NodeWaits:
    """The node stops until a person decides the calls `undecided` (a gate of its run, decided
    as any gate is: executions/services/gates.py); they show in `tool_calls` as awaiting it."""
    shown = [{"id": str(call.get("id")), "name": call.get("name"), "arguments": call.get("arguments")}
             for call in undecided]
    names = ", ".join(dict.fromkeys(str(call["name"]) for call in shown))
    gate = {**gates.settings_of({"prompt": f"Let the agent call {names}?", "decisions": [gates.APPROVE, gates.REJECT],
                                 "deciders": toolbox.deciders}),
            "kind": TOOL_CALL_GATE, "shown": {"calls": shown}, "missing": [], "schema_from": "", "decision": None}
    waiting = [{**call, "turn": conversation["pending"]["turn"], "status": AWAITING, "error_code": "", "error": "",
                "approved_by": None} for call in shown]
    record = {**record, "tool_calls": [*record["tool_calls"], *waiting]}
    return NodeWaits(f"waiting for a decision on {names}", gate=gate, conversation=conversation, record=record)


Done = tuple[dict[str, Any], catalogue.Outcome]  # a call's entry of `tool_calls`, and how it ended


def run_calls(toolbox: Toolbox, asked: list[dict[str, Any]], turn: int, record: dict,
              decided: dict[str, dict[str, Any]]) -> list[Done]:
    """Run one turn's calls: builtin tools here, one after another (they read the database
    on this thread's connection); those on MCP servers at once when the agent allows
    parallel calls. In the order asked."""
    entries: list[Done | None] = [None] * len(asked)
    remote: list[tuple[int, catalogue.Tool, Any]] = []
    for index, call in enumerate(asked):
        name = str(call.get("name", ""))
        tool = toolbox.tools.get(name)
        arguments = call.get("arguments")
        call_id = str(call.get("id") or f"call_{turn}_{index + 1}")
        decision = decided.get(call_id)  # a person's, on a tool that needs approval
        entry: dict[str, Any] = {
            "id": call_id, "turn": turn, "name": name, "server": tool.server if tool else "",
            "tool": tool.tool if tool else name, "arguments": arguments,
            "started_at": iso(timezone.now()),
            "approved_by": decision["decided_by"] if decision and decision["decision"] == gates.APPROVE else None,
            **({"decision": decision} if decision else {})}
        if name in toolbox.missing:
            raise NodeFailure(f"the model asked for {name}, which the agent names but the tool catalogue does not "
                              "hold", code="CAPABILITY_GAP", retryable=False, record=record,
                              details={"missing_tools": [name]})
        if tool is None:
            entries[index] = _finish(entry, catalogue.Outcome(
                TOOL_UNAVAILABLE, error=f"{name!r} is not one of this agent's tools "
                                        f"({', '.join(toolbox.tools) or 'it has none'})"))
        elif decision is not None and decision["decision"] != gates.APPROVE:
            entries[index] = _finish(entry, catalogue.Outcome(TOOL_CALL_REJECTED, error=(
                f"rejected by {decision['decided_by'] or 'a person'}: {decision['comment'] or 'no comment'}")))
        elif isinstance(arguments, str):  # the model's text that is not a JSON object
            entries[index] = _finish(entry, catalogue.Outcome(
                TOOL_ARGUMENTS_INVALID, error=f"the arguments of {name} are not a JSON object: {arguments[:200]!r}"))
        elif tool.server == catalogue.BUILTIN or not toolbox.parallel:
            entries[index] = _finish(entry, catalogue.call(tool, arguments))
        else:
            remote.append((index, tool, entry))
    if remote:
        pool = ThreadPoolExecutor(max_workers=len(remote), thread_name_prefix="tool-call")
        group = CallGroup()
        try:
            futures = [(index, entry, pool.submit(catalogue.call, tool, entry["arguments"], group=group))
                       for index, tool, entry in remote]
            with stoppable(group.stop):  # a cancel of the node run stops them (core/cancellation.py)
                for index, entry, future in futures:
                    entries[index] = _finish(entry, future.result())
        except BaseException:  # a time limit or a cancel stops the node here: it stops the calls, and their servers
            group.stop()
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
    return [done for done in entries if done is not None]


def _finish(entry: dict[str, Any], outcome: catalogue.Outcome) -> Done:
    """The call's entry of `tool_calls`, filled in from its outcome."""
    text = json.dumps(outcome.result if outcome.ok else {"error": outcome.error}, ensure_ascii=False, default=str)
    kept = outcome.ok and len(text.encode()) <= RESULT_KEPT_BYTES
    if outcome.started_at:  # when it began, rather than when it was asked for (calls may wait their turn)
        entry["started_at"] = outcome.started_at
    entry |= {"status": outcome.status, "error_code": "" if outcome.ok else outcome.status, "error": outcome.error,
              "duration_ms": outcome.duration_ms, "result_preview": text[:PREVIEW_CHARS],
              "result_digest": "sha256:" + hashlib.sha256(text.encode()).hexdigest(),
              "result": outcome.result if kept else None, "result_kept": kept, "result_tokens": 0}
    return entry, outcome


def _content(outcome: catalogue.Outcome) -> Any:
    """What the model is given for a call: its result, or the error (code and message)."""
    if outcome.ok:
        return outcome.result
    return {"error": {"code": outcome.status, "message": outcome.error}}


def _loop_limit(toolbox: Toolbox, calls: list[dict[str, Any]], asked: int, record: dict) -> NodeFailure:
    last_turn = [entry for entry in calls if entry["turn"] == calls[-1]["turn"]] if calls else []
    failed = bool(last_turn) and all(entry["status"] != "success" for entry in last_turn)
    code = last_turn[-1]["error_code"] if failed else TOOL_LOOP_LIMIT
    return NodeFailure(
        f"the model asked for {asked} more tool call(s) after {len(calls)}, and the agent allows {toolbox.max_calls} "
        f"per node run (max_tool_calls)" + (f"; the last turn's calls all failed, the last with {code}" if failed else ""),
        code=code, retryable=False, record=record,
        details={"tool_calls_made": len(calls), "max_tool_calls": toolbox.max_calls, "asked": asked})

