"""Workflow validation: every problem in a workflow document, each naming its node or transition.

Pure: it reads a shape-checked §4.1 document and the set of agent ids that exist, and
returns problems as plain dicts `{where, node, transition, code, message}`. Saving,
importing and the API all call `validate_workflow`; nothing invalid is ever stored. What
is allowed but probably not meant (an edge that passes no data) is a warning of
engine/dataflow.py, which never refuses a save.

Transition semantics that the checks follow (also in workflows/README.md):
- `to` is the node the transition leads to when `from` succeeded and `condition` holds;
- `on_success` is `continue` (go to `to`, the default), `end`, or a node id;
- `on_failure` is `escalate` (the workflow's error handling, the default), `abort`,
  `skip`, or a node id to go to when `from` failed after its retries and fallback.
A `condition`, an `on_success` other than `continue` and an `on_failure` naming a node
choose the next node, which only a state machine does: elsewhere they are refused
(TRANSITION_UNHONOURED, decided by the engine's `unhonoured`), never ignored.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine.conditions import ConditionError, parse_condition
from engine.dataflow import ALL, RESERVED_INPUTS, node_read
from engine.gates import gate_problems
from engine.jsonpath import PathError, compile_path
from engine.scheduling import unhonoured
from engine.subworkflows import References, subworkflow_problems

SUCCESS_ACTIONS = {"continue", "end"}
FAILURE_ACTIONS = {"escalate", "abort", "skip"}


class _Problems(list[Any]):
    def add(self, where: str, code: str, message: str, *, node: str | None = None, transition: int | None = None) -> None:
        self.append({"where": where, "node": node, "transition": transition, "code": code, "message": message})


def validate_workflow(document: dict[str, Any], known_agents: Iterable[str],
                      workflows: References | None = None) -> list[dict[str, Any]]:
    """Every problem of the document. `workflows` looks up the stored workflows that its
    sub-workflow nodes run (engine/subworkflows.py); None checks those nodes alone."""
    agents = set(known_agents)
    problems = _Problems()
    nodes = document["nodes"]
    node_ids = [node["id"] for node in nodes]
    known_nodes = set(node_ids)
    topology = document["topology"]

    seen: set[str] = set()
    for node in nodes:
        where = f"nodes[{node['id']}]"
        if node["id"] in seen:
            problems.add(where, "DUPLICATE_NODE", f"node id '{node['id']}' is used more than once", node=node["id"])
        seen.add(node["id"])
        if node["agent_ref"] not in agents:
            problems.add(f"{where}.agent_ref", "UNKNOWN_AGENT", f"agent '{node['agent_ref']}' does not exist", node=node["id"])
        _check_mappings(node, known_nodes, problems)
        for at, code, message in gate_problems(node, escalate_to=document.get("error_handling", {}).get("escalate_to")):
            problems.add(at, code, message, node=node["id"])
        for at, code, message in subworkflow_problems(node, workflow_id=document.get("workflow_id", ""),
                                                      references=workflows):
            problems.add(at, code, message, node=node["id"])

    for index, transition in enumerate(document.get("transitions", [])):
        _check_transition(index, transition, known_nodes, problems)
    reported = {problem["where"] for problem in problems}  # one problem per field
    problems.extend(p for p in transition_problems(topology, document.get("transitions", []))
                    if p["where"] not in reported)

    handling = document.get("error_handling", {})
    for key in ("fallback_agent", "escalate_to"):
        agent_id = handling.get(key)
        if agent_id is not None and agent_id not in agents:
            problems.add(f"error_handling.{key}", "UNKNOWN_AGENT", f"agent '{agent_id}' does not exist")
    if document.get("limits", {}).get("on_budget") == "escalate" and not handling.get("escalate_to"):
        problems.add("limits.on_budget", "BUDGET_ESCALATES_TO_NOBODY",
                     "on_budget escalate needs the workflow's error_handling.escalate_to")
    judge = document.get("evaluation", {}).get("judge_agent")
    if judge is not None and judge not in agents:
        problems.add("evaluation.judge_agent", "UNKNOWN_AGENT", f"agent '{judge}' does not exist")

    edges = dependency_edges(document)
    if topology == "dag":
        cycle = find_cycle(node_ids, edges)
        if cycle:
            _add_cycle(cycle, document, problems)
    elif topology == "seq":
        order = {node_id: position for position, node_id in enumerate(node_ids)}
        for source, target in edges:
            if source in order and target in order and order[source] >= order[target]:
                problems.add(
                    f"nodes[{target}]", "ORDER",
                    f"depends on '{source}', which comes at or after it in the sequence", node=target,
                )
    elif topology == "par":
        for source, target in edges:
            problems.add(
                f"nodes[{target}]", "ORDER",
                f"depends on '{source}', but par nodes all run at once (use a dag)", node=target,
            )
    elif topology == "state_machine" and node_ids:
        reachable = _reachable(node_ids[0], document.get("transitions", []), known_nodes)
        for node_id in node_ids:
            if node_id not in reachable:
                problems.add(
                    f"nodes[{node_id}]", "UNREACHABLE",
                    f"no transition leads here from the start node '{node_ids[0]}'", node=node_id,
                )
    return problems


def _add_cycle(cycle: list[str], document: dict[str, Any], problems: _Problems) -> None:
    """The cycle's problem on the transition that closes it: of the transitions along the
    cycle, the last in the document (the one most recently drawn). A cycle made of task_output
    references alone is put on the reference of the node that reads."""
    steps = list(zip(cycle, cycle[1:], strict=False))
    transitions = document.get("transitions", [])
    closing = max((index for index, t in enumerate(transitions) if (t["from"], t["to"]) in steps), default=None)
    if closing is None:
        source, target = steps[-1]
        problems.add(f"nodes[{target}].input_mapping.data_references", "CYCLE",
                     f"reading '{source}' closes a cycle in the dag: {' → '.join(cycle)}", node=target)
        return
    source, target = transitions[closing]["from"], transitions[closing]["to"]
    start = [step[0] for step in steps].index(target)  # the cycle told from the transition's target
    loop = [step[0] for step in steps[start:] + steps[:start]] + [target]
    problems.add(f"transitions[{closing}]", "CYCLE",
                 f"({source} → {target}) closes a cycle in the dag: {' → '.join(loop)}", transition=closing)


def _check_path(expression: Any, where: str, node: str, problems: _Problems) -> None:
    try:
        compile_path(expression)
    except PathError as error:
        problems.add(where, "REF_PATH_INVALID", str(error), node=node)


def _check_mappings(node: dict[str, Any], known_nodes: set[str], problems: _Problems) -> None:
    node_id = node["id"]
    base = f"nodes[{node_id}]"
    inputs = node.get("input_mapping", {})
    for index, reference in enumerate(inputs.get("data_references", [])):
        where = f"{base}.input_mapping.data_references[{index}]"
        if reference["ref_type"] != "task_output":
            continue
        task_id = reference["task_id"]
        if task_id == node_id:
            problems.add(f"{where}.task_id", "SELF_REFERENCE", "a node cannot read its own output", node=node_id)
        elif task_id not in known_nodes:
            problems.add(
                f"{where}.task_id", "REF_NOT_FOUND", f"refers to '{task_id}', which is not a node of this workflow",
                node=node_id,
            )
        if "path" in reference:
            _check_path(reference["path"], f"{where}.path", node_id, problems)
    for key, value in inputs.items():
        if key not in RESERVED_INPUTS and isinstance(value, str) and value.startswith("$"):
            _check_path(value, f"{base}.input_mapping.{key}", node_id, problems)
            source = node_read(value)
            if source not in (None, ALL) and source not in known_nodes:
                problems.add(f"{base}.input_mapping.{key}", "REF_NOT_FOUND",
                             f"reads '{value}': '{source}' is not a node of this workflow", node=node_id)
    for key, value in node.get("output_mapping", {}).items():
        _check_path(value, f"{base}.output_mapping.{key}", node_id, problems)


def _check_transition(index: int, transition: dict[str, Any], known_nodes: set[str], problems: _Problems) -> None:
    where = f"transitions[{index}]"
    label = f"{transition['from']} → {transition['to']}"
    for key in ("from", "to"):
        if transition[key] not in known_nodes:
            problems.add(
                f"{where}.{key}", "DANGLING_TRANSITION", f"({label}) '{transition[key]}' is not a node", transition=index
            )
    if transition.get("condition"):
        try:
            parse_condition(transition["condition"])
        except ConditionError as error:
            problems.add(f"{where}.condition", "CONDITION_INVALID", f"({label}) {error}", transition=index)
    for key, actions in (("on_success", SUCCESS_ACTIONS), ("on_failure", FAILURE_ACTIONS)):
        target = transition.get(key)
        if target is not None and target not in actions and target not in known_nodes:
            choices = ", ".join(sorted(actions))
            problems.add(
                f"{where}.{key}", "DANGLING_TRANSITION",
                f"({label}) '{target}' is neither a node nor one of: {choices}", transition=index,
            )


def transition_problems(topology: str, transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fields of `transitions` that `topology` cannot honour, each naming its transition.
    Also asked of a stored workflow before a run of it starts."""
    problems = _Problems()
    for index, transition in enumerate(transitions):
        label = f"{transition['from']} → {transition['to']}"
        for key, why in unhonoured(topology, transition):
            problems.add(f"transitions[{index}].{key}", "TRANSITION_UNHONOURED", f"({label}) {why}",
                         transition=index)
    return problems


def dependency_edges(document: dict[str, Any]) -> list[tuple[str, str]]:
    """(upstream, downstream) pairs: transitions plus every task_output a node reads."""
    edges = [(t["from"], t["to"]) for t in document.get("transitions", [])]
    for node in document["nodes"]:
        for reference in node.get("input_mapping", {}).get("data_references", []):
            if reference["ref_type"] == "task_output" and reference["task_id"] != node["id"]:
                edges.append((reference["task_id"], node["id"]))
    return list(dict.fromkeys(edges))


def find_cycle(node_ids: list[str], edges: list[tuple[str, str]]) -> list[str] | None:
    """A cycle as a path that starts and ends on the same node, or None (iterative DFS)."""
    graph: dict[str, list[str]] = {node_id: [] for node_id in node_ids}
    for source, target in edges:
        if source in graph and target in graph:
            graph[source].append(target)
    state = dict.fromkeys(graph, 0)  # 0 new, 1 on the current path, 2 done
    for start in graph:
        if state[start]:
            continue
        path, stack = [start], [iter(graph[start])]
        state[start] = 1
        while stack:
            following = next(stack[-1], None)
            if following is None:
                state[path.pop()] = 2
                stack.pop()
            elif state[following] == 1:
                return path[path.index(following):] + [following]
            elif state[following] == 0:
                state[following] = 1
                path.append(following)
                stack.append(iter(graph[following]))
    return None


def _reachable(start: str, transitions: list[dict[str, Any]], known_nodes: set[str]) -> set[str]:
    following: dict[str, set[str]] = {}
    for transition in transitions:
        targets = {transition["to"], transition.get("on_success"), transition.get("on_failure")}
        following.setdefault(transition["from"], set()).update(t for t in targets if t in known_nodes)
    seen, todo = {start}, [start]
    while todo:
        for target in following.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen
