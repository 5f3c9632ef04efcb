"""Concrete instances of every structure in core-data-structures.zh.md, and the §7.1 task chain.

The seed gives types ("string", "number"); these fill them with realistic values in
exactly the seed's shape, so the round-trip tests check the real format.
"""
import copy

AGENT_ROOT = {
    "agent_id": "agent_scholar",
    "name": "Scholar",
    "version": "1.0.0",
    "type": "business",
    "status": "active",
    "lineage": {"parent_id": None, "root_id": "agent_scholar", "level": 0, "children_ids": ["agent_scholar_nlp"]},
    "prompt_config": {
        "system_prompt": "You are a scholar who reads papers.",
        "role_play": "A meticulous research assistant",
        "task_context": "Thesis reading system",
        "thinking_process": "Read, extract claims, link evidence",
        "output_constraint": "Return knowledge atoms as JSON",
    },
    "capabilities": {"skills": ["extract_atoms"], "tools": ["pdf_reader"], "knowledge_domains": ["deep_learning"]},
    "constraints": ["Cite the section of every atom"],
    "metadata": {"created_at": "2026-02-03T10:30:00Z", "updated_at": "2026-02-04T08:00:00Z", "created_by": "architect"},
}

AGENT_CHILD = {
    **copy.deepcopy(AGENT_ROOT),
    "agent_id": "agent_scholar_nlp",
    "name": "Scholar (NLP)",
    "lineage": {"parent_id": "agent_scholar", "root_id": "agent_scholar", "level": 1, "children_ids": []},
    "constraints": ["Cite the section of every atom", "Focus on NLP papers"],
}

AGENT_VALIDATOR = {
    "agent_id": "agent_validator",
    "name": "Validator",
    "version": "2.1.0",
    "type": "meta",
    "status": "inactive",
    "lineage": {"parent_id": None, "root_id": "agent_validator", "level": 0, "children_ids": []},
    "prompt_config": {"system_prompt": "You validate claims.", "role_play": "", "task_context": "", "thinking_process": "", "output_constraint": ""},
    "capabilities": {"skills": ["validate_atoms"], "tools": [], "knowledge_domains": []},
    "constraints": [],
    "metadata": {"created_at": "2026-02-03T10:30:00Z", "updated_at": "2026-02-03T10:30:00Z", "created_by": "architect"},
}

BLUEPRINT = {
    "blueprint_id": "bp_thesis",
    "name": "Thesis reading",
    "version": "1.0.0",
    "domain": "deep_learning",
    "agents": [
        {"agent_ref": "agent_scholar", "source": "reuse", "role_in_workflow": "extract atoms"},
        {"agent_ref": "agent_validator", "source": "new", "role_in_workflow": "validate"},
        {"agent_ref": "agent_scholar_nlp", "source": "derive", "role_in_workflow": "NLP specialist"},
    ],
    "contracts": {
        "agent_scholar → agent_validator": {
            "data_type": "knowledge_atoms",
            "schema": {"type": "object", "required": ["atoms"], "properties": {"atoms": {"type": "array"}}},
        }
    },
}

WORKFLOW = {
    "workflow_id": "wf_review",
    "name": "Review loop",
    "topology": "state_machine",
    "nodes": [
        {"id": "extract", "agent_ref": "agent_scholar", "input_mapping": {"paper": "$.input.paper"}, "output_mapping": {"atoms": "$.atoms"}},
        {"id": "validate", "agent_ref": "agent_validator", "input_mapping": {"atoms": "$.state.atoms"}, "output_mapping": {}},
    ],
    "transitions": [
        {"from": "extract", "to": "validate", "condition": "len($.atoms) > 0", "on_success": "continue", "on_failure": "abort"},
        {"from": "validate", "to": "extract", "condition": "output.verdict == 'revise'", "on_success": "continue", "on_failure": "escalate"},
    ],
    "error_handling": {"retry_count": 2, "fallback_agent": "agent_scholar_nlp", "escalate_to": "agent_validator"},
}

EXECUTION = {
    "execution_id": "exec_001",
    "workflow_ref": "wf_review",
    "status": "success",
    "started_at": "2026-02-03T10:30:00Z",
    "completed_at": "2026-02-03T10:31:12.250000Z",
    "results": [
        {"node_id": "extract", "agent_ref": "agent_scholar", "status": "success", "output": {"atoms": [{"atom_id": "atom_001"}]}, "duration_ms": 41000},
        {"node_id": "validate", "agent_ref": "agent_validator", "status": "success", "output": {"verdict": "accept"}, "duration_ms": 31250},
    ],
}

DERIVE_REQUEST = {
    "derive_request_id": "dr_001",
    "parent_agent_id": "agent_scholar",
    "trigger": "quality_issue",
    "trigger_context": {"evaluations": ["eval_001"], "average_score": 0.42},
    "specialization": {
        "new_name": "Scholar (CV)",
        "domain_focus": "computer_vision",
        "additional_skills": ["read_figures"],
        "additional_constraints": ["Describe every figure"],
    },
    "status": "pending",
    "result_agent_id": None,
}

EVALUATION = {
    "evaluation_id": "eval_001",
    "target_type": "execution",
    "target_id": "exec_001",
    "scores": {"accuracy": 0.9, "completeness": 1.0, "efficiency": 0.75},
    "overall_score": 0.88,
    "pass": True,
    "feedback": ["All nodes succeeded", "Token use within budget"],
    "action": "approve",
}

# data-transfer-protocol.zh.md §7.1, verbatim.
TASK_CHAIN = {
    "task_chain": [
        {
            "task_id": "task_scholar_001",
            "agent": "Scholar",
            "input": {"data_references": [{"ref_type": "file", "path": "/workspace/papers/transformer.pdf", "format": "pdf"}]},
            "output_schema": "knowledge_atoms",
        },
        {
            "task_id": "task_validator_001",
            "agent": "Validator",
            "input": {
                "data_references": [
                    {"ref_type": "task_output", "task_id": "task_scholar_001", "path": "$.atoms[?(@.atom_type=='claim')]", "transform": "summary"}
                ],
                "transfer_config": {"mode": "summary", "max_tokens": 5000, "priority_filter": [1, 2]},
            },
        },
        {
            "task_id": "task_vault_001",
            "agent": "Knowledge_Vault",
            "input": {
                "data_references": [
                    {"ref_type": "task_output", "task_id": "task_scholar_001", "path": "$.atoms"},
                    {"ref_type": "task_output", "task_id": "task_validator_001", "path": "$.validation_results"},
                    {"ref_type": "db_query", "table": "knowledge_atoms", "conditions": [{"field": "domain", "operator": "eq", "value": "deep_learning"}], "limit": 100},
                ],
                "transfer_config": {"mode": "reference", "inline_preview_count": 5},
            },
        },
    ]
}
TASK_CHAIN_AGENTS = [{"agent_id": name, "name": name} for name in ("Scholar", "Validator", "Knowledge_Vault")]


def all_documents():
    """Every example, in an order that needs no sorting (the registry sorts anyway)."""
    return [AGENT_ROOT, AGENT_CHILD, AGENT_VALIDATOR, BLUEPRINT, WORKFLOW, EXECUTION, DERIVE_REQUEST, EVALUATION]


def fresh(document):
    return copy.deepcopy(document)
