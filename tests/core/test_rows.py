"""Rows inserted and read back with SQL built once per shape, as the ORM would."""
import pytest

from agents.models import Agent
from core.documents import import_documents
from core.rows import insert_rows
from executions.models import Execution, NodeRun
from workflows.models import Workflow


@pytest.mark.django_db
@pytest.mark.parametrize("count", [1, 3, 1900])  # 1,900: more parameters than SQLite takes in one statement
def test_it_inserts_rows_as_bulk_create_does_setting_their_keys(count):
    import_documents([{"agent_id": "a", "name": "A"},
                      {"workflow_id": "w", "name": "W", "topology": "seq", "nodes": [{"id": "n", "agent_ref": "a"}]}])
    execution = Execution.objects.create(execution_id="e1", workflow=Workflow.objects.get(workflow_id="w"))
    agent = Agent.objects.get(agent_id="a")
    runs = insert_rows([NodeRun(execution=execution, node_id=f"n{i}", agent=agent, sequence=i, output={"i": [i]},
                                status="pending") for i in range(count)])
    assert all(run.pk is not None and not run._state.adding for run in runs)
    stored = {run.pk: (run.node_id, run.sequence, run.output, run.status, run.worker, run.calls)
              for run in NodeRun.objects.filter(execution=execution)}
    assert stored == {run.pk: (f"n{i}", i, {"i": [i]}, "pending", "", []) for i, run in enumerate(runs)}
    assert insert_rows([]) == []


@pytest.mark.django_db
def test_it_prepares_a_statement_the_second_time_a_connection_runs_it_on_postgresql():
    from django.db import connection

    from core.rows import cursor

    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's")
    statement = "SELECT COUNT(*) FROM executions_noderun WHERE node_id = %s"
    for run in range(2):
        with cursor() as reading:
            reading.execute(statement, [f"n{run}"])
            assert reading.fetchone() == (0,)
    with connection.cursor() as reading:
        reading.execute("SELECT statement FROM pg_prepared_statements WHERE statement LIKE %s", ["%node_id = $1%"])
        assert reading.fetchall() == [("SELECT COUNT(*) FROM executions_noderun WHERE node_id = $1",)]
