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


def contract_results(node: Node, plan: Plan, output: Any, contracts: list[Contract]) -> list[tuple[Contract, str | None]]:
    """Each blueprint contract (core-data-structures §3.1) from this node's agent to the
    agent of a node downstream, with what is wrong with `output` under it (None: it holds)."""
    if not contracts:
        return []
    agents = {plan.agents.get(node_id) for node_id in plan.downstream(node.node_id)}
    results: list[tuple[Contract, str | None]] = []
    for contract in contracts:
        if contract.from_agent_id != node.agent_id or contract.to_agent_id not in agents:
            continue
        errors = sorted(SchemaValidator(contract.schema).iter_errors(output), key=lambda e: list(e.absolute_path))
        if errors:
            where = "/".join(map(str, errors[0].absolute_path)) or "output"
            results.append((contract, f"at {where}: {errors[0].message}"))
        else:
            results.append((contract, None))
    return results
