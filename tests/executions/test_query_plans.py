"""How PostgreSQL plans the queries behind a run's inspection and the list of runs, over a run
of 100,000 node runs among 100,000 other runs (the pages-at-scale benchmark).

Every answer `benchmark_pages` measures is requested through the test client as a viewer;
each captured statement that reads the node runs is explained (`EXPLAIN (FORMAT JSON)`, not
run again) and must neither scan the whole node-run table nor run a subplan once per row:
either is a cost that grows with every node run of every run stored. The answers with a
query target must keep to it. The rows are written by `INSERT … SELECT … FROM
generate_series` (small records: what is judged is the plan, not the sizes) and the tables
vacuumed and analysed, as autovacuum would have done, before anything is planned.
"""
import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Model
from django.test import Client
from django.test.utils import CaptureQueriesContext

from benchmarks.large_runs import LOOP, loop_workflow_create
from benchmarks.pages import LIST_ANSWERS, OPTIONAL, RUN_ANSWERS, TARGETS, request
from executions.models import Execution, NodeRun

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the plans judged are PostgreSQL's"),
    # VACUUM cannot run inside a transaction: the rows are committed, and flushed afterwards.
    pytest.mark.django_db(transaction=True),
]

RUN_SIZE = 100_000
OTHER_RUNS = 100_000  # light runs for the list, LIGHT_RUN_SIZE node runs each
LIGHT_RUN_SIZE = 3
NODE_RUNS = "executions_noderun"
ANSWER_SECONDS = 120  # an answer still running after this is stopped (and fails the test)


def insert_select(model: type[Model], expressions: dict[str, str], source: str, params: tuple = (),
                  source_params: tuple = ()) -> None:
    """INSERT INTO the model's table SELECT the SQL `expressions` (by column, their
    placeholders filled from `params`) FROM `source`; every other column that cannot be NULL
    takes its field's default (the database computes generated ones), so that a column
    added later does not break the insert."""
    defaults = {field.column: field.get_db_prep_save(field.get_default(), connection)
                for field in model._meta.concrete_fields
                if not (field.primary_key or field.null or field.generated or field.column in expressions)}
    columns = [*expressions, *defaults]
    values = [*expressions.values(), *["%s"] * len(defaults)]
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {model._meta.db_table} ({', '.join(columns)}) "
                       f"SELECT {', '.join(values)} FROM {source}", [*params, *defaults.values(), *source_params])


def write_runs() -> dict[str, Any]:
    """The light runs (with their node runs), then the run of RUN_SIZE node runs, newest."""
    workflow = loop_workflow_create(workflow_id="plans_loop", actor="test")
    other = loop_workflow_create(workflow_id="plans_other", actor="test")
    nodes = "ARRAY[" + ", ".join(f"'{node_id}'" for node_id in LOOP) + "]"
    insert_select(Execution, {
        "execution_id": "'plans_run_' || g",
        "workflow_id": "CASE WHEN mod(g, 4) = 0 THEN %s ELSE %s END",
        "status": "(ARRAY['success', 'success', 'success', 'failed', 'cancelled'])[1 + mod(g, 5)]",
        "started_at": "now() - (%s - g) * interval '1 minute'",
        "completed_at": "now() - (%s - g) * interval '1 minute' + interval '40 seconds'",
        "created_at": "now() - (%s - g) * interval '1 minute'",
        "cost": "g * 1000",
    }, "generate_series(1, %s) AS g", (other.pk, workflow.pk, OTHER_RUNS, OTHER_RUNS, OTHER_RUNS), (OTHER_RUNS,))
    insert_select(NodeRun, {
        "execution_id": "e.id",
        "node_id": f"({nodes})[s]",
        "agent_id": "a.id",
        "status": "'success'",
        "sequence": "s",
        "started_at": "e.started_at + s * interval '10 seconds'",
        "completed_at": "e.started_at + s * interval '10 seconds' + interval '2 seconds'",
        "duration_ms": "2000",
        "output": "jsonb_build_object('text', 'output ' || s)",
    }, f"executions_execution e CROSS JOIN generate_series(1, {LIGHT_RUN_SIZE}) AS s "
       f"JOIN workflows_workflow w ON w.id = e.workflow_id "
       f"JOIN agents_agent a ON a.agent_id = w.workflow_id || '_' || ({nodes})[s]")

    execution = Execution.objects.create(execution_id="plans_large", workflow=workflow, status="success",
                                         input={"topic": "scale"})
    agents = "ARRAY[" + ", ".join(f"'plans_loop_{node_id}'" for node_id in LOOP) + "]"
    insert_select(NodeRun, {
        "execution_id": "%s",
        "node_id": f"({nodes})[1 + mod(g - 1, {len(LOOP)})]",
        "agent_id": f"(SELECT id FROM agents_agent WHERE agent_id = ({agents})[1 + mod(g - 1, {len(LOOP)})])",
        "status": "CASE WHEN mod(g, 97) = 0 THEN 'failed' ELSE 'success' END",
        "error_code": "CASE WHEN mod(g, 97) = 0 THEN 'BACKEND_ERROR' ELSE '' END",
        "sequence": "g",
        "started_at": "now() - (%s - g) * interval '250 milliseconds'",
        "completed_at": "now() - (%s - g) * interval '250 milliseconds' + interval '200 milliseconds'",
        "duration_ms": "200",
        "tokens_in": "300",
        "tokens_out": "100",
        "output": "jsonb_build_object('text', 'output ' || g)",
        "decision": f"jsonb_build_object('action', 'node', 'node_id', ({nodes})[1 + mod(g, {len(LOOP)})])",
    }, "generate_series(1, %s) AS g", (execution.pk, RUN_SIZE, RUN_SIZE), (RUN_SIZE,))
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    size = execution.node_runs.count()
    return {"id": execution.execution_id, "last": size - 50, "node": LOOP[1],
            "pk": execution.node_runs.get(sequence=size // 2).pk,
            "workflow": other.workflow_id, "status": "failed", "size": size}


def plan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", ()):
        yield from plan_nodes(child)


def plan_problems(sql: str) -> list[str]:
    """What is wrong with the plan of `sql`: a sequential scan of the node runs, a subplan
    (run once per row of the node above it)."""
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}")
        (document,) = cursor.fetchone()
    plan = (json.loads(document) if isinstance(document, str) else document)[0]["Plan"]
    problems = []
    for node in plan_nodes(plan):
        shown = json.dumps({key: value for key, value in node.items() if key != "Plans"})
        if node["Node Type"] == "Seq Scan" and node.get("Relation Name") == NODE_RUNS:
            problems.append(f"a Seq Scan on {NODE_RUNS}: {shown}")
        if node.get("Parent Relationship") == "SubPlan":
            problems.append(f"a SubPlan, run once per row: {shown}")
    return problems


def test_the_answers_about_a_run_of_100000_node_runs_read_node_runs_by_index_without_subplans():
    values = write_runs()
    assert values["size"] == RUN_SIZE
    client = Client()
    client.force_login(get_user_model().objects.create_user("plans-viewer"))  # a viewer: no role

    failures, skipped, explained = [], [], 0
    for key, label, path in (*RUN_ANSWERS, *LIST_ANSWERS):
        url = path.format(**values)
        with CaptureQueriesContext(connection) as captured:
            try:
                response = request(client, url, ANSWER_SECONDS)[0]
            except Exception as error:  # noqa: BLE001 - the queries it made are judged all the same
                response = None
                failures.append(f"{label} — GET {url}: {error!r}")
        if response is not None and response.status_code == 404 and key in OPTIONAL:
            skipped.append(label)
            continue
        if response is not None and response.status_code != 200:
            failures.append(f"{label} — GET {url} answered {response.status_code}")
        target = TARGETS.get(key)
        if target and target.max_queries is not None and len(captured) > target.max_queries:
            failures.append(f"{label} — GET {url} made {len(captured)} queries, more than its target of "
                            f"{target.max_queries}")
        for query in captured.captured_queries:
            if NODE_RUNS not in query["sql"]:
                continue
            explained += 1
            for problem in plan_problems(query["sql"]):
                failures.append(f"{label} — GET {url}\n  SQL: {query['sql']}\n  {problem}")

    assert explained, "no answer read the node runs: nothing was judged"
    assert not failures, f"{len(failures)} problems ({', '.join(skipped) or 'nothing'} skipped: not on this " \
                         f"branch):\n\n" + "\n\n".join(failures)
