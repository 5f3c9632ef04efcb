"""Sub-workflow nodes: a node that runs another workflow as a child run.

A sub-workflow node is a node of any topology with a `subworkflow` object beside the seed's
fields:

    "subworkflow": {
      "workflow_ref": "paper_digest",     the workflow the child run runs
      "version": 3                        optional: that version; left out, its latest when the child starts
    }

Its `agent_ref` names the agent on record for the node (it is never called). The child's
input is the node's named inputs (`input_mapping` JSONPaths over the parent run, as for any
node); the node's output is `{"state": the child's final state, "nodes": the outputs of its
last nodes}`, which the node's `output_mapping` reads like any output. The child fails, the
node fails with the child's reason; the parent ends, the child is cancelled.

A workflow that would run itself, directly or through others, is refused at validation
naming the cycle (`subworkflow_problems`). This module is pure: the services
(executions/services/subworkflows.py) start the child and settle the node when it ends.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

# What a stored workflow's sub-workflow nodes run: (workflow_ref, version or None for the
# latest) for each, or None when that workflow (or that version of it) does not exist.
References = Callable[[str, int | None], list[tuple[str, int | None]] | None]

FAILED, TOO_DEEP, GONE = "SUBWORKFLOW_FAILED", "SUBWORKFLOW_TOO_DEEP", "SUBWORKFLOW_UNAVAILABLE"
INPUT_REFUSED = "SUBWORKFLOW_INPUT_REFUSED"  # the child's workflow refused the input the node gave it


def refs_of(nodes: Iterable[dict[str, Any]]) -> list[tuple[str, int | None]]:
    """The workflows a document's sub-workflow nodes run, each as (workflow_ref, version)."""
    return [(node["subworkflow"]["workflow_ref"], node["subworkflow"].get("version"))
            for node in nodes if node.get("subworkflow")]


def subworkflow_problems(node: dict[str, Any], *, workflow_id: str,
                         references: References | None) -> list[tuple[str, str, str]]:
    """(where, code, message) for what a node's `subworkflow` asks that a run could not do.
    `references` looks up the stored workflows (None: only the node itself is checked)."""
    child = node.get("subworkflow")
    if child is None:
        return []
    base = f"nodes[{node['id']}]"
    problems = []
    if node.get("gate") is not None:
        problems.append((f"{base}.subworkflow", "NODE_KIND_CONFLICT",
                         "a node is a gate or runs a workflow, not both"))
    if (node.get("input_mapping") or {}).get("data_references"):
        problems.append((f"{base}.input_mapping.data_references", "SUBWORKFLOW_INPUT",
                         "a sub-workflow node gives its child run its named inputs (JSONPaths over the run) as "
                         "the child's input; it reads no data references"))
    if references is None:
        return problems
    ref, version = child["workflow_ref"], child.get("version")
    if ref != workflow_id and references(ref, version) is None:
        what = f"workflow '{ref}'" if version is None else f"version {version} of workflow '{ref}'"
        problems.append((f"{base}.subworkflow.workflow_ref", "UNKNOWN_WORKFLOW", f"{what} does not exist"))
        return problems
    cycle = cycle_through(workflow_id, ref, version, references)
    if cycle:
        problems.append((f"{base}.subworkflow.workflow_ref", "SUBWORKFLOW_CYCLE",
                         f"the workflow would run itself: {' → '.join(cycle)}"))
    return problems


def cycle_through(workflow_id: str, ref: str, version: int | None, references: References) -> list[str] | None:
    """The chain of workflows by which running `ref` (at `version`) from `workflow_id` would
    run `workflow_id` again, e.g. ["a", "b", "a"]; None when it never would. Depth-first over
    the stored workflows, each (workflow, version) visited once."""
    seen: set[tuple[str, int | None]] = set()
    stack: list[tuple[tuple[str, int | None], list[str]]] = [((ref, version), [workflow_id, ref])]
    while stack:
        (current, pinned), path = stack.pop()
        if current == workflow_id:
            return path
        if (current, pinned) in seen:
            continue
        seen.add((current, pinned))
        for following in references(current, pinned) or []:
            stack.append((following, path + [following[0]]))
    return None
