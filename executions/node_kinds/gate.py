"""The kind `gate` (engine/gates.py): the run stops at the node for a person to approve,
reject or edit the data it shows. Its run opens waiting, with that data read from the run
as it opens with the schema an edit is held to, and goes to no worker; a person's decision (executions/services/gates.py)
ends it, and a transition's condition reads that decision as `gate`."""
from __future__ import annotations

from datetime import datetime, timedelta

from engine import gates
from executions.models import NodeRun
from executions.node_errors import NodeFailure
from executions.node_kinds.base import Performed
from executions.output_readers import run_scope
from workflows.contracts import gate_schema

DECISION = ("decision", "comment", "decided_by", "timed_out")  # what a transition's condition reads as `gate`


class GateKind:
    name = "gate"
    shape = "gate"
    described = "is a gate: a person decides it"
    calls_agent = False  # its agent stands for the people who decide and is never called
    decided_by_people = True
    trial_refusal = "is a gate: a person decides it in a run; try the nodes around it"

    def opening(self, execution, graph, node, now: datetime) -> dict:
        """Waiting, with the data it shows read now from the run, and its time-out."""
        shown, missing = gates.shown_data(node.input_mapping, run_scope(execution, node, graph.plan))
        asked = gates.settings_of(node.gate)
        schema, schema_from = gate_schema(node, graph.plan, graph.contracts)
        timeout = asked["timeout_seconds"]
        return {"status": NodeRun.Status.WAITING, "started_at": now,
                "decide_by": now + timedelta(seconds=timeout) if timeout else None,
                "gate": {**asked, "schema": schema, "schema_from": schema_from, "shown": shown, "missing": missing,
                         "decision": None}}

    def perform(self, run, graph, node) -> Performed:
        raise NodeFailure(f"node '{node.node_id}' is a gate: a person decides it, no worker performs it",
                          code="INTERNAL_ERROR", retryable=False)

    def decision(self, run) -> dict | None:
        decided = run.gate and run.gate.get("decision") and {key: run.gate.get(key) for key in DECISION}
        return decided or None


KIND = GateKind()
