"""The kind `subworkflow` (engine/subworkflows.py): the node runs another workflow as a
child run. On a worker, performing it reads the node's named inputs from the run, the
child's input; the child starts, and the node settles when it ends
(executions/services/subworkflows.py)."""
from __future__ import annotations

from executions.node_kinds.base import ChildRun, Performed
from executions.output_readers import latest_outputs, named_inputs, needed_outputs
from executions.prompts import bounded


class SubworkflowKind:
    name = "subworkflow"
    shape = "workflow"
    described = "runs another workflow as a child run"
    calls_agent = False  # its agent is on record for the node and is never called
    decided_by_people = False
    trial_refusal = "runs another workflow as a child run: run that workflow to try it"

    def opening(self, execution, graph, node, now) -> None:
        return None  # sent to a worker, which starts the child

    def perform(self, run, graph, node) -> Performed:
        execution = run.execution
        scope = {"input": execution.input, "state": execution.state,
                 "nodes": latest_outputs(execution, needed_outputs(node, graph.plan))}
        items, missing = named_inputs(node, scope)
        child_input = {item["name"]: item["content"] for item in items}
        record = {"resolution_failures": missing,
                  "resolved_inputs": [bounded({"name": name, "source": {"path": node.input_mapping.get(name)}, "content": value})
                                      for name, value in child_input.items()]}
        return Performed(output=None, record=record,
                         child=ChildRun(node.subworkflow["workflow_ref"], node.subworkflow.get("version"), child_input))

    def decision(self, run) -> None:
        return None


KIND = SubworkflowKind()
