"""Reading a run's outputs and inputs for one node run: which outputs it needs, the latest of
each, and its named inputs (JSONPaths over the run, or constants).

Every node kind reads through these (executions/node_kinds/), the context preview does
(executions/preview.py), and so does the advance that decides what runs next.
"""
from __future__ import annotations

import operator
import re
from functools import reduce
from typing import Any

from django.db.models import Q, Subquery

from engine.context.resolution import Resolver, Sources
from engine.dataflow import RESERVED_INPUTS
from engine.scheduling import Plan
from executions.models import NodeRun
from workflows.models import Node

NODE_PATH = re.compile(r"^\$\.nodes\.([A-Za-z0-9][A-Za-z0-9_:\-]*)(?:[.\[]|$)")


def needed_outputs(node: Node, plan: Plan) -> set[str] | None:
    """The nodes whose outputs this node reads (None: it may read any, via `$.nodes`)."""
    needed = {ref["task_id"] for ref in node.input_mapping.get("data_references", []) if ref["ref_type"] == "task_output"}
    if node.compress:
        needed.update(plan.dependencies(node.node_id))
    for name, value in node.input_mapping.items():
        if name not in RESERVED_INPUTS and isinstance(value, str) and value.startswith("$.nodes"):
            match = NODE_PATH.match(value)
            if not match:
                return None
            needed.add(match.group(1))
    return needed


def latest_outputs(execution, node_ids: set[str] | None = None) -> dict[str, Any]:
    """The latest successful output of each node (of those asked for) in this run. Asked
    for by name, each node's is found from its last run backwards (an index of its runs by
    sequence), in one statement, however many runs the node has had."""
    if node_ids is not None and not node_ids:
        return {}
    runs = execution.node_runs.filter(status="success")
    if node_ids is not None:
        latest = [Subquery(runs.filter(node_id=node_id).order_by("-sequence", "-id").values("pk")[:1])
                  for node_id in sorted(node_ids)]
        return dict(NodeRun.objects.filter(reduce(operator.or_, (Q(pk=run) for run in latest)))
                    .order_by("sequence", "id").values_list("node_id", "output"))
    outputs = {}
    for node_id, output in runs.order_by("sequence", "id").values_list("node_id", "output"):
        outputs[node_id] = output
    return outputs


def run_scope(execution, node: Node, plan: Plan) -> dict[str, Any]:
    """What a node's JSONPaths read of its run: the run's input and state, and the latest
    outputs of the nodes it reads (`$.input…`, `$.state…`, `$.nodes.<id>…`)."""
    return {"input": execution.input, "state": execution.state,
            "nodes": latest_outputs(execution, needed_outputs(node, plan))}


def named_inputs(node: Node, scope: dict) -> tuple[list[dict], list[dict]]:
    """input_mapping's other keys: a JSONPath over the run (`$.input…`, `$.state…`,
    `$.nodes.<id>…`) or a constant, passed as an inline item under its name; and the
    resolution failure of each path that selects nothing (the run has no such input, or
    not yet: state before the first review), which is left out."""
    items, failures = [], []
    resolver = Resolver(Sources())
    for name, value in node.input_mapping.items():
        if name in RESERVED_INPUTS:
            continue
        if isinstance(value, str) and value.startswith("$"):
            resolved = resolver.resolve_named(name, value, scope)
            failures += [failure.as_dict() for failure in resolved.failures]
            if resolved.skipped:
                continue
            value = resolved.data
        if value is not None:
            items.append({"name": name, "content": value, "priority": 1})
    return items, failures
