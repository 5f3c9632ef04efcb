import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agents.models import Agent, DeriveRequest
from core.errors import IllegalTransition
from core.status_writes import (
    Touch,
    Under,
    change_status,
    claim_row,
    lock_row,
    lock_values,
    touch_row,
    transition,
    transition_all,
    transition_under,
)
from executions.models import Execution, NodeRun
from workflows.models import Workflow

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_it_claims_the_row_so_only_one_of_two_movers_wins():
    from core.documents import import_documents

    import_documents([{"agent_id": "a", "name": "A"}, {"workflow_id": "w", "name": "W", "topology": "seq", "nodes": [{"id": "n", "agent_ref": "a"}]}])
    execution = Execution.objects.create(execution_id="e1", workflow=Workflow.objects.get(workflow_id="w"))
    first, second = Execution.objects.get(pk=execution.pk), Execution.objects.get(pk=execution.pk)
    change_status(first, Execution.STATES, "running")
    with pytest.raises(IllegalTransition) as caught:
        change_status(second, Execution.STATES, "running")
    assert caught.value.code == "CONFLICT"
    assert Execution.objects.get(pk=execution.pk).status == "running"


def _run(status="pending", **fields):
    from core.documents import import_documents

    import_documents([{"agent_id": "a", "name": "A"},
                      {"workflow_id": "w", "name": "W", "topology": "seq", "nodes": [{"id": "n", "agent_ref": "a"}]}])
    execution = Execution.objects.create(execution_id="e1", workflow=Workflow.objects.get(workflow_id="w"),
                                         status="running")
    return NodeRun.objects.create(execution=execution, node_id="n", agent=Agent.objects.get(agent_id="a"),
                                  status=status, **fields)


@pytest.mark.django_db
def test_it_moves_a_row_that_is_in_one_of_the_from_statuses():
    run = _run("running", worker="w1")
    assert transition(NodeRun.objects.filter(worker="w1"), run.pk, ["running"], "failed", error="boom") == 1
    run.refresh_from_db()
    assert (run.status, run.error) == ("failed", "boom")


@pytest.mark.django_db
def test_it_touches_no_row_when_the_status_moved_on():
    run = _run("running", worker="w1")
    assert transition(NodeRun, run.pk, "running", "success", output={"a": 1}) == 1
    assert transition(NodeRun, run.pk, "running", "failed", error="late") == 0
    run.refresh_from_db()
    assert (run.status, run.output, run.error) == ("success", {"a": 1}, "")


@pytest.mark.django_db
def test_it_touches_no_row_of_another_claim():
    run = _run("running", worker="w1")
    assert transition(NodeRun.objects.filter(worker="w2"), run.pk, "running", "pending", worker="") == 0
    assert transition(NodeRun, run.pk, "running", "pending", where={"worker": "w2"}, worker="") == 0
    assert NodeRun.objects.get(pk=run.pk).status == "running"
    assert transition(NodeRun, run.pk, "running", "pending", where={"worker": "w1"}, worker="") == 1
    assert NodeRun.objects.get(pk=run.pk).worker == ""


@pytest.mark.django_db
def test_it_touches_a_row_only_in_its_status_adding_and_returning_as_the_orm_reads():
    run = _run()
    execution = Execution.objects.get(pk=run.execution_id)
    Execution.objects.filter(pk=execution.pk).update(cost=5, state={"seen": [1, "two"]})
    assert touch_row(Execution, execution.pk, "running", add={"cost": 7}, returning=("state", "updated_at"),
                     cost_complete=False) == ({"seen": [1, "two"]}, Execution.objects.get(pk=execution.pk).updated_at)
    assert Execution.objects.filter(pk=execution.pk, cost=12, cost_complete=False).exists()
    assert touch_row(Execution, execution.pk, "success", add={"cost": 1}) is None
    assert Execution.objects.get(pk=execution.pk).cost == 12


@pytest.mark.django_db
def test_it_refuses_an_illegal_move_naming_the_machine_from_and_to_and_writes_nothing():
    run = _run("running")
    with pytest.raises(IllegalTransition, match="node run: cannot go from 'success' to 'pending'"):
        transition(NodeRun, run.pk, ["running", "success"], "pending")
    with pytest.raises(IllegalTransition, match="execution: cannot go from 'success' to 'running'"):
        transition_all(Execution.objects.all(), ["success"], "running")
    with pytest.raises(IllegalTransition, match="derive request: unknown status 'done'"):
        transition(DeriveRequest, 1, "pending", "done")
    with pytest.raises(IllegalTransition, match="node run: cannot go from 'success' to 'running'"):
        claim_row(NodeRun, run.pk, "success", "running")
    assert NodeRun.objects.get(pk=run.pk).status == "running"


@pytest.mark.django_db
def test_it_refuses_to_move_a_model_that_declares_no_state_machine_naming_it():
    workflow = Workflow.objects.create(workflow_id="w", name="W", topology="seq")
    for move in (lambda: transition(Workflow, workflow.pk, "draft", "active"),
                 lambda: transition_all(Workflow.objects.all(), "draft", "active"),
                 lambda: claim_row(Workflow, workflow.pk, "draft", "active")):
        with pytest.raises(TypeError, match="Workflow declares no state machine"):
            move()


@pytest.mark.django_db
def test_it_moves_every_row_of_a_queryset_in_the_from_statuses_only():
    first = _run("pending")
    running = NodeRun.objects.create(execution=first.execution, node_id="n", agent=first.agent, status="running")
    assert transition_all(first.execution.node_runs, "pending", "cancelled") == 1
    assert dict(NodeRun.objects.values_list("pk", "status")) == {first.pk: "cancelled", running.pk: "running"}


@pytest.mark.django_db
def test_it_stamps_updated_at_on_models_that_have_one():
    run = _run()
    before = Execution.objects.get(pk=run.execution_id).updated_at
    assert transition(Execution, run.execution_id, "running", "escalated", escalation={"node_id": "n"}) == 1
    assert Execution.objects.get(pk=run.execution_id).updated_at > before


@pytest.mark.django_db
def test_it_claims_a_row_and_returns_it_as_stored_in_one_statement(django_assert_num_queries):
    from django.utils import timezone

    run = _run()
    now = timezone.now()
    with django_assert_num_queries(1):
        claimed = claim_row(NodeRun, run.pk, "pending", "running", worker="w1", started_at=now, heartbeat_at=now)
    assert (claimed.pk, claimed.status, claimed.worker, claimed.started_at, claimed.node_id) == (
        run.pk, "running", "w1", now, "n")
    assert claim_row(NodeRun, run.pk, "pending", "running", worker="w2") is None
    assert NodeRun.objects.get(pk=run.pk).worker == "w1"


@pytest.mark.django_db
def test_it_moves_a_row_under_the_lock_of_another_only_while_that_one_is_in_its_status(django_assert_num_queries):
    from django.db import connection

    run = _run("running", worker="w1")
    Execution.objects.filter(pk=run.execution_id).update(state={"k": 1})
    touch = Touch(Execution, run.execution_id, "running", add={"cost": 3}, returning=("state",))
    with django_assert_num_queries(1 if connection.vendor == "postgresql" else 2):
        assert transition_under(touch, NodeRun, run.pk, "running", "success", where={"worker": "w1"},
                                output={"a": 1}, model="m") == Under(({"k": 1},), 1)
    assert NodeRun.objects.filter(pk=run.pk, status="success", output={"a": 1}, model="m").exists()
    assert transition_under(touch, NodeRun, run.pk, "running", "failed") == Under(({"k": 1},), 0)  # moved on: touched only
    assert Execution.objects.get(pk=run.execution_id).cost == 6
    other = NodeRun.objects.create(execution=run.execution, node_id="n", agent=run.agent, status="running")
    Execution.objects.filter(pk=run.execution_id).update(status="cancelled")
    assert transition_under(touch, NodeRun, other.pk, "running", "success") == Under(None, 0)
    assert NodeRun.objects.get(pk=other.pk).status == "running"
    assert Execution.objects.get(pk=run.execution_id).cost == 6


@pytest.mark.django_db
def test_it_says_whether_other_rows_under_the_touched_one_are_still_in_the_statuses_asked(django_assert_num_queries):
    from django.db import connection

    run = _run("running", worker="w1")
    other = NodeRun.objects.create(execution=run.execution, node_id="m", agent=run.agent, status="pending")
    touch = Touch(Execution, run.execution_id, "running", add={"cost": 2})
    active = ("execution", ("pending", "running", "waiting"))
    with django_assert_num_queries(1 if connection.vendor == "postgresql" else 3):
        stored = transition_under(touch, NodeRun, run.pk, "running", "success", where={"worker": "w1"}, others=active,
                                  output={"a": 1})
    assert stored == Under((), 1, True)  # the other run is pending
    assert NodeRun.objects.get(pk=run.pk).status == "success"
    transition(NodeRun, other.pk, "pending", "cancelled")
    third = NodeRun.objects.create(execution=run.execution, node_id="n", agent=run.agent, status="running")
    # Itself still running as the statement began: not counted among the others.
    assert transition_under(touch, NodeRun, third.pk, "running", "failed", others=active) == Under((), 1, False)
    assert Execution.objects.get(pk=run.execution_id).cost == 4


@pytest.mark.django_db(transaction=True)
def test_it_locks_a_row_by_writing_to_it_inside_a_transaction_only():
    from django.db import connection, transaction
    from django.db.transaction import TransactionManagementError

    run = _run()
    with pytest.raises(TransactionManagementError):
        lock_row(Execution, run.execution_id)
    with transaction.atomic():
        version = _version(Execution, run.execution_id)
        locked = lock_row(Execution, run.execution_id)
        assert (locked.pk, locked.execution_id, locked.status) == (run.execution_id, "e1", "running")
        if connection.vendor == "postgresql":  # a new version of the row, as any write makes
            assert _version(Execution, run.execution_id) != version
        with pytest.raises(Execution.DoesNotExist):
            lock_row(Execution, run.execution_id + 1000)


@pytest.mark.django_db(transaction=True)
def test_it_locks_a_row_reading_only_the_columns_asked_for():
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    run = _run()
    Execution.objects.filter(pk=run.execution_id).update(cost=7, state={"draft": "x" * 10_000})
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        version = _version(Execution, run.execution_id)
        assert lock_values(Execution, run.execution_id, ("cost", "cost_reserved"), written=False) == (7, 0)
        if connection.vendor == "postgresql":  # locked without a new version of the row
            assert _version(Execution, run.execution_id) == version
            assert "FOR UPDATE" in queries[-2]["sql"]
        with pytest.raises(Execution.DoesNotExist):
            lock_values(Execution, run.execution_id + 1000, ("cost",))
    locking = [query["sql"] for query in queries if '"cost_reserved"' in query["sql"]]
    assert locking and all('"state"' not in sql for sql in locking)  # the large columns stay in the database


def _version(model, pk):
    """The row's version on PostgreSQL (the transaction that wrote it); None elsewhere."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as reading:
        reading.execute(f"SELECT xmin::text FROM {model._meta.db_table} WHERE id = %s", [pk])
        return reading.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_it_does_nothing_when_the_touched_row_was_written_while_it_waited_for_its_lock():
    """What `others` answers is as of the statement's start; a transaction that changed the
    other rows and wrote the touched row while the statement waited would make it stale."""
    import threading

    from django.db import connection, transaction

    if connection.vendor != "postgresql":
        pytest.skip("SQLite has one writer at a time: a statement never waits for a row's lock")
    run = _run("running", worker="w1")
    other = NodeRun.objects.create(execution=run.execution, node_id="m", agent=run.agent, status="running")
    locked, release = threading.Event(), threading.Event()

    def other_worker():  # stores the other run's result under the execution's lock, slowly
        try:
            with transaction.atomic():
                lock_row(Execution, run.execution_id)
                transition(NodeRun, other.pk, "running", "success")
                locked.set()
                release.wait(10)
        finally:
            connection.close()

    thread = threading.Thread(target=other_worker)
    thread.start()
    assert locked.wait(10)
    threading.Timer(0.5, release.set).start()  # commits while the statement below waits for the lock
    touch = Touch(Execution, run.execution_id, "running", add={"cost": 2})
    stored = transition_under(touch, NodeRun, run.pk, "running", "success", where={"worker": "w1"},
                              others=("execution", ("pending", "running", "waiting")))
    thread.join(10)
    assert stored == Under(None, 0)  # nothing done: asked again in a transaction, it sees the other run done
    assert NodeRun.objects.get(pk=run.pk).status == "running"
    assert Execution.objects.get(pk=run.execution_id).cost == 0
    stored = transition_under(touch, NodeRun, run.pk, "running", "success", where={"worker": "w1"},
                              others=("execution", ("pending", "running", "waiting")))
    assert stored == Under((), 1, False)


@pytest.mark.django_db
def test_it_claims_a_row_with_the_rows_it_points_to_as_select_related_reads_them(django_assert_num_queries):
    run = _run(resolved_inputs={"text": "é"})
    Execution.objects.filter(pk=run.execution_id).update(input={"topic": "tides"})
    expected = NodeRun.objects.select_related("execution__workflow").get(pk=run.pk)
    from django.db import connection

    with django_assert_num_queries(1 if connection.vendor == "postgresql" else 2):
        claimed = claim_row(NodeRun, run.pk, "pending", "running", select_related="execution__workflow", worker="w1")
        execution, workflow = claimed.execution, claimed.execution.workflow  # no query: attached
    assert (claimed.resolved_inputs, claimed.worker, claimed.status) == ({"text": "é"}, "w1", "running")
    assert (execution.pk, execution.input, execution.created_at, execution.status) == (
        expected.execution.pk, {"topic": "tides"}, expected.execution.created_at, "running")
    assert (workflow.pk, workflow.workflow_id, workflow.updated_at) == (
        expected.execution.workflow.pk, "w", expected.execution.workflow.updated_at)
    assert claim_row(NodeRun, run.pk, "pending", "running", select_related="execution__workflow") is None


# Where statuses of existing rows may be written, and rows locked: the one writer.
STATUS_MODULE = ROOT / "core" / "status_writes.py"
RAW_STATUS_UPDATE = re.compile(r"\bUPDATE\b.*\bSET\b.*\bstatus\b", re.IGNORECASE | re.DOTALL)
RAW_LOCK = re.compile(r"\bFOR\s+(NO\s+KEY\s+)?UPDATE\b", re.IGNORECASE)


def _status_writes(source: str) -> list[tuple[int, str]]:
    """Each place in the source that writes a `status` column other than by creating a row:
    an ORM `.update(status=…)` or `bulk_update([...], ["status"])`, a `save(update_fields=
    […"status"…])`, or raw SQL that sets a status; and each that locks a row other than by
    lock_row: `select_for_update`, or raw SQL's FOR UPDATE. As (line, what) in line order."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            keywords = {keyword.arg: keyword.value for keyword in node.keywords}
            named = [*node.args[1:2], keywords.get("fields"), keywords.get("update_fields")]
            if node.func.attr == "update" and "status" in keywords:
                found.append((node.lineno, ".update(status=…)"))
            elif node.func.attr in ("bulk_update", "save") and any(
                    isinstance(value, ast.Constant) and value.value == "status"
                    for names in named if names is not None for value in ast.walk(names)):
                found.append((node.lineno, f".{node.func.attr}(… 'status' …)"))
        if isinstance(node, ast.Attribute) and node.attr == "select_for_update":
            found.append((node.lineno, "select_for_update"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if RAW_STATUS_UPDATE.search(node.value):
                found.append((node.lineno, "raw UPDATE of a status"))
            if RAW_LOCK.search(node.value):
                found.append((node.lineno, "raw FOR UPDATE"))
        elif isinstance(node, ast.JoinedStr):
            text = "".join(part.value for part in node.values if isinstance(part, ast.Constant))
            if RAW_STATUS_UPDATE.search(text):
                found.append((node.lineno, "raw UPDATE of a status"))
            if RAW_LOCK.search(text):
                found.append((node.lineno, "raw FOR UPDATE"))
    return sorted(set(found))  # an f-string's parts are strings too


def test_it_is_the_one_place_that_changes_a_status_or_locks_a_row():
    skipped = {ROOT / name for name in (".venv", "tests", "node_modules")}
    writes = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in sorted(ROOT.rglob("*.py"))
        if path != STATUS_MODULE and not any(part in path.parents for part in skipped) and "migrations" not in path.parts
        for line, what in _status_writes(path.read_text())
    ]
    assert not writes, "statuses changed or rows locked outside core.status_writes (use transition, " \
                       "transition_all, claim_row, change_status or lock_row):\n" + "\n".join(writes)


def test_it_finds_every_kind_of_status_write_and_lock():
    """The scan above passes only if it would have seen a write: here, one of each kind."""
    sample = (
        'NodeRun.objects.filter(pk=1).update(status="failed")\n'
        'NodeRun.objects.bulk_update(runs, ["status", "error"])\n'
        'run.save(update_fields=["status"])\n'
        'cursor.execute("UPDATE t SET worker = %s, status = %s WHERE id = %s")\n'
        'cursor.execute(f"UPDATE {table} SET status = %s WHERE id = %s")\n'
        'NodeRun.objects.filter(status="running").update(heartbeat_at=now)\n'  # reads a status, writes none
        'run.save(update_fields=["output"])\n'
        'Execution.objects.select_for_update().get(pk=1)\n'
        'cursor.execute(f"SELECT * FROM {table} WHERE id = %s FOR UPDATE")\n'
        'rows = Execution.objects.select_for_update\n'
        'cursor.execute("SELECT 1 FROM t FOR NO KEY UPDATE")\n'
        'note = "for updates of the page"\n'  # prose, not a lock
    )
    assert _status_writes(sample) == [
        (1, ".update(status=…)"), (2, ".bulk_update(… 'status' …)"), (3, ".save(… 'status' …)"),
        (4, "raw UPDATE of a status"), (5, "raw UPDATE of a status"), (8, "select_for_update"),
        (9, "raw FOR UPDATE"), (10, "select_for_update"), (11, "raw FOR UPDATE")]


@pytest.mark.django_db(transaction=True)
def test_it_writes_a_node_runs_execution_when_the_run_starts_or_stops_being_one_still_to_end():
    """What transition_under's `others` answers holds only if every such move writes the
    execution's row (core.state_machine.Guard): whoever makes it, in whatever way."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("SQLite lets one transaction write at a time: no question can miss a move")
    run = _run("pending", worker="")
    execution = run.execution_id
    before = _version(Execution, execution)
    assert claim_row(NodeRun, run.pk, "pending", "running", worker="w1") is not None
    assert transition(NodeRun, run.pk, "running", "pending", worker="") == 1  # given back: still to end
    assert _version(Execution, execution) == before, "a move among the statuses still to end writes nothing more"
    assert transition(NodeRun, run.pk, "pending", "cancelled") == 1
    assert _version(Execution, execution) != before
    assert NodeRun.objects.get(pk=run.pk).status == "cancelled"

    waiting = NodeRun.objects.create(execution_id=execution, node_id="g", agent=run.agent, status="waiting")
    before = _version(Execution, execution)
    assert transition_all(NodeRun.objects.filter(execution_id=execution), ("pending", "waiting"), "cancelled") == 1
    assert _version(Execution, execution) != before
    assert NodeRun.objects.get(pk=waiting.pk).status == "cancelled"

    third = NodeRun.objects.create(execution_id=execution, node_id="h", agent=run.agent, status="running",
                                   worker="w2")
    before = _version(Execution, execution)
    from django.db import models

    assert transition(NodeRun, third.pk, "running", "failed", where={"worker": "w2"},
                      attempt=models.F("attempt") + 1) == 1  # the ORM's way, for an expression
    assert _version(Execution, execution) != before
    assert transition(NodeRun, third.pk, "running", "success") == 0  # moved on: nothing


@pytest.mark.django_db
def test_it_refuses_a_claim_across_a_guard():
    run = _run("running", worker="w1")
    with pytest.raises(IllegalTransition, match="a claim cannot move a row from 'running' to 'success'"):
        claim_row(NodeRun, run.pk, "running", "success")
    assert NodeRun.objects.get(pk=run.pk).status == "running"


@pytest.mark.django_db(transaction=True)
def test_it_locks_a_row_by_its_columns_and_without_writing_it_when_asked():
    from django.db import connection, transaction

    run = _run()
    with transaction.atomic():
        assert lock_row(NodeRun, run.pk, execution=run.execution_id).pk == run.pk
        assert lock_row(NodeRun, run.pk, missing_ok=True, execution=run.execution_id + 1000) is None
        assert lock_row(Agent, agent_id="a").pk == run.agent_id
        with pytest.raises(Agent.DoesNotExist, match="agent_id='nobody'"):
            lock_row(Agent, agent_id="nobody")
        with pytest.raises(TypeError, match="name the row to lock"):
            lock_row(Agent)
    with transaction.atomic():
        before = _version(Execution, run.execution_id)
        locked = lock_row(Execution, run.execution_id, written=False)
        assert (locked.pk, locked.status) == (run.execution_id, "running")
        assert _version(Execution, run.execution_id) == before
    if connection.vendor == "postgresql":  # held all the same: another transaction cannot take it meanwhile
        import threading

        taken = []
        with transaction.atomic():
            lock_row(Execution, run.execution_id, written=False)

            def other():
                try:
                    with connection.cursor() as cursor:
                        cursor.execute("SET lock_timeout = '200ms'")
                        try:
                            with transaction.atomic():
                                lock_row(Execution, run.execution_id)
                                taken.append(True)
                        except Exception as error:  # the lock timed out
                            taken.append(type(error).__name__)
                finally:
                    connection.close()

            thread = threading.Thread(target=other)
            thread.start()
            thread.join(10)
        assert taken == ["OperationalError"]


def test_it_exits_non_zero_with_the_problem_when_an_import_fails(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "SWITCHYARD_DATA_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    bad = json.dumps({"agent_id": "a", "name": "A", "type": "robot"})
    result = subprocess.run(
        [sys.executable, "manage.py", "import_document", "-"], cwd=ROOT, env=env, input=bad, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert "document (agent 'a').type: 'robot' is not one of ['meta', 'business']; nothing was imported" in result.stderr


@pytest.mark.django_db(transaction=True)
def test_it_claims_without_waiting_for_the_disk_only_in_the_claims_own_transaction(django_assert_num_queries):
    from django.db import connection, transaction

    run = _run()
    with django_assert_num_queries(1 if connection.vendor == "postgresql" else 2):
        claimed = claim_row(NodeRun, run.pk, "pending", "running", select_related="execution__workflow",
                            synchronous=False, worker="w1")
    assert (claimed.worker, claimed.execution.workflow.workflow_id) == ("w1", "w")
    assert NodeRun.objects.get(pk=run.pk).status == "running"  # committed, and seen by others at once
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")  # off was the claim's transaction's alone
            assert cursor.fetchone() == ("on",)
        with transaction.atomic():  # inside a transaction of the caller's, the claim leaves its commit alone
            claim_row(NodeRun, run.pk, "running", "pending", synchronous=False)
            with connection.cursor() as cursor:
                cursor.execute("SHOW synchronous_commit")
                assert cursor.fetchone() == ("on",)
