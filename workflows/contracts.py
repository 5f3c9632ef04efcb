"""Blueprint contracts (core-data-structures §3.1): what an output owes the agents downstream.

A contract names a schema an output of one agent must match when it feeds a node of
another agent. `contract_results` checks an output against every contract it feeds and
says what is wrong under each; deciding what a broken contract does (fail the node run,
or count against an evaluation) is the caller's.
"""
from __future__ import annotations

from typing import Any

from engine.json_schema import SchemaValidator
from engine.scheduling import Plan
from workflows.models import Contract, Node


def contracts_of(node: Node, plan: Plan, contracts: list[Contract]) -> list[Contract]:
    """The contracts an output of this node owes: from its agent to the agent of a node downstream."""
    if not contracts:
        return []
    agents = {plan.agents.get(node_id) for node_id in plan.downstream(node.node_id)}
    return [contract for contract in contracts
            if contract.from_agent_id == node.agent_id and contract.to_agent_id in agents]


def contract_results(node: Node, plan: Plan, output: Any, contracts: list[Contract]) -> list[tuple[Contract, str | None]]:
    """Each blueprint contract (core-data-structures §3.1) from this node's agent to the
    agent of a node downstream, with what is wrong with `output` under it (None: it holds)."""
    results: list[tuple[Contract, str | None]] = []
    for contract in contracts_of(node, plan, contracts):
        errors = sorted(SchemaValidator(contract.schema).iter_errors(output), key=lambda e: list(e.absolute_path))
        if errors:
            where = "/".join(map(str, errors[0].absolute_path)) or "output"
            results.append((contract, f"at {where}: {errors[0].message}"))
        else:
            results.append((contract, None))
    return results


def gate_schema(node: Node, plan: Plan, contracts: list[Contract]) -> tuple[dict | bool | None, str]:
    """The schema a gate holds a person's edit to, and whose it is, as a person reads it ("the
    gate's schema", "the contract 'approved_draft'"; engine/gates.py): the gate's own, else
    the node's output contract (all of them, when there are several), else none."""
    own = (node.gate or {}).get("schema")
    if own is not None:  # {} too: the gate takes anything, whatever the contracts say
        return own, "the gate's schema"
    owed = contracts_of(node, plan, contracts)
    if not owed:
        return None, ""
    keys = ", ".join(f"'{contract.key}'" for contract in owed)
    if len(owed) == 1:
        return owed[0].schema, f"the contract {keys}"
    return {"allOf": [contract.schema for contract in owed]}, f"the contracts {keys}"
