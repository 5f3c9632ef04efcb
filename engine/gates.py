"""Gates: nodes where a run stops for a person to approve, reject or edit before it goes on.

A gate is a node of any topology with a `gate` object beside the seed's fields. Its
`agent_ref` names the agent that stands for the people who decide (it is never called);
what it shows them is its named inputs (`input_mapping` JSONPaths over `$.input`,
`$.state` and `$.nodes.<id>`, as for any node, and drawn as edges the same way):

    "gate": {
      "prompt": "Publish these release notes?",          what to decide (optional)
      "decisions": ["approve", "reject", "edit"],         the choices offered (default: all three)
      "deciders": {"roles": ["approver"], "users": ["ana"]},   who may decide: a holder of one
                                                          of the roles, or a named user
                                                          (default: authors, who steer runs)
      "timeout_seconds": 86400,                           optional: decided for them after this
      "on_timeout": "reject",                             approve | reject | escalate (default reject)
      "schema": {"type": "object", "required": ["draft"],   optional: a JSON Schema (draft 2020-12)
                 "properties": {"draft": {"type": "string"}}}   of the data a person may pass on
    }

The schema is checked when the workflow is saved (a JSON Schema of an object, its patterns
run on RE2: engine/json_schema.py). Without one, a gate holds an edit to the node's output
contract: the schema of the blueprint contract from the gate's agent to the agent of a node
after it (all of them, when there are several). The gate's run records the schema it holds
the edit to (`schema`, and whose it is, `schema_from`: "the gate's schema", "the contract
'<key>'"), so that the page draws the form from it and the check at the decision is the
one the person was shown.

What a decision does, by the rules every node follows:

- approve: the node succeeds; its output is the data shown, as shown;
- edit: the node succeeds with the person's version of that data, checked first against the
  gate's schema (each problem named at its field: `output.draft`) and the node's contracts;
- reject: the node fails with GATE_REJECTED. Its `on_failure` says what follows (a node of a
  state machine: the run loops back there; skip, abort; escalate, the default: the
  workflow's `escalate_to`, else the run fails). A decision is never retried or handed to
  the fallback agent: asking again would not change it.
- a time-out decides `on_timeout`: approve or reject as above, marked timed out; escalate
  fails the node with GATE_TIMEOUT and the run goes to `escalate_to`, whatever `on_failure`
  says (so a rejection may loop back while a gate nobody answered goes to a person).

A transition's condition reads the decision as `gate.decision`, `gate.comment`,
`gate.decided_by` and `gate.timed_out` (engine/conditions.py).

Every decision is also written in the run's state as `gate_feedback`, for the nodes that run
after it (an input mapping reads it as `$.state.gate_feedback`, a condition as
`state.gate_feedback.decision`); the next decision of any gate of the run replaces it:

    "gate_feedback": {"node": "approve", "decision": "reject", "comment": "Name the breaking change.",
                      "decided_by": "ana", "decided_at": "2026-02-03T10:30:00+00:00", "timed_out": false}

so that a node a rejection loops back to (a drafter) reads why the person rejected its work.
`decided_by` is "" when the time-out decided. This module is pure: the services
(executions/services/gates.py) open gates, store decisions and time them out.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine.context.errors import RefError
from engine.context.resolution import select_path
from engine.dataflow import RESERVED_INPUTS
from engine.json_schema import object_schema_problem, schema_refusal
from engine.jsonpath import PathError

APPROVE, REJECT, EDIT = "approve", "reject", "edit"
DECISIONS = (APPROVE, REJECT, EDIT)
ESCALATE = "escalate"
ON_TIMEOUT = (APPROVE, REJECT, ESCALATE)
DEFAULT_ROLES = ("author",)
REJECTED, TIMED_OUT = "GATE_REJECTED", "GATE_TIMEOUT"  # the error codes of a gate's failed run
FEEDBACK = "gate_feedback"  # the key of the run's state that holds the latest decision
FEEDBACK_FIELDS = ("decision", "comment", "decided_by", "decided_at", "timed_out")


def settings_of(gate: dict[str, Any]) -> dict[str, Any]:
    """A gate as stored in its document, with every default filled in."""
    deciders = gate.get("deciders") or {}
    return {
        "prompt": gate.get("prompt") or "",
        "decisions": list(gate.get("decisions") or DECISIONS),
        "deciders": {"roles": list(deciders.get("roles") or ([] if deciders.get("users") else DEFAULT_ROLES)),
                     "users": list(deciders.get("users") or [])},
        "timeout_seconds": gate.get("timeout_seconds"),
        "on_timeout": gate.get("on_timeout") or REJECT,
        "schema": gate.get("schema"),
    }


def may_decide(gate: dict[str, Any], username: str, roles: Iterable[str]) -> bool:
    """Whether a user (by name, holding `roles`) may decide this gate."""
    deciders = settings_of(gate)["deciders"]
    return username in deciders["users"] or bool(set(roles) & set(deciders["roles"]))


def deciders_text(gate: dict[str, Any]) -> str:
    """Who may decide, as a person reads it: "a user with the approver role, or ana"."""
    deciders = settings_of(gate)["deciders"]
    parts = [f"a user with the {' or '.join(deciders['roles'])} role"] if deciders["roles"] else []
    parts += deciders["users"]
    return ", or ".join(parts)


def gate_problems(node: dict[str, Any], *, escalate_to: str | None) -> list[tuple[str, str, str]]:
    """(where, code, message) for what a node's gate asks that a run could not do."""
    gate = node.get("gate")
    if gate is None:
        return []
    where = f"nodes[{node['id']}].gate"
    problems = []
    if (node.get("input_mapping") or {}).get("data_references"):
        problems.append((f"nodes[{node['id']}].input_mapping.data_references", "GATE_INPUT",
                         "a gate shows its named inputs (JSONPaths over the run) to a person; it reads no "
                         "data references"))
    if gate.get("on_timeout") and not gate.get("timeout_seconds"):
        problems.append((f"{where}.on_timeout", "GATE_TIMEOUT_UNSET",
                         "on_timeout applies only after timeout_seconds, which the gate does not set"))
    if gate.get("on_timeout") == ESCALATE and not escalate_to:
        problems.append((f"{where}.on_timeout", "GATE_ESCALATES_TO_NOBODY",
                         "on_timeout escalate needs the workflow's error_handling.escalate_to"))
    if gate.get("schema") is not None:
        problem = schema_problem(gate["schema"])
        if problem:
            problems.append((f"{where}.schema", "GATE_SCHEMA_INVALID", problem))
    return problems


def schema_problem(schema: Any) -> str | None:
    """Why `schema` cannot be a gate's: not a JSON Schema, or not one of an object (what a
    gate passes on is its named inputs, an object). None when it can."""
    refusal = schema_refusal(schema, field="schema")
    if refusal:
        return refusal
    return object_schema_problem(schema, of="the data a person passes on")


def feedback_of(node_id: str, decided: dict[str, Any]) -> dict[str, Any]:
    """What the run's state holds as `gate_feedback` once gate `node_id` is decided
    (`decided`: its run's gate record, with the decision)."""
    return {"node": node_id, **{key: decided.get(key) for key in FEEDBACK_FIELDS}}


def shown_data(input_mapping: dict[str, Any], scope: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """The data a gate shows: each named input read from the run (`scope`: input, state and
    the nodes' outputs) or taken as the constant it is; and each path that found nothing,
    with why (it is shown as missing, and an approval passes on only what was found)."""
    shown, missing = {}, []
    for name, value in input_mapping.items():
        if name in RESERVED_INPUTS:
            continue
        if isinstance(value, str) and value.startswith("$"):
            try:
                shown[name] = select_path(scope, value)
            except (RefError, PathError) as error:
                missing.append({"name": name, "path": value, "error": str(error)})
        else:
            shown[name] = value
    return shown, missing
