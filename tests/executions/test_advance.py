"""Advancing a run: what a step reads does not grow with the run's history.

The work a step asks of the database is counted, not timed: on PostgreSQL the rows and index
entries it reads (the transaction's own statistics; the table analysed, and sequential scans
off, so that the plans are the ones a large table gets), on SQLite the instructions its
virtual machine runs."""
from unittest import mock

import pytest
from django.db import connection

from core.documents import import_documents
from executions.services import execution_start, node_run_execute
from workflows.models import Workflow

pytestmark = pytest.mark.django_db

NODE_RUNS = "executions_noderun"
AGENT = {
    "agent_id": "step_noop", "name": "No-op", "version": "1.0.0", "type": "business", "status": "active",
    "prompt_config": {"system_prompt": "Do nothing."},
    "capabilities": {"skills": ["noop"], "tools": [], "knowledge_domains": []},
    "metadata": {"created_by": "test"},
    "runtime": {"backend": "builtin", "model": "", "encoding": "cl100k_base", "role": ""},
}
# Two nodes in a loop; the second reads the first's latest output, and the state.
LOOP = {
    "workflow_id": "step_loop", "name": "A loop of two nodes", "topology": "state_machine",
    "nodes": [
        {"id": "ask", "agent_ref": "step_noop", "output_mapping": {"asked": "$.ok"}},
        {"id": "answer", "agent_ref": "step_noop",
         "input_mapping": {"question": "$.nodes.ask", "asked": "$.state.asked"}},
    ],
    "transitions": [{"from": "ask", "to": "answer"}, {"from": "answer", "to": "ask"}],
    "error_handling": {"retry_count": 0},
    "limits": {"max_steps": 10_000, "max_wall_seconds": 3600},
}


class Work:
    """What the database did for the statements run inside, in its own units."""

    def __enter__(self):
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                # The statistics that autovacuum keeps, and no plan that reads a table whole
                # because it is still small.
                cursor.execute(f"ANALYZE {NODE_RUNS}")
                cursor.execute("SET LOCAL enable_seqscan = off")
            self.before = self.postgresql()
        else:
            self.count = 0

            def tick():
                self.count += 1
                return 0

            connection.ensure_connection()
            connection.connection.set_progress_handler(tick, 10)  # called every 10 instructions
        return self

    def __exit__(self, *exc):
        if connection.vendor == "postgresql":
            self.done = self.postgresql() - self.before
        else:
            connection.connection.set_progress_handler(None, 0)
            self.done = self.count * 10

    @staticmethod
    def postgresql() -> int:
        """Rows and index entries of the node runs read so far in this transaction."""
        with connection.cursor() as cursor:
            # Index entries read, then rows read by scans and fetched through an index.
            cursor.execute("SELECT (SELECT COALESCE(SUM(pg_stat_get_xact_tuples_returned(indexrelid)), 0) "
                           "FROM pg_index WHERE indrelid = %s::regclass) "
                           "+ pg_stat_get_xact_tuples_returned(%s::regclass) "
                           "+ pg_stat_get_xact_tuples_fetched(%s::regclass)", [NODE_RUNS] * 3)
            return int(cursor.fetchone()[0])


@mock.patch("executions.services.node_run.INLINE_SECONDS", -1)  # each step here, one at a time
def test_it_reads_as_much_for_a_state_machines_step_after_hundreds_of_steps_as_after_a_few(tmp_path, settings):
    settings.WORKSPACE_ROOT = tmp_path
    import_documents([AGENT, LOOP])
    execution = execution_start(workflow=Workflow.objects.get(workflow_id="step_loop"), input={})

    def step() -> int:
        pending = execution.node_runs.get(status="pending")
        with Work() as work:
            assert node_run_execute(node_run_id=pending.pk, worker="w") == "success"
        return work.done

    early = [step() for _ in range(8)][-2:]  # a step of each node, once the caches are warm
    for _ in range(400):
        step()
    late = [step() for _ in range(2)]

    assert execution.node_runs.count() == 411
    received = execution.node_runs.filter(node_id="answer").order_by("-sequence")[0].resolved_inputs
    assert next(item for item in received if item["name"] == "question")["content"] == {"ok": True}
    for before, after in zip(early, late, strict=True):
        assert after <= before * 1.1, f"a step read {after} after 400 steps, {before} after 6"




@mock.patch("executions.services.node_run.INLINE_SECONDS", -1)
def test_it_counts_the_steps_of_a_run_whose_node_runs_were_not_numbered(tmp_path, settings):
    """A run that began before steps were numbered stops at max_steps all the same."""
    settings.WORKSPACE_ROOT = tmp_path
    import_documents([AGENT, {**LOOP, "limits": {"max_steps": 5, "max_wall_seconds": 3600}}])
    execution = execution_start(workflow=Workflow.objects.get(workflow_id="step_loop"), input={})
    for _ in range(2):
        node_run_execute(node_run_id=execution.node_runs.get(status="pending").pk, worker="w")
    execution.node_runs.update(step=None)
    while execution.node_runs.filter(status="pending").exists():
        node_run_execute(node_run_id=execution.node_runs.get(status="pending").pk, worker="w")

    execution.refresh_from_db()
    assert (execution.status, execution.ended_reason) == ("failed", "max_steps: the run reached its bound of 5 steps")
    assert list(execution.node_runs.order_by("sequence").values_list("step", flat=True)) == [None, None, None, 4, 5]
