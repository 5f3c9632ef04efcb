"""Comparing two runs of one workflow: which node runs correspond, and how each pair differs.

Plain data in (each run's node runs as dicts, in the order they were made), plain data out:
the aligned pairs with their differences, each node's verdict, and the counts. The Django
side (`executions/comparison.py`) reads the rows; the API, the command and the compare page
show what this returns.

Runs of any size are compared in two steps: `align_runs` pairs the node runs and judges
each pair from its light fields (LIGHT_FIELDS and a digest of the heavy ones), which is
enough for every count and every node's verdict; `compare_aligned` compares one pair in
full (the output's JSON diff, the context decisions) once its heavy fields are read — for
the pairs shown, and for those the light fields could not judge. `compare_runs` does both
for runs given whole.

A node run is matched by node id, round and attempt. The round is the node's n-th
occurrence in the run: each run of kind first, reused or edited opens one (a loop of a state
machine, or a person's retry of an escalated node, starts the node again), and the retries,
the fallback's attempt and a person's manual output belong to the round they follow. Two
runs of one round with the same attempt number (a skipped run is recorded with the number
of the attempt that failed) are told apart by their order.

Each pair lists the fields that differ. Duration and kind are shown and flagged but do not
make a pair differ: two runs never take the same milliseconds, and a re-run's reused copy
of an output is the same result obtained without running the node again. Nor do the tokens
of a pair where one side is such a copy (reused or edited): a copy was not run and spent
nothing, by design.

A pair also lists its tool calls side by side (`tool_call_differences`): matched by tool and
arguments, each with the same result, a different one, or in one run only. They are shown,
not counted: what a different result changed shows in the output and context decisions.

A copy keeps the attempt number of the run it copies (the run that decided how its round
went), so it pairs with that run; the attempts before it in the other run (a failure then
a retry) were not repeated by the re-run. They are listed, in one run only, but marked
`not_repeated`, and do not make their node differ.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any

from engine.replay import ROUND_STARTS as ROUND_KINDS  # the kinds of run that open a new round of their node

# A re-run's (or a trial's) copies of another run's outputs: not run, not billed.
COPY_KINDS = frozenset({"reused", "edited"})

# What aligning two runs reads of every node run besides its `node_id` (and a `digest` of
# its heavy fields, when the reader has one): a few numbers and short texts.
LIGHT_FIELDS = ("id", "kind", "attempt", "status", "error_code", "duration_ms", "tokens_in", "tokens_out",
                "agent", "agent_version")
# What only a full comparison reads: the output, the context decisions and the tool calls,
# of any size.
HEAVY_FIELDS = ("output", "context_record", "resolved_inputs", "resolution_failures", "tool_calls")
# A node run's fields each pair shows side by side (the budget bar reads `context_record`).
RUN_FIELDS = (*LIGHT_FIELDS, "output", "context_record")
# Of those, the ones compared: all but `id`, `attempt` (part of the key), `output` (diffed),
# and `context_record` (compared decision by decision below).
COMPARED_FIELDS = ("status", "error_code", "kind", "duration_ms", "tokens_in", "tokens_out", "agent", "agent_version")
# Shown and flagged, but not what makes a pair differ (see the module's docstring), and
# what is not when one side is a copy.
INCIDENTAL_FIELDS = frozenset({"kind", "duration_ms"})
INCIDENTAL_FOR_COPIES = INCIDENTAL_FIELDS | {"tokens_in", "tokens_out"}

# The context decisions compared, each by what identifies it in one run's record.
INPUT_FIELDS = ("transfer_mode", "reason", "resolved_tokens", "passed_tokens", "batches", "passed")
ACTION_FIELDS = ("original_tokens", "reduced_tokens", "reason", "stage")
FAILURE_FIELDS = ("error_code", "fallback_strategy", "fallback_value", "error_message")
# A failure's message may name a time or a host; the code and the fallback are the decision.
COMPARED_FAILURE_FIELDS = ("error_code", "fallback_strategy", "fallback_value")

# How a pair, or a node, compares: equal, different, or in one run only; or `unverified`:
# its light fields are the same and its heavy ones stored differently, and the caller did
# not compare them (a bound on what one answer reads; `align_runs` never says it itself).
VERDICTS = ("same", "differs", "only_a", "only_b", "unverified")
# The verdicts that make a node differ.
DIFFERING = frozenset({"differs", "only_a", "only_b"})

# What each side of a pair of tool calls shows: how the call went, and its result's digest
# (what says whether the two results are the same) and preview.
TOOL_CALL_FIELDS = ("id", "turn", "status", "error_code", "error", "duration_ms", "result_digest", "result_preview")
# How a pair of tool calls (one tool, the same arguments) compares.
TOOL_CALL_VERDICTS = ("same_result", "different_result", "only_a", "only_b")

# At most this many differences of one output are listed (`output_diff_truncated` says so):
# two large outputs that differ everywhere would otherwise make the answer as large as both.
MAX_OUTPUT_DIFFERENCES = 200


# -- JSON --------------------------------------------------------------------------------------


def same(a: Any, b: Any) -> bool:
    """JSON equality (see `_equal_leaves`), as deep as `json_diff` goes."""
    return next(json_diff(a, b), None) is None


def _equal_leaves(a: Any, b: Any) -> bool:
    """Two values that are not both objects or both arrays: true is not 1 (Python's == says
    it is), 1 and 1.0 are one number, and values of different types differ."""
    if _number(a) and _number(b):
        return bool(a == b)
    return type(a) is type(b) and a == b


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def pointer_token(key: str | int) -> str:
    """One reference token of an RFC 6901 JSON Pointer: "~" is written "~0", "/" is "~1"."""
    return str(key).replace("~", "~0").replace("/", "~1")


def json_diff(a: Any, b: Any) -> Iterator[dict[str, Any]]:
    """The differences between two JSON values, in document order: each
    {path (an RFC 6901 pointer), op (added | removed | changed), a, b}, with null for the side
    a member is missing from. Objects are compared member by member, arrays index by index
    (an element inserted at the front changes every index after it); anything else, or two
    values of different types, is one change at its path. Equal values give nothing.

    The walk keeps its own stack rather than recursing, so an output nested as deep as
    the JSON parser allows is diffed like any other."""
    work: list[tuple[str, Any, Any] | dict[str, Any]] = [("", a, b)]
    while work:
        item = work.pop()
        if isinstance(item, dict):  # a member found on one side only: already a difference
            yield item
            continue
        path, x, y = item
        steps: list[tuple[str, Any, Any] | dict[str, Any]] = []
        if isinstance(x, dict) and isinstance(y, dict):
            for key, value in x.items():
                member = f"{path}/{pointer_token(key)}"
                steps.append((member, value, y[key]) if key in y
                             else {"path": member, "op": "removed", "a": value, "b": None})
            steps += [{"path": f"{path}/{pointer_token(key)}", "op": "added", "a": None, "b": value}
                      for key, value in y.items() if key not in x]
        elif isinstance(x, list) and isinstance(y, list):
            steps += [(f"{path}/{index}", x[index], y[index]) for index in range(min(len(x), len(y)))]
            steps += [{"path": f"{path}/{index}", "op": "removed", "a": x[index], "b": None}
                      for index in range(len(y), len(x))]
            steps += [{"path": f"{path}/{index}", "op": "added", "a": None, "b": y[index]}
                      for index in range(len(x), len(y))]
        elif not _equal_leaves(x, y):
            yield {"path": path, "op": "changed", "a": x, "b": y}
        work.extend(reversed(steps))


# -- matching ------------------------------------------------------------------------------------


def _match(a_items: list[Any], b_items: list[Any], key: Callable[[Any], Hashable]) -> list[tuple[tuple[Any, ...], Any, Any]]:
    """Pair the items of two lists by `key` and, among items with one key, by their order:
    a's items in their order (with their partner or None), then b's items left over."""

    def keyed(items: list[Any]) -> dict[tuple[Any, ...], Any]:
        seen: dict[Hashable, int] = {}
        out = {}
        for item in items:
            k = key(item)
            seen[k] = seen.get(k, 0) + 1
            out[(k, seen[k])] = item
        return out

    a_keyed, b_keyed = keyed(a_items), keyed(b_items)
    pairs = [(k, item, b_keyed.get(k)) for k, item in a_keyed.items()]
    pairs += [(k, None, item) for k, item in b_keyed.items() if k not in a_keyed]
    return pairs


def _compare(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None, fields: tuple[str, ...],
             compared: tuple[str, ...] | None = None) -> dict[str, Any]:
    """One decision (or run) side by side: its `fields` from each side (None for a side it is
    missing from), which of the `compared` fields differ, and whether it differs at all."""
    compared = fields if compared is None else compared
    changed = [name for name in compared if a is not None and b is not None and not same(a.get(name), b.get(name))]
    return {"a": None if a is None else {name: a.get(name) for name in fields},
            "b": None if b is None else {name: b.get(name) for name in fields},
            "changed": changed, "differs": a is None or b is None or bool(changed)}


def _dicts(value: Any) -> list[dict[str, Any]]:
    """The dict entries of a stored list (a record written by an older version may hold others)."""
    return [entry for entry in value if isinstance(entry, dict)] if isinstance(value, list) else []


def _actions(run: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    record = (run or {}).get("context_record")
    resolution = record.get("resolution") if isinstance(record, dict) else None
    return _dicts(resolution.get("actions")) if isinstance(resolution, dict) else []


def context_differences(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> dict[str, list[dict[str, Any]]]:
    """The context decisions of two runs of one node, side by side (data-transfer-protocol
    §7.2): per input (by name), the transfer mode chosen and why, tokens resolved → passed,
    batches; the actions taken (trim, summarise, batch, compress, reference …, by input and
    action) with tokens before → after and the reason; the resolution failures (by input)
    with their code and fallback. Each entry says whether, and in which fields, it differs."""
    inputs = [{"name": k[0], **_compare(x, y, INPUT_FIELDS)}
              for k, x, y in _match(_dicts((a or {}).get("resolved_inputs")),
                                    _dicts((b or {}).get("resolved_inputs")), lambda entry: entry.get("name"))]
    actions = [{"data": k[0][0], "action": k[0][1], **_compare(x, y, ACTION_FIELDS)}
               for k, x, y in _match(_actions(a), _actions(b), lambda entry: (entry.get("data"), entry.get("action")))]
    failures = [{"input": k[0], **_compare(x, y, FAILURE_FIELDS, COMPARED_FAILURE_FIELDS)}
                for k, x, y in _match(_dicts((a or {}).get("resolution_failures")),
                                      _dicts((b or {}).get("resolution_failures")), lambda entry: entry.get("input"))]
    return {"inputs": inputs, "actions": actions, "failures": failures}


def _arguments_key(arguments: Any) -> str:
    """A call's arguments as one text whatever the order of their keys."""
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


def tool_call_differences(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The tool calls of two runs of one node, paired by tool and arguments (among calls
    with both the same, in the order they were made): each {name, arguments, a, b (the
    TOOL_CALL_FIELDS of each side's call, or None), verdict}. The verdict is `same_result`
    when both calls ended alike and their results have one digest (the same JSON text; for
    two failures, the same error; two calls still awaiting approval have none),
    `different_result` when not, or `only_a` / `only_b`.

    Shown beside the pair, not counted in its verdict: what a different result changed is
    in the output and the context decisions, which are."""
    def calls(run: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        return _dicts((run or {}).get("tool_calls"))

    paired = _match(calls(a), calls(b), lambda call: (call.get("name"), _arguments_key(call.get("arguments"))))
    entries = []
    for _, x, y in paired:
        either = x if x is not None else y  # _match never pairs None with None
        if x is None or y is None:
            verdict = "only_b" if x is None else "only_a"
        else:
            same_result = x.get("status") == y.get("status") and x.get("result_digest") == y.get("result_digest")
            verdict = "same_result" if same_result else "different_result"
        entries.append({"name": either.get("name"), "arguments": either.get("arguments"),
                        "a": None if x is None else {name: x.get(name) for name in TOOL_CALL_FIELDS},
                        "b": None if y is None else {name: y.get(name) for name in TOOL_CALL_FIELDS},
                        "verdict": verdict})
    return entries


def run_keys(runs: Sequence[Mapping[str, Any]]) -> list[tuple[str, int, int]]:
    """(node id, round, attempt) of each run, in order; see the module's docstring."""
    rounds: dict[str, int] = {}
    keys = []
    for run in runs:
        node_id = run["node_id"]
        if run.get("kind") in ROUND_KINDS or node_id not in rounds:
            rounds[node_id] = rounds.get(node_id, 0) + 1
        keys.append((node_id, rounds[node_id], run.get("attempt") or 1))
    return keys


# -- two runs ------------------------------------------------------------------------------------


def compare_pair(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> dict[str, Any]:
    """Two runs of one node, one round and attempt (either may be None: it is in one run only)."""
    pair = _compare(a, b, RUN_FIELDS, COMPARED_FIELDS)
    if a is not None and b is not None:
        differences = list(islice(json_diff(a.get("output"), b.get("output")), MAX_OUTPUT_DIFFERENCES + 1))
    else:
        differences = []
    context = context_differences(a, b)
    pair["output_diff"] = differences[:MAX_OUTPUT_DIFFERENCES]
    pair["output_diff_truncated"] = len(differences) > MAX_OUTPUT_DIFFERENCES
    pair.update(context)
    pair["differs"] = (a is None or b is None or bool(differences) or _light_difference(a, b, pair["changed"])
                       or any(entry["differs"] for entries in context.values() for entry in entries))
    pair["tool_calls"] = tool_call_differences(a, b)
    return pair


def _light_difference(a: Mapping[str, Any], b: Mapping[str, Any], changed: list[str]) -> bool:
    """Whether a changed light field makes the pair differ (see the module's docstring)."""
    if not changed:
        return False
    copy = a.get("kind") in COPY_KINDS or b.get("kind") in COPY_KINDS
    incidental = INCIDENTAL_FOR_COPIES if copy else INCIDENTAL_FIELDS
    return any(name not in incidental for name in changed)


def _changed_light_fields(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """`_compare`'s `changed` for the light fields, which hold numbers, text or None (never
    an object or array), as it runs for every pair: two values of one type that are equal
    are the same leaf, and only the others need `_equal_leaves` (1 and 1.0)."""
    changed = []
    for name in COMPARED_FIELDS:
        x, y = a.get(name), b.get(name)
        if x is not y and not (type(x) is type(y) and x == y) and not _equal_leaves(x, y):
            changed.append(name)
    return changed


def align_runs(a_runs: Sequence[Mapping[str, Any]], b_runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Two runs' node runs (dicts with `node_id`, `kind`, `attempt` and the other LIGHT_FIELDS,
    in the order they were made) aligned, and each pair judged on those fields alone:

    1. each run's node runs are keyed by (node id, round, attempt) and paired by key
       (`_keyed`: a second run with one key pairs with the other side's second);
    2. the pairs are put in order: by node (nodes in the order they first ran in a, then
       those only b ran), by round and attempt within a node;
    3. a pair in one run only whose round the other run copied (its node run there is a
       reused or edited copy) is marked `not_repeated`: the copy stands for the round;
    4. each pair gets the light fields that differ (`changed`) and, where they tell, its
       verdict: `only_a` / `only_b`, `differs` when a field that counts differs (see the
       module's docstring), `same` when none does and both runs' `digest`s are equal. The
       digest stands for the heavy fields compared (output, resolved inputs, resolution
       failures, context actions): equal digests mean equal values. Else the verdict is None:
       only the heavy fields can tell (`compare_aligned`), since texts that differ may hold
       equal values (1 and 1.0, keys in another order) or differ only where nothing is
       compared (a failure's message).

    Each pair is {index (its place in this order), node_id, round, attempt, a, b (the runs as
    given, or None), not_repeated, changed, verdict}. The cost is a few steps per node run,
    whatever the size of its output or record."""
    a_keyed, b_keyed = _keyed(a_runs), _keyed(b_runs)
    order: dict[str, int] = {}
    for node_id, *_ in (*a_keyed, *b_keyed):
        order.setdefault(node_id, len(order))
    keys = [*a_keyed, *(key for key in b_keyed if key not in a_keyed)]
    keys.sort(key=lambda key: (order[key[0]], *key[1:]))
    copied = {side: {key[:2] for key, run in keyed.items() if run.get("kind") in COPY_KINDS}
              for side, keyed in (("a", a_keyed), ("b", b_keyed))}
    pairs = []
    for index, key in enumerate(keys):
        node_id, round_, attempt, _ = key
        a, b = a_keyed.get(key), b_keyed.get(key)
        verdict: str | None
        if a is None or b is None:
            changed, verdict = [], "only_b" if a is None else "only_a"
            not_repeated = (node_id, round_) in copied["a" if a is None else "b"]
        else:
            changed = _changed_light_fields(a, b)
            verdict, not_repeated = _light_verdict(a, b, changed), False
        pairs.append({"index": index, "node_id": node_id, "round": round_, "attempt": attempt, "a": a, "b": b,
                      "not_repeated": not_repeated, "changed": changed, "verdict": verdict})
    return pairs


def _keyed(runs: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int, int, int], Mapping[str, Any]]:
    """Each run by (node id, round, attempt, n): the n-th run of the run's key (`run_keys`)."""
    seen: dict[tuple[str, int, int], int] = {}
    keyed = {}
    for key, run in zip(run_keys(runs), runs, strict=True):
        n = seen[key] = seen.get(key, 0) + 1
        keyed[(*key, n)] = run
    return keyed


def _light_verdict(a: Mapping[str, Any], b: Mapping[str, Any], changed: list[str]) -> str | None:
    if _light_difference(a, b, changed):
        return "differs"
    digest = a.get("digest")
    return "same" if digest is not None and digest == b.get("digest") else None


def compare_aligned(pair: Mapping[str, Any], a_heavy: Mapping[str, Any] | None = None, b_heavy: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A pair of `align_runs` compared in full (`compare_pair`), its runs' heavy fields given
    apart (or already in the runs): {index, node_id, round, attempt, verdict, not_repeated}
    and `compare_pair`'s answer. A verdict `align_runs` left open is settled here; one it
    gave is kept (the full comparison agrees with it: the tests hold it to that), as is an
    `unverified` the caller put there (see `VERDICTS`)."""
    a = None if pair["a"] is None else {**pair["a"], **(a_heavy or {})}
    b = None if pair["b"] is None else {**pair["b"], **(b_heavy or {})}
    compared = compare_pair(a, b)
    verdict = pair["verdict"] or _verdict(a is not None, b is not None, compared["differs"])
    return {"index": pair["index"], "node_id": pair["node_id"], "round": pair["round"], "attempt": pair["attempt"],
            "verdict": verdict, "not_repeated": pair["not_repeated"], **compared}


def settled_verdict(pair: Mapping[str, Any], a_heavy: Mapping[str, Any] | None, b_heavy: Mapping[str, Any] | None) -> str:
    """The verdict of a pair `align_runs` left open, from its runs' heavy fields."""
    verdict: str = compare_aligned(pair, a_heavy, b_heavy)["verdict"]
    return verdict


def summarise(pairs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Each node's verdict, from its pairs' (in `align_runs`'s order): `only_a` / `only_b` when
    one run never ran it, else `differs` when any of its pairs differs or is in one run only
    (a round only one run reached), leaving out the pairs not repeated, else `unverified`
    when any pair is, else `same`. Each node says how many pairs it has and which one to
    open first: its first that differs (not counting those not repeated), else its first
    unverified, else its last (the outcome). Returns {nodes, counts}: the counts of pairs
    and of nodes by verdict."""
    by_node: dict[str, list[Mapping[str, Any]]] = {}
    for pair in pairs:
        by_node.setdefault(pair["node_id"], []).append(pair)
    nodes = []
    for node_id, mine in by_node.items():
        in_a = any(pair["a"] is not None for pair in mine)
        in_b = any(pair["b"] is not None for pair in mine)
        counted = [pair for pair in mine if not pair["not_repeated"]]
        differing = next((pair for pair in counted if pair["verdict"] in DIFFERING), None)
        unverified = next((pair for pair in counted if pair["verdict"] == "unverified"), None)
        verdict = _verdict(in_a, in_b, differing is not None)
        if verdict == "same" and unverified is not None:
            verdict = "unverified"
        nodes.append({"node_id": node_id, "verdict": verdict, "pairs": len(mine),
                      "open": (differing or unverified or mine[-1])["index"]})
    return {"nodes": nodes, "counts": {"pairs": _count(pairs), "nodes": _count(nodes)}}


def compare_runs(a_runs: list[Mapping[str, Any]], b_runs: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Two runs' node runs compared in full, each a dict with the LIGHT_FIELDS and the
    HEAVY_FIELDS, in the order they were made: `align_runs`, then every pair compared
    (`compare_aligned`: its fields, its output's JSON diff, its context decisions), then
    `summarise`. Returns {pairs, nodes, counts}.

    This reads every heavy field: for runs too large to compare whole at once, the Django
    side aligns on the light fields and compares in full only the pairs it shows."""
    pairs = [compare_aligned(pair) for pair in align_runs(a_runs, b_runs)]
    return {"pairs": pairs, **summarise(pairs)}


def _verdict(in_a: bool, in_b: bool, differs: bool) -> str:
    if not in_b:
        return "only_a"
    if not in_a:
        return "only_b"
    return "differs" if differs else "same"


def _count(entries: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(VERDICTS, 0)
    for entry in entries:
        counts[entry["verdict"]] += 1
    return counts
