"""Where a workflow's data flows, and the warnings where it flows nowhere.

Pure: it reads a shape-checked §4.1 document and returns warnings as plain dicts
`{where, node, transition, code, message}`, the shape of validation's problems. A warning
does not refuse a save (validation.py's problems do): the workflow runs, but something in it
is probably not what its author meant.

A node reads another node's output when
- one of its named inputs is a JSONPath over `$.nodes.<id>` (a path over `$.nodes` that
  names no single node reads them all), or a `task_output` data reference names it;
- it compresses its dependencies' outputs (`compress`), which reads the nodes it depends on;
- it reads a key of the run's state (`$.state.<key>`, or all of it) that the other node's
  `output_mapping` sets;
- (the node's own output) a condition of a transition from it reads `output…` or a `$` path.

The warnings:
- OUTPUT_UNREAD: a node whose output nothing reads, sets no state key, and is not a last
  node. A last node's output is the run's result (and a child run's output: its last
  nodes'): in a seq the last of the list, in a par every node, in a dag a node nothing
  depends on, in a state machine a node the run may end at (no transition from it, one
  whose on_success is `end`, or only transitions with a condition, none of which may hold).
- EDGE_UNUSED: a transition of a seq or a dag whose target reads nothing of its source.
  There a transition only makes its target wait; in a state machine it chooses the next
  node, which is its purpose whatever data passes.

A gate (engine/gates.py) is left out of both as a source: what follows it waits for a
person's decision, which is its purpose whatever data passes.
- READ_NOT_AWAITED: a named input over `$.nodes.<id>` of a node that does not wait for that
  node, so that it may run first and find nothing there: in a dag, `<id>` is not upstream
  of it (no chain of transitions or task_output references leads from there); in a seq,
  `<id>` comes after it; in a par, every node runs at once. (A task_output reference is a
  dependency itself, and one no topology can honour is validation's ORDER problem.)
"""
from __future__ import annotations

import re
from typing import Any

from engine.conditions import ConditionError, parse_condition

OUTPUT_UNREAD = "OUTPUT_UNREAD"
EDGE_UNUSED = "EDGE_UNUSED"
READ_NOT_AWAITED = "READ_NOT_AWAITED"
RESERVED_INPUTS = ("data_references", "transfer_config")

ALL = "*"  # a path that reads every node's output, or the whole state
# `$.nodes.<id>…` or `$.nodes['<id>']…`: the node a path reads; `$.state…` likewise a key.
_NODE_PATH = re.compile(r"^\$\.nodes(?:\.([A-Za-z0-9][A-Za-z0-9_:\-]*)|\[['\"]([^'\"]+)['\"]\])?(?=[.\[]|$)")
_STATE_PATH = re.compile(r"^\$\.state(?:\.([A-Za-z_][A-Za-z0-9_]*)|\[['\"]([^'\"]+)['\"]\])?(?=[.\[]|$)")


def _named(pattern: re.Pattern[str], path: str) -> str | None:
    """What `path` reads by `pattern`: a name, ALL, or None (it reads nothing of that kind)."""
    match = pattern.match(path)
    if not match:
        return None
    return match.group(1) or match.group(2) or ALL


def _paths(node: dict[str, Any]) -> list[str]:
    inputs = node.get("input_mapping") or {}
    return [value for key, value in inputs.items() if key not in RESERVED_INPUTS and isinstance(value, str)]


def node_read(path: str) -> str | None:
    """The node whose output a JSONPath reads (`$.nodes.<id>…`), ALL for every node's, or None."""
    return _named(_NODE_PATH, path)


def outputs_read(node: dict[str, Any]) -> set[str]:
    """The nodes whose outputs `node` reads by its named inputs and task_output references
    (ALL among them: every node's)."""
    read = {name for path in _paths(node) if (name := node_read(path))}
    for reference in (node.get("input_mapping") or {}).get("data_references") or []:
        if isinstance(reference, dict) and reference.get("ref_type") == "task_output":
            read.add(reference["task_id"])
    read.discard(node["id"])
    return read


def state_read(node: dict[str, Any]) -> set[str]:
    """The state keys `node` reads (ALL: the whole state)."""
    return {name for path in _paths(node) if (name := _named(_STATE_PATH, path))}


def _condition_reads_output(condition: str) -> bool:
    try:
        paths = parse_condition(condition).paths()
    except ConditionError:
        return False  # validation reports it
    return any(path.startswith(("output", "$")) for path in paths)


def dependencies(document: dict[str, Any]) -> dict[str, list[str]]:
    """Each node's upstream nodes as the topology runs them: the one before it in a seq,
    none in a par, its transitions' sources and task_output references in a dag or a
    state machine."""
    nodes = document["nodes"]
    ids = [node["id"] for node in nodes]
    found: dict[str, list[str]] = {node_id: [] for node_id in ids}
    topology = document["topology"]
    if topology == "seq":
        for before, after in zip(ids, ids[1:], strict=False):
            found[after].append(before)
        return found
    if topology == "par":
        return found
    for transition in document.get("transitions", []):
        if transition["to"] in found and transition["from"] != transition["to"]:
            found[transition["to"]].append(transition["from"])
    for node in nodes:
        for reference in (node.get("input_mapping") or {}).get("data_references") or []:
            if isinstance(reference, dict) and reference.get("ref_type") == "task_output":
                found[node["id"]].append(reference["task_id"])
    return {node_id: list(dict.fromkeys(upstream)) for node_id, upstream in found.items()}


def reads_from(reader: dict[str, Any], source: dict[str, Any], depends_on: list[str]) -> bool:
    """Whether `reader` reads anything of `source`'s output: directly, by compressing its
    dependencies (among them `source`), or through a state key `source` sets."""
    read = outputs_read(reader)
    if ALL in read or source["id"] in read:
        return True
    if reader.get("compress") and source["id"] in depends_on:
        return True
    keys = state_read(reader)
    written = set(source.get("output_mapping") or {})
    return bool(written and (ALL in keys or keys & written))


def last_nodes(document: dict[str, Any]) -> set[str]:
    """The nodes whose output may be the run's result (see the module's docstring)."""
    ids = [node["id"] for node in document["nodes"]]
    topology = document["topology"]
    if topology == "seq":
        return set(ids[-1:])
    if topology == "par":
        return set(ids)
    transitions = document.get("transitions", [])
    if topology == "dag":
        upstream = {source for upstream in dependencies(document).values() for source in upstream}
        return {node_id for node_id in ids if node_id not in upstream}
    last = set()
    for node_id in ids:
        leaving = [t for t in transitions if t["from"] == node_id]
        if (not leaving or any(t.get("on_success") == "end" for t in leaving)
                or all(t.get("condition") for t in leaving)):
            last.add(node_id)
    return last


def upstream_of(node_id: str, depends: dict[str, list[str]]) -> set[str]:
    """Every node done before `node_id` runs: its dependencies, theirs, and so on."""
    seen: set[str] = set()
    todo = list(depends.get(node_id, []))
    while todo:
        upstream = todo.pop()
        if upstream not in seen:
            seen.add(upstream)
            todo.extend(depends.get(upstream, []))
    return seen


def _not_awaited(document: dict[str, Any], depends: dict[str, list[str]]) -> list[dict[str, Any]]:
    topology = document["topology"]
    if topology == "state_machine":
        return []  # what ran before a node depends on the path the run took
    ids = [node["id"] for node in document["nodes"]]
    warnings = []
    for position, node in enumerate(document["nodes"]):
        node_id = node["id"]
        for name, value in (node.get("input_mapping") or {}).items():
            source = _named(_NODE_PATH, value) if name not in RESERVED_INPUTS and isinstance(value, str) else None
            if source in (None, ALL, node_id) or source not in ids:
                continue
            if topology == "dag" and source not in upstream_of(node_id, depends):
                why = f"it does not wait for '{source}' (connect {source} → {node_id})"
            elif topology == "seq" and ids.index(source) > position:
                why = f"'{source}' comes after it in the sequence"
            elif topology == "par":
                why = "par nodes all run at once (use a dag)"
            else:
                continue
            warnings.append({
                "where": f"nodes[{node_id}].input_mapping.{name}", "node": node_id, "transition": None,
                "code": READ_NOT_AWAITED,
                "message": f"input '{name}' reads $.nodes.{source}, but {why}: it may run first and find nothing there",
            })
    return warnings


def dataflow_warnings(document: dict[str, Any]) -> list[dict[str, Any]]:
    """OUTPUT_UNREAD for each node, READ_NOT_AWAITED for each input, then EDGE_UNUSED for
    each transition, in document order."""
    nodes = document["nodes"]
    by_id = {node["id"]: node for node in nodes}
    depends = dependencies(document)
    transitions = document.get("transitions", [])
    warnings: list[dict[str, Any]] = []

    last = last_nodes(document)
    read_somewhere: set[str] = set().union(*(outputs_read(node) for node in nodes))
    judged = {t["from"] for t in transitions if t.get("condition") and _condition_reads_output(t["condition"])}
    for node in nodes:
        node_id = node["id"]
        if node.get("gate") or node_id in last or node_id in judged or node_id in read_somewhere or ALL in read_somewhere:
            continue
        if node.get("output_mapping"):
            continue  # it sets state keys: the run's state is part of its result
        if any(node_id in depends[other["id"]] for other in nodes if other.get("compress")):
            continue
        warnings.append({
            "where": f"nodes[{node_id}]", "node": node_id, "transition": None, "code": OUTPUT_UNREAD,
            "message": f"nothing reads the output of '{node_id}': no node reads $.nodes.{node_id} or has a "
                       "task_output reference to it, it sets no state key (output mapping), and it is not a last "
                       "node, whose output is the run's result",
        })

    warnings.extend(_not_awaited(document, depends))
    if document["topology"] in ("seq", "dag"):
        for index, transition in enumerate(transitions):
            source, target = by_id.get(transition["from"]), by_id.get(transition["to"])
            if source is None or target is None or source is target:
                continue  # dangling or a loop: validation says so
            if source.get("gate"):
                continue
            if reads_from(target, source, depends[target["id"]]):
                continue
            warnings.append({
                "where": f"transitions[{index}]", "node": None, "transition": index, "code": EDGE_UNUSED,
                "message": f"({source['id']} → {target['id']}) passes nothing: '{target['id']}' waits for "
                           f"'{source['id']}' but reads none of its output; read it in an input of "
                           f"'{target['id']}' ($.nodes.{source['id']}) or a task_output reference",
            })
    return warnings
