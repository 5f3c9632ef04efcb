"""JSON forms of blueprints (§3.1), workflows (§4.1) and task chains (data-transfer-protocol §7.1).

A node's `input_mapping` carries its inputs: `data_references` and `transfer_config`
as in the task chain of §7.1, and any other key maps an input name to a JSONPath over
the run (`$.input…`, `$.state…`, `$.nodes.<node_id>…`) or a constant. `output_mapping`
maps state keys to JSONPaths over the node's output.
"""
from __future__ import annotations

from typing import Any

from agents.documents import ID, STRINGS
from workflows.models import Blueprint, Workflow

FILTER_OPERATORS = ["eq", "ne", "in", "gt", "gte", "lt", "lte", "contains"]
CONDITION = {
    "type": "object",
    "required": ["field", "operator", "value"],
    "additionalProperties": False,
    "properties": {"field": {"type": "string", "minLength": 1}, "operator": {"enum": FILTER_OPERATORS}, "value": {}},
}
FALLBACK_CONFIG = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "strategy": {"enum": ["use_default", "retry", "skip", "abort"]},
        "default_value": {},
        "retry_count": {"type": "integer", "minimum": 0, "maximum": 20},
        "retry_delay_ms": {"type": "integer", "minimum": 0, "maximum": 600_000},
        "on_final_failure": {"enum": ["skip", "abort"]},
    },
}
# data-transfer-protocol §4.2 (a summary transfer) and §6.2 (batching): the fields the
# context builder reads are typed, so a run never meets a value it cannot use.
SUMMARY_CONFIG = {
    "type": "object",
    "properties": {
        "strategy": {"enum": ["extractive", "abstractive", "key_points", "truncate"]},
        "max_length": {"type": "integer", "minimum": 1, "maximum": 10_000_000},
        "summary_ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "preserve_fields": STRINGS,
        "summarize_fields": STRINGS,
    },
}
BATCH_CONFIG = {
    "type": "object",
    "properties": {
        "enabled": {"type": "boolean"},
        "batch_size_tokens": {"type": "integer", "minimum": 1, "maximum": 10_000_000},
        "overlap_tokens": {"type": "integer", "minimum": 0, "maximum": 10_000_000},
        "max_batches": {"type": "integer", "minimum": 1, "maximum": 1000},
        "aggregation_strategy": {"enum": ["merge", "vote", "latest", "weighted"]},
        "batch_priority": {"enum": ["chronological", "importance", "random"]},
    },
}
# Per-reference settings that override the automatic choices of the context builder.
REFERENCE_OPTIONS = {
    "name": {"type": "string", "minLength": 1},
    "priority": {"type": "integer", "minimum": 1, "maximum": 4},
    "data_type": {"type": "string"},
    "transfer_mode": {"enum": ["full", "summary", "reference", "auto"]},
    "summary_config": SUMMARY_CONFIG,
    "batch_config": BATCH_CONFIG,
    "fallback_config": FALLBACK_CONFIG,
}
DATA_REFERENCE_SHAPE: dict[str, Any] = {
    "type": "object",
    "required": ["ref_type"],
    "properties": {"ref_type": {"enum": ["task_output", "file", "db_query"]}},
    "allOf": [
        {
            "if": {"properties": {"ref_type": {"const": "task_output"}}},
            "then": {
                "required": ["task_id"],
                "additionalProperties": False,
                "properties": {
                    "ref_type": {},
                    "task_id": ID,
                    "path": {"type": "string", "minLength": 1},
                    "filter": CONDITION,
                    "transform": {"enum": ["none", "summary", "keys_only"]},
                    **REFERENCE_OPTIONS,
                },
            },
        },
        {
            "if": {"properties": {"ref_type": {"const": "file"}}},
            "then": {
                "required": ["path"],
                "additionalProperties": False,
                "properties": {
                    "ref_type": {},
                    "path": {"type": "string", "minLength": 1},
                    "format": {"enum": ["pdf", "md", "json", "txt"]},
                    "encoding": {"type": "string", "minLength": 1},
                    "sections": STRINGS,
                    **REFERENCE_OPTIONS,
                },
            },
        },
        {
            "if": {"properties": {"ref_type": {"const": "db_query"}}},
            "then": {
                "required": ["table"],
                "additionalProperties": False,
                "properties": {
                    "ref_type": {},
                    "table": {"type": "string", "minLength": 1},
                    "conditions": {"type": "array", "items": CONDITION},
                    "select": STRINGS,
                    "order_by": {
                        "type": "object",
                        "required": ["field"],
                        "additionalProperties": False,
                        "properties": {"field": {"type": "string"}, "direction": {"enum": ["asc", "desc"]}},
                    },
                    "limit": {"type": "integer", "minimum": 1, "maximum": 10_000},
                    **REFERENCE_OPTIONS,
                },
            },
        },
    ],
}
TRANSFER_CONFIG_SHAPE = {
    "type": "object",
    "properties": {
        "mode": {"enum": ["full", "summary", "reference", "auto"]},
        "max_tokens": {"type": "integer", "minimum": 1},
        "priority_filter": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 4}},
        "inline_preview_count": {"type": "integer", "minimum": 0},
    },
}
NODE_INPUT_SHAPE = {
    "type": "object",
    "properties": {
        "data_references": {"type": "array", "items": DATA_REFERENCE_SHAPE},
        "transfer_config": TRANSFER_CONFIG_SHAPE,
    },
}
NODE_SHAPE = {
    "type": "object",
    "required": ["id", "agent_ref"],
    "additionalProperties": False,
    "properties": {
        "id": ID,
        "agent_ref": ID,
        "input_mapping": NODE_INPUT_SHAPE,
        "output_mapping": {"type": "object", "additionalProperties": {"type": "string"}},
        "output_schema": {"type": "string"},
        "compress": {"type": "boolean"},
        "compress_model": {"type": "string", "minLength": 1},
        "compress_ratio": {"type": "number", "minimum": 0.05, "maximum": 1.0},
        "layout": {
            "type": ["object", "null"],
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            "additionalProperties": False,
        },
    },
}
OPTIONAL_STRING = {"type": ["string", "null"]}
WORKFLOW_SHAPE: dict[str, Any] = {
    "type": "object",
    "required": ["workflow_id", "name", "topology", "nodes"],
    "additionalProperties": False,
    "properties": {
        "workflow_id": ID,
        "name": {"type": "string", "minLength": 1, "maxLength": 200},
        "topology": {"enum": ["seq", "par", "dag", "state_machine"]},
        "nodes": {"type": "array", "minItems": 1, "items": NODE_SHAPE},
        "transitions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["from", "to"],
                "additionalProperties": False,
                "properties": {
                    "from": {"type": "string"},
                    "to": {"type": "string"},
                    "condition": OPTIONAL_STRING,
                    "on_success": OPTIONAL_STRING,
                    "on_failure": OPTIONAL_STRING,
                },
            },
        },
        "error_handling": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "retry_count": {"type": "integer", "minimum": 0, "maximum": 10},
                "fallback_agent": OPTIONAL_STRING,
                "escalate_to": OPTIONAL_STRING,
            },
        },
        "limits": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_steps": {"type": "integer", "minimum": 1, "maximum": 100_000},
                "max_wall_seconds": {"type": "integer", "minimum": 1, "maximum": 7 * 24 * 3600},
            },
        },
        "domain": {"type": "string", "maxLength": 200},
        "evaluation": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "judge_agent": OPTIONAL_STRING,
                "quality_gate": {
                    "type": ["object", "null"],
                    "additionalProperties": False,
                    "properties": {name: {"type": "number", "minimum": 0, "maximum": 1}
                                   for name in ("accuracy", "completeness", "efficiency", "overall_score")},
                },
            },
        },
    },
}
TASK_CHAIN_SHAPE: dict[str, Any] = {
    "type": "object",
    "required": ["task_chain"],
    "additionalProperties": False,
    "properties": {
        "workflow_id": ID,
        "name": {"type": "string", "minLength": 1},
        "task_chain": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["task_id", "agent"],
                "additionalProperties": False,
                "properties": {
                    "task_id": ID,
                    "agent": ID,
                    "input": NODE_INPUT_SHAPE,
                    "output_schema": {"type": "string"},
                },
            },
        },
    },
}
BLUEPRINT_SHAPE: dict[str, Any] = {
    "type": "object",
    "required": ["blueprint_id", "name"],
    "additionalProperties": False,
    "properties": {
        "blueprint_id": ID,
        "name": {"type": "string", "minLength": 1, "maxLength": 200},
        "version": {"type": "string", "minLength": 1},
        "domain": {"type": "string"},
        "agents": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["agent_ref", "source"],
                "additionalProperties": False,
                "properties": {
                    "agent_ref": ID,
                    "source": {"enum": ["reuse", "new", "derive"]},
                    "role_in_workflow": {"type": "string"},
                },
            },
        },
        "contracts": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["data_type", "schema"],
                "additionalProperties": False,
                "properties": {"data_type": {"type": "string", "minLength": 1}, "schema": {"type": ["object", "boolean"]}},
            },
        },
    },
}


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
            "fallback_agent": workflow.fallback_agent.agent_id if workflow.fallback_agent_id else None,
            "escalate_to": workflow.escalate_to.agent_id if workflow.escalate_to_id else None,
        },
        "limits": {"max_steps": workflow.max_steps, "max_wall_seconds": workflow.max_wall_seconds},
        "domain": workflow.domain,
        "evaluation": {
            "judge_agent": workflow.judge_agent.agent_id if workflow.judge_agent_id else None,
            "quality_gate": workflow.quality_gate or None,
        },
    }


def task_chain_document(workflow: Workflow) -> dict[str, Any]:
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
