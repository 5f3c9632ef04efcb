"""Every model call of a run is on its record, whatever made it: a node, its batches, a
Tree-of-Thoughts search's roles, the judge (node runs run in this process; the real-worker
proofs with priced models are in test_costs_worker.py)."""
import pytest

from executions.evaluations import execution_evaluate
from executions.services import execution_start
from tests.executions.conftest import drain
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def demo(in_process):
    return in_process


def run(workflow_id, **input):
    return drain(execution_start(workflow=Workflow.objects.get(workflow_id=workflow_id), input=input))


def test_a_search_records_each_role_call_and_a_batched_node_each_batch():
    search = run("game24", numbers=[4, 9, 10, 13])
    (solve,) = search.node_runs.all()
    purposes = {call["purpose"] for call in solve.calls}
    assert {"tot decomposer", "tot generator", "tot evaluator"} <= purposes
    assert all(call["backend"] == "builtin" and call["usage"] == "builtin" and call["cost"] == "0.000000000000"
               for call in solve.calls)
    assert solve.cost == 0 and solve.cost_complete and search.cost == 0

    chain = run("thesis_reading")
    vault = chain.node_runs.get(node_id="task_vault_001")
    batches = [call["purpose"] for call in vault.calls]
    assert len(batches) > 1 and batches == [f"batch {i}/{len(batches)}" for i in range(1, len(batches) + 1)]
    assert sum(call["tokens_in"] for call in vault.calls) == vault.tokens_in


def test_the_judges_call_is_part_of_what_the_run_cost():
    analysis = run("parallel_analysis")
    assert analysis.calls == []
    execution_evaluate(execution_pk=analysis.pk)
    analysis.refresh_from_db()
    (judge,) = analysis.calls
    assert (judge["purpose"], judge["backend"], judge["usage"]) == ("judge", "builtin", "builtin")
    assert analysis.cost_complete is True
