"""Writes for executions, one module per concern (imports run down this list, never up):

- budget.py: a run's cost limit, kept for every call made for it (its node runs' and its judge's)
- inline.py: the next node of a chain, run by the worker that made it ready
- run.py: the run core, LockedRun: a run locked, advanced, its nodes started, ended
- node_run.py: a node run on a worker: claim, perform, store, advance; heartbeats
- gates.py: a person's decision on a gate, the gates waiting for a user, gates that time out
- sweep.py: crash safety: silent workers, lost messages and evaluations, wall time; gate time-outs
- start.py: start and steer a run: start, cancel, resume, retry, abort
- rerun.py: re-run a past run from one of its nodes; try one node alone
- bulk.py: cancel, retry or re-run many runs at once, each as alone
- document_import.py: an execution recorded elsewhere, imported

Each reads the graph of the workflow version a run runs from executions/run_graphs.py (a read,
cached per process). Evaluations are written by quality/evaluations.py, which builds on these. The names other
code uses are importable from here."""
from executions.run_graphs import Graph, execution_graph, workflow_graph
from executions.services.bulk import executions_bulk
from executions.services.document_import import execution_import_document
from executions.services.gates import gate_decide, gates_pending, gates_pending_ids, gates_time_out
from executions.services.node_run import heartbeat, node_run_execute
from executions.services.rerun import execution_rerun, node_try, rerun_copy
from executions.services.start import (
    execution_abort,
    execution_cancel,
    execution_resume,
    execution_retry,
    execution_start,
    execution_start_by_id,
)
from executions.services.sweep import node_runs_sweep, node_runs_sweep_exclusive

__all__ = [
    "Graph", "execution_abort", "execution_graph", "execution_cancel", "execution_import_document", "execution_resume",
    "execution_rerun", "rerun_copy", "execution_retry", "execution_start", "execution_start_by_id", "gate_decide", "gates_pending",
    "gates_pending_ids", "gates_time_out", "heartbeat", "node_run_execute",
    "node_runs_sweep", "node_runs_sweep_exclusive", "node_try", "workflow_graph", "executions_bulk",
]
