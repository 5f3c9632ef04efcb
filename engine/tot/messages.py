"""The agents' messages (tot-protocol "Agent 消息格式"): the base structure, and a check
of every message type's payload.

`check_reply` is what the explorer runs on each reply it receives; `check_message` also
knows the requests, for whoever drives a role from the other side (an LLM adapter) or
wants to check a stored conversation.
"""
from __future__ import annotations

from typing import Any

from . import fields as f
from .errors import ERROR_CODES, ToTError
from .tree import ThoughtNode, ThoughtTree

ROLES = ("orchestrator", "decomposer", "generator", "evaluator", "explorer", "synthesizer")
GENERATION_STRATEGIES = ("independent_sampling", "sequential_proposal")
EVALUATION_STRATEGIES = ("independent_scoring", "comparative_voting")


def make_message(from_: str, to: str, type: str, payload: dict[str, Any], task_id: str, *, error: ToTError | None = None) -> dict[str, Any]:
    """The seed's base structure; `error` (when given) becomes the seed's `error` field."""
    if from_ not in ROLES:
        raise ValueError(f"unknown role {from_!r} (known: {', '.join(ROLES)})")
    message = {"from": from_, "to": to, "type": type, "payload": payload, "task_id": task_id}
    if error is not None:
        message["error"] = error.as_dict()
    return message


def check_reply(message: Any, expected_type: str, *, from_: str | None = None, to: str | None = None,
                task_id: str | None = None) -> dict[str, Any]:
    """The payload of a well-formed reply of `expected_type` (optionally from, to and for the
    given task).

    Raises ToTError INVALID_FORMAT naming the first field that breaks the protocol; a
    well-formed reply that carries the seed's `error` field raises that error.
    """
    payload = check_message(message, expected_type)
    for key, expected in (("from", from_), ("to", to), ("task_id", task_id)):
        if expected is not None and message[key] != expected:
            raise f.refuse(key, f"expected {expected!r}, got {f.show(message[key])}")
    error = message.get("error")
    if error is not None:
        raise ToTError(error["code"], error["message"], recoverable=error["recoverable"])
    return payload


def check_message(message: Any, expected_type: str | None = None) -> dict[str, Any]:
    """The payload of a message in the seed's base structure whose payload has its type's shape."""
    f.an_object(message, "message")
    f.one_of(message, "from", "", ROLES)
    f.a_string(message, "to", "", empty=False)
    kind = f.a_string(message, "type", "", empty=False)
    if expected_type is not None and kind != expected_type:
        raise f.refuse("type", f"expected {expected_type!r}, got {f.show(kind)}")
    if kind not in PAYLOADS:
        raise f.refuse("type", f"unknown message type {f.show(kind)} (known: {', '.join(PAYLOADS)})")
    f.a_string(message, "task_id", "")
    error = message.get("error")
    if error is not None:
        f.an_object(error, "error")
        f.one_of(error, "code", "error", ERROR_CODES)
        f.a_string(error, "message", "error")
        f.a_boolean(error, "recoverable", "error")
    payload: dict[str, Any] = f.an_object_field(message, "payload", "")
    if error is None or payload:
        PAYLOADS[kind](payload, "payload")
    return payload


def _context(payload: dict[str, Any], where: str, keys: dict[str, Any]) -> None:
    context = f.an_object_field(payload, "context", where)
    at = f"{where}.context"
    for key, check in keys.items():
        check(context, key, at)


def _nodes(payload: dict[str, Any], key: str, where: str) -> None:
    for index, raw in enumerate(f.a_list(payload, key, where)):
        ThoughtNode.from_dict(raw, f"{where}.{key}[{index}]")


def _search_config(payload: dict[str, Any], where: str) -> None:
    config = f.an_object_field(payload, "search_config", where)
    at = f"{where}.search_config"
    f.one_of(config, "strategy", at, ("BFS", "DFS"))
    f.a_number(config, "max_depth", at, low=1, high=None, integer=True)
    f.a_number(config, "branching_factor", at, low=1, high=None, integer=True)
    f.a_number(config, "pruning_threshold", at, low=0, high=10)


def _decompose_task(payload: dict[str, Any], where: str) -> None:
    f.a_string(payload, "problem", where)
    f.a_string(payload, "task_type", where, empty=False)


def _decomposition_result(payload: dict[str, Any], where: str) -> None:
    f.a_string(payload, "thought_granularity", where, empty=False)
    f.strings(payload, "intermediate_steps", where)
    f.a_number(payload, "depth_estimate", where, low=1, high=None, integer=True)
    f.strings(payload, "constraints", where)
    f.a_string(payload, "success_criteria", where)


def _generate_thoughts(payload: dict[str, Any], where: str) -> None:
    ThoughtNode.from_dict(f.field(payload, "parent_node", where), f"{where}.parent_node")
    f.one_of(payload, "generation_strategy", where, GENERATION_STRATEGIES)
    f.a_number(payload, "num_candidates", where, low=1, high=None, integer=True)
    f.a_number(payload, "sample_index", where, low=0, high=None, integer=True, optional=True)
    _context(payload, where, {"problem": f.a_string, "goal": f.a_string, "constraints": f.strings})


def _generated_thoughts(payload: dict[str, Any], where: str) -> None:
    for index, candidate in enumerate(f.a_list(payload, "candidates", where)):
        at = f"{where}.candidates[{index}]"
        f.an_object(candidate, at)
        f.a_string(candidate, "temp_id", at, empty=False)
        f.a_string(candidate, "content", at, empty=False)
        f.a_string(candidate, "action_type", at, optional=True, empty=False)
        f.an_object_field(candidate, "metadata", at, optional=True)


def _evaluate_thoughts(payload: dict[str, Any], where: str) -> None:
    _nodes(payload, "candidates", where)
    f.one_of(payload, "evaluation_strategy", where, EVALUATION_STRATEGIES)
    f.strings(payload, "evaluation_criteria", where)

    def depth(owner: dict[str, Any], key: str, at: str) -> None:
        f.a_number(owner, key, at, low=0, high=None, integer=True)

    _context(payload, where, {"problem": f.a_string, "goal": f.a_string, "current_depth": depth, "max_depth": depth})


def _evaluation_results(payload: dict[str, Any], where: str) -> None:
    for index, entry in enumerate(f.a_list(payload, "evaluations", where)):
        at = f"{where}.evaluations[{index}]"
        f.an_object(entry, at)
        f.a_string(entry, "node_id", at, empty=False)
        f.a_number(entry, "score", at, low=0, high=10)
        f.a_number(entry, "confidence", at, low=0, high=1)
        f.a_string(entry, "reasoning", at)
        scores = f.an_object_field(entry, "dimension_scores", at, optional=True)
        if scores is not f.MISSING:
            for name in scores:
                f.a_number(scores, name, f"{at}.dimension_scores", low=0, high=10)
        metadata = f.an_object_field(entry, "metadata", at, optional=True)
        if metadata is not f.MISSING:
            f.a_boolean(metadata, "solved", f"{at}.metadata", optional=True)
    f.strings(payload, "ranking", where)
    f.strings(payload, "pruning_suggestions", where)


def _initialize_search(payload: dict[str, Any], where: str) -> None:
    f.a_string(payload, "problem", where)
    f.a_string(payload, "task_type", where, empty=False)
    _search_config(payload, where)
    _decomposition_result(f.an_object_field(payload, "decomposition_result", where), f"{where}.decomposition_result")


def _search_complete(payload: dict[str, Any], where: str) -> None:
    _nodes(payload, "best_path", where)
    ThoughtTree.from_dict(f.field(payload, "tree", where), f"{where}.tree")
    stats = f.an_object_field(payload, "stats", where)
    for key in ("total_nodes", "total_backtracks", "llm_calls"):
        f.a_number(stats, key, f"{where}.stats", low=0, high=None, integer=True)


def _synthesize_solution(payload: dict[str, Any], where: str) -> None:
    _nodes(payload, "best_path", where)
    f.a_string(payload, "problem", where)
    f.a_string(payload, "task_type", where, empty=False)


def _final_solution(payload: dict[str, Any], where: str) -> None:
    f.a_string(payload, "answer", where, empty=False)
    f.strings(payload, "reasoning_trace", where)
    f.a_number(payload, "confidence", where, low=0, high=1)
    verification = f.an_object_field(payload, "verification", where)
    f.a_boolean(verification, "is_valid", f"{where}.verification")
    # The seed's own example leaves these two out, so they may be missing.
    f.strings(verification, "validation_errors", f"{where}.verification", optional=True)
    f.strings(payload, "alternative_solutions", where, optional=True)


PAYLOADS = {
    "decompose_task": _decompose_task,
    "decomposition_result": _decomposition_result,
    "generate_thoughts": _generate_thoughts,
    "generated_thoughts": _generated_thoughts,
    "evaluate_thoughts": _evaluate_thoughts,
    "evaluation_results": _evaluation_results,
    "initialize_search": _initialize_search,
    "search_complete": _search_complete,
    "synthesize_solution": _synthesize_solution,
    "final_solution": _final_solution,
}
