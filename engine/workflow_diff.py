"""Two versions of a workflow compared: which nodes, transitions and settings differ, for the
versions section of a workflow's page to list and draw on the graph, and the JSON diff of the
two §4.1 documents (`comparison.json_diff`) for everything at once.

Nodes are matched by id. Transitions are matched by their ends (from → to) and, when one pair
of nodes has several transitions, by their order among that pair's: the first a→b of one
version against the first a→b of the other, and so on."""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from .comparison import json_diff

SETTINGS = ("name", "topology", "error_handling", "limits", "domain", "evaluation")
TRANSITION_FIELDS = ("condition", "on_success", "on_failure")


def workflow_diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The differences from document `a` to document `b`:

    - nodes: {added, removed: [node ids], changed: [{id, fields: [field names]}]}
    - transitions: {added, removed: [transitions], changed: [{from, to, index, fields, a, b}]},
      each added or removed one with its `index` among its pair's
    - settings: [{name, a, b}] for each top-level setting that differs
    - json: the `json_diff` of the whole documents (RFC 6901 pointers)
    - same: nothing differs."""
    nodes_a = {node["id"]: node for node in a.get("nodes", [])}
    nodes_b = {node["id"]: node for node in b.get("nodes", [])}
    changed_nodes = []
    for node_id in nodes_a.keys() & nodes_b.keys():
        fields = _changed_fields(nodes_a[node_id], nodes_b[node_id])
        if fields:
            changed_nodes.append({"id": node_id, "fields": fields})
    order = {node_id: index for index, node_id in enumerate([*nodes_b, *nodes_a])}
    changed_nodes.sort(key=lambda change: order[change["id"]])

    transitions_a, transitions_b = _by_ends(a.get("transitions", [])), _by_ends(b.get("transitions", []))
    added, removed, changed = [], [], []
    for key in [*transitions_a, *(key for key in transitions_b if key not in transitions_a)]:
        olds, news = transitions_a.get(key, []), transitions_b.get(key, [])
        for index in range(max(len(olds), len(news))):
            old = olds[index] if index < len(olds) else None
            new = news[index] if index < len(news) else None
            if old is None:
                assert new is not None  # one side has the transition at `index`
                added.append({**new, "index": index})
            elif new is None:
                removed.append({**old, "index": index})
            else:
                fields = [field for field in TRANSITION_FIELDS if old.get(field) != new.get(field)]
                if fields:
                    changed.append({"from": key[0], "to": key[1], "index": index, "fields": fields, "a": old, "b": new})

    settings = [{"name": name, "a": a.get(name), "b": b.get(name)} for name in SETTINGS if a.get(name) != b.get(name)]
    result: dict[str, Any] = {
        "nodes": {"added": [node_id for node_id in nodes_b if node_id not in nodes_a],
                  "removed": [node_id for node_id in nodes_a if node_id not in nodes_b],
                  "changed": changed_nodes},
        "transitions": {"added": added, "removed": removed, "changed": changed},
        "settings": settings,
        "json": list(json_diff(a, b)),
    }
    result["same"] = not result["json"]
    return result


def _changed_fields(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The fields of a node that differ, in the order the document writes them."""
    names = [*a, *(name for name in b if name not in a)]
    return [name for name in names if name != "id" and a.get(name) != b.get(name)]


def _by_ends(transitions: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for transition in transitions:
        grouped[(transition["from"], transition["to"])].append(transition)
    return grouped
