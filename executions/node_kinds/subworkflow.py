"""The kind `subworkflow` (engine/subworkflows.py): the node runs another workflow as a
child run. On a worker, performing it reads the node's named inputs from the run, the
child's input; the child starts, and the node settles when it ends
(executions/services/subworkflows.py)."""
from __future__ import annotations

from executions.node_kinds.base import ChildRun, Performed, WorkerKind
from executions.output_readers import named_inputs, run_scope
from executions.prompts import bounded


class SubworkflowKind(WorkerKind):
    name = "subworkflow"
    shape = "workflow"
    described = "runs another workflow as a child run"
    calls_agent = False  # its agent is on record for the node and is never called
    trial_refusal = "runs another workflow as a child run: run that workflow to try it"

    def perform(self, run, graph, node) -> Performed:
        items, missing = named_inputs(node, run_scope(run.execution, node, graph.plan))
        child_input = {item["name"]: item["content"] for item in items}
        record = {"resolution_failures": missing,
                  "resolved_inputs": [bounded({"name": name, "source": {"path": node.input_mapping.get(name)}, "content": value})
                                      for name, value in child_input.items()]}
        return Performed(output=None, record=record,
                         child=ChildRun(node.subworkflow["workflow_ref"], node.subworkflow.get("version"), child_input))


KIND = SubworkflowKind()
