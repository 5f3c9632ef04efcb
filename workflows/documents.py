"""Exports of blueprints (§3.1), workflows (§4.1) and task chains (data-transfer-protocol §7.1)
in their JSON forms; the shapes themselves are in `workflows/schemas.py`.

A node's `input_mapping` carries its inputs: `data_references` and `transfer_config`
as in the task chain of §7.1, and any other key maps an input name to a JSONPath over
the run (`$.input…`, `$.state…`, `$.nodes.<node_id>…`) or a constant. `output_mapping`
maps state keys to JSONPaths over the node's output.
"""
from __future__ import annotations

from typing import Any

from core.errors import DocumentError
from workflows.models import Blueprint, Workflow


def task_chain_defaults(chain: list[dict[str, Any]]) -> tuple[str, str]:
    """The workflow id and name a task chain gets when its document names none."""
    first = chain[0]["task_id"]
    return f"chain_{first}"[:100], f"Task chain from {first}"


def node_document(node) -> dict[str, Any]:
    document = {
        "id": node.node_id,
        "agent_ref": node.agent.agent_id,
        "input_mapping": node.input_mapping,
        "output_mapping": node.output_mapping,
        "compress": node.compress,
        "compress_model": node.compress_model,
        "compress_ratio": node.compress_ratio,
    }
    if node.output_schema:
        document["output_schema"] = node.output_schema
    if node.layout is not None:
        document["layout"] = node.layout
    for kind in ("gate", "subworkflow"):  # what kind of node it is (executions/node_kinds)
        if getattr(node, kind) is not None:
            document[kind] = getattr(node, kind)
    return document


def transition_document(transition) -> dict[str, Any]:
    document = {"from": transition.from_node, "to": transition.to_node}
    for key in ("condition", "on_success", "on_failure"):
        value = getattr(transition, key)
        if value is not None:
            document[key] = value
    return document


def workflow_document(workflow: Workflow) -> dict[str, Any]:
    nodes = workflow.nodes.select_related("agent").all()
    return {
        "workflow_id": workflow.workflow_id,
        "name": workflow.name,
        "topology": workflow.topology,
        "nodes": [node_document(node) for node in nodes],
        "transitions": [transition_document(t) for t in workflow.transitions.all()],
        "error_handling": {
            "retry_count": workflow.retry_count,
            "fallback_agent": workflow.fallback_agent.agent_id if workflow.fallback_agent is not None else None,
            "escalate_to": workflow.escalate_to.agent_id if workflow.escalate_to is not None else None,
        },
        "limits": {"max_steps": workflow.max_steps, "max_wall_seconds": workflow.max_wall_seconds,
                   **workflow.cost_limits},
        "domain": workflow.domain,
        **({"description": workflow.description} if workflow.description else {}),
        "evaluation": {
            "judge_agent": workflow.judge_agent.agent_id if workflow.judge_agent is not None else None,
            "quality_gate": workflow.quality_gate or None,
        },
        **({"input_schema": workflow.input_schema} if workflow.input_schema is not None else {}),
    }


def task_chain_document(workflow: Workflow) -> dict[str, Any]:
    """The §7.1 task chain of a workflow that one can hold: a `seq` of tasks, each an agent and
    its input. A workflow with more (transitions, gates, error handling …) is refused, naming
    what the chain would drop, rather than exported as a chain that runs differently."""
    dropped = _not_in_a_task_chain(workflow_document(workflow))
    if dropped:
        raise DocumentError(f"workflow '{workflow.workflow_id}' cannot be written as a task chain, which would drop "
                            f"{'; '.join(dropped)}: export it as a workflow", where="task_chain")
    chain = []
    for node in workflow.nodes.select_related("agent").all():
        task: dict[str, Any] = {"task_id": node.node_id, "agent": node.agent.agent_id}
        if node.input_mapping:
            task["input"] = node.input_mapping
        if node.output_schema:
            task["output_schema"] = node.output_schema
        chain.append(task)
    document: dict[str, Any] = {}
    default_id, default_name = task_chain_defaults(chain)
    if workflow.workflow_id != default_id:
        document["workflow_id"] = workflow.workflow_id
    if workflow.name != default_name:
        document["name"] = workflow.name
    document["task_chain"] = chain
    return document


def _not_in_a_task_chain(document: dict[str, Any]) -> list[str]:
    """What of a workflow document a task chain cannot hold (a node's layout is only where it is drawn)."""
    defaults = {"error_handling": {"retry_count": 0, "fallback_agent": None, "escalate_to": None},
                "limits": {"max_steps": Workflow._meta.get_field("max_steps").default,
                           "max_wall_seconds": Workflow._meta.get_field("max_wall_seconds").default},
                "domain": "", "evaluation": {"judge_agent": None, "quality_gate": None}}
    dropped = [f"its topology '{document['topology']}'"] if document["topology"] != "seq" else []
    dropped += ["its transitions"] if document["transitions"] else []
    dropped += [f"its {key}" for key, value in defaults.items() if document[key] != value]
    for node in document["nodes"]:
        kept = {"id", "agent_ref", "input_mapping", "output_schema", "layout", "compress_model", "compress_ratio"}
        extra = [key for key, value in node.items() if key not in kept and value not in (None, {}, False)]
        dropped += [f"node '{node['id']}' {key}" for key in extra]
    return dropped


def blueprint_document(blueprint: Blueprint) -> dict[str, Any]:
    return {
        "blueprint_id": blueprint.blueprint_id,
        "name": blueprint.name,
        "version": blueprint.version,
        "domain": blueprint.domain,
        "agents": [
            {"agent_ref": entry.agent.agent_id, "source": entry.source, "role_in_workflow": entry.role_in_workflow}
            for entry in blueprint.agents.select_related("agent")
        ],
        "contracts": {
            contract.key: {"data_type": contract.data_type, "schema": contract.schema}
            for contract in blueprint.contracts.all()
        },
    }
