"""`db_query` references through the knowledge registry (data-transfer-protocol §2.4)."""
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.db import connection

from engine.context import errors
from engine.context.errors import RefError
from engine.context.resolution import CappedRows
from knowledge.models import KnowledgeAtom, Paper, QualityRecord, Relation
from knowledge.registry import MAX_LIMIT, run_db_query, tables

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 2, 3, 10, 30, tzinfo=UTC)
INJECTION = "x'; DROP TABLE knowledge_knowledgeatom; --"

# The rows every operator is checked against, with plain-Python expectations.
ATOMS = [
    {"atom_id": "a1", "paper": "paper_a", "atom_type": "claim", "content": "Attention is all you need.", "confidence": 0.5,
     "source_section": "Abstract"},
    {"atom_id": "a2", "paper": "paper_a", "atom_type": "evidence", "content": "28.4 BLEU on WMT 2014 English-German.",
     "confidence": 1.0, "source_section": "Results"},
    {"atom_id": "a3", "paper": "paper_a", "atom_type": "methodology", "content": "Scaled dot-product attention, 100% parallel.",
     "confidence": 0.75, "source_section": "attention"},
    {"atom_id": "a4", "paper": "paper_b", "atom_type": "background", "content": "Recurrent models are sequential_by_design.",
     "confidence": 0.0, "source_section": "Zebra"},
    {"atom_id": "a5", "paper": "paper_b", "atom_type": "claim", "content": "", "confidence": 0.99, "source_section": ""},
    {"atom_id": "B6", "paper": "paper_b", "atom_type": "claim", "content": INJECTION, "confidence": 0.5,
     "source_section": "Ünïcode"},
]
PAPERS = [
    {"paper_id": "paper_a", "title": "Attention Is All You Need", "year": 2017, "authors": ["Vaswani"]},
    {"paper_id": "paper_b", "title": "Undated notes", "year": None, "authors": []},
    {"paper_id": "paper_c", "title": "BERT", "year": 2018, "authors": ["Devlin", "Chang"]},
]


def python_matches(operator, actual, value):
    """What the condition means in plain Python; NULL (None) never compares."""
    if operator == "eq":
        return actual == value
    if operator == "ne":
        return actual != value
    if operator == "in":
        return actual in value
    if operator == "contains":
        return actual is not None and value in actual
    if actual is None:
        return False
    return {"gt": actual > value, "gte": actual >= value, "lt": actual < value, "lte": actual <= value}[operator]


@pytest.fixture
def rows():
    papers = {row["paper_id"]: Paper.objects.create(created_at=T0, domain="deep_learning", **row) for row in PAPERS}
    for index, row in enumerate(ATOMS):
        KnowledgeAtom.objects.create(
            **{**row, "paper": papers[row["paper"]]}, domain="deep_learning", created_at=T0 + timedelta(days=index)
        )
    return papers


def query(table, *conditions, **options):
    return run_db_query({"ref_type": "db_query", "table": table, "conditions": list(conditions), **options})


def ids(rows, key="atom_id"):
    return [row[key] for row in rows]


def refused(reference, code, **kwargs):
    with pytest.raises(RefError) as caught:
        run_db_query({"ref_type": "db_query", **reference}, **kwargs)
    assert caught.value.code == code, caught.value.message
    return caught.value.message


@pytest.mark.parametrize(
    "field,operator,value",
    [
        ("confidence", "gt", 0),
        ("confidence", "gte", 0),
        ("confidence", "eq", 1),
        ("confidence", "eq", 1.0),
        ("confidence", "eq", 0.5),
        ("confidence", "ne", 0.5),
        ("confidence", "gte", 0.5),
        ("confidence", "gt", 0.5),
        ("confidence", "lt", 1),
        ("confidence", "lte", 0.75),
        ("confidence", "in", [0.5, 1]),
        ("confidence", "in", []),
        ("confidence", "lt", 10**400),
        ("confidence", "gt", -(10**400)),
        ("confidence", "gte", 10**30),
        ("confidence", "eq", 10**400),
        ("confidence", "ne", 10**400),
        ("atom_type", "eq", "claim"),
        ("atom_type", "ne", "claim"),
        ("atom_type", "in", ["claim", "evidence"]),
        ("paper_id", "eq", "paper_b"),
        ("paper_id", "ne", "paper_b"),
        ("content", "contains", "attention"),
        ("content", "contains", "Attention"),
        ("content", "contains", "100%"),
        ("content", "contains", "%"),
        ("content", "contains", "_by_"),
        ("content", "contains", "e_b"),
        ("content", "contains", ""),
        ("content", "eq", ""),
        ("content", "eq", 5),
        ("content", "ne", 5),
        ("content", "in", [5, True, "Attention is all you need."]),
        ("source_section", "lt", "a"),
        ("source_section", "gt", "Z"),
        ("source_section", "gte", "Zebra"),
        ("source_section", "lte", ""),
        ("atom_id", "gt", "a"),
        ("atom_id", "lt", "a3"),
    ],
    ids=lambda value: repr(value)[:24],
)
def test_it_matches_each_operator_as_plain_python_does(rows, field, operator, value):
    result = query("knowledge_atoms", {"field": field, "operator": operator, "value": value}, order_by={"field": "atom_id"})
    public = [dict(row, paper_id=row["paper"]) for row in ATOMS]
    expected = sorted(row["atom_id"] for row in public if python_matches(operator, row[field], value))
    assert ids(result) == expected


@pytest.mark.parametrize(
    "operator,value",
    [
        ("eq", 2017), ("eq", 2017.0), ("eq", 2017.5), ("eq", None),
        ("ne", 2017), ("ne", 2017.0), ("ne", 2017.5), ("ne", None), ("ne", "2017"),
        ("in", [2017, None]), ("in", [2018]), ("in", [2017.5, 2018.0]),
        ("gt", 2016.5), ("gt", 2017), ("gte", 2017.5), ("gte", 2017), ("lt", 2017.5), ("lt", 2018), ("lte", 2017),
        ("lte", 2017.9), ("gt", -1), ("gte", -0.5), ("lt", 0), ("eq", -1), ("ne", -1),
        # beyond what the column holds: no overflow errors, and NULL still never compares
        ("eq", 1e300), ("ne", 10**30), ("lt", 1e300), ("lte", 2**63), ("gt", 2**40), ("gt", -(10**30)), ("lt", -(2**64)),
        ("in", [10**30, 2018]),
    ],
    ids=lambda value: repr(value)[:24],
)
def test_it_matches_integers_and_nulls_as_plain_python_does(rows, operator, value):
    result = query("papers", {"field": "year", "operator": operator, "value": value}, order_by={"field": "paper_id"})
    expected = sorted(p["paper_id"] for p in PAPERS if python_matches(operator, p["year"], value))
    assert ids(result, "paper_id") == expected


def test_it_counts_a_null_as_not_equal_to_a_value(rows):
    assert ids(query("papers", {"field": "year", "operator": "ne", "value": 2017}), "paper_id") == ["paper_b", "paper_c"]
    assert ids(query("papers", {"field": "year", "operator": "eq", "value": None}), "paper_id") == ["paper_b"]
    assert ids(query("papers", {"field": "year", "operator": "ne", "value": None}), "paper_id") == ["paper_a", "paper_c"]


def test_it_ands_the_conditions(rows):
    result = query(
        "knowledge_atoms",
        {"field": "paper_id", "operator": "eq", "value": "paper_b"},
        {"field": "atom_type", "operator": "in", "value": ["claim", "evidence"]},
        {"field": "confidence", "operator": "gt", "value": 0.6},
    )
    assert ids(result) == ["a5"]


def test_it_compares_datetimes_given_as_iso_strings(rows):
    after = query("knowledge_atoms", {"field": "created_at", "operator": "gte", "value": "2026-02-05T10:30:00Z"})
    assert ids(after) == ["a3", "a4", "a5", "B6"]
    exact = query("knowledge_atoms", {"field": "created_at", "operator": "eq", "value": "2026-02-03T11:30:00+01:00"})
    assert ids(exact) == ["a1"]
    naive_is_utc = query("knowledge_atoms", {"field": "created_at", "operator": "lt", "value": "2026-02-04T10:30:00"})
    assert ids(naive_is_utc) == ["a1"]
    assert query("knowledge_atoms", {"field": "created_at", "operator": "eq", "value": 5}) == []


def test_it_treats_bools_and_numbers_as_different_kinds():
    for index, passed in enumerate([True, False]):
        QualityRecord.objects.create(record_id=f"q{index}", target_type="atom", target_id="a1", score=1.0, passed=passed)
    assert ids(query("quality_records", {"field": "passed", "operator": "eq", "value": True}), "record_id") == ["q0"]
    assert ids(query("quality_records", {"field": "passed", "operator": "ne", "value": True}), "record_id") == ["q1"]
    assert query("quality_records", {"field": "passed", "operator": "eq", "value": 1}) == []
    assert query("quality_records", {"field": "score", "operator": "eq", "value": True}) == []
    assert ids(query("quality_records", {"field": "score", "operator": "eq", "value": 1}), "record_id") == ["q0", "q1"]


# -- select, order_by, limit ---------------------------------------------------------------


def test_it_returns_only_the_selected_fields_in_their_order(rows):
    result = query("knowledge_atoms", {"field": "atom_id", "operator": "eq", "value": "a2"}, select=["confidence", "paper_id", "atom_id"])
    assert result == [{"confidence": 1.0, "paper_id": "paper_a", "atom_id": "a2"}]
    assert list(result[0]) == ["confidence", "paper_id", "atom_id"]


def test_it_returns_every_public_field_as_json_when_select_is_absent(rows):
    [atom] = query("knowledge_atoms", {"field": "atom_id", "operator": "eq", "value": "a1"})
    assert atom == {
        "atom_id": "a1", "paper_id": "paper_a", "atom_type": "claim", "content": "Attention is all you need.",
        "confidence": 0.5, "domain": "deep_learning", "source_section": "Abstract", "created_at": "2026-02-03T10:30:00Z",
    }
    [paper] = query("papers", {"field": "paper_id", "operator": "eq", "value": "paper_c"})
    assert paper["authors"] == ["Devlin", "Chang"] and paper["year"] == 2018 and paper["created_at"] == "2026-02-03T10:30:00Z"


def test_it_orders_by_the_field_and_breaks_ties_by_primary_key(rows):
    descending = query("knowledge_atoms", order_by={"field": "confidence", "direction": "desc"})
    assert ids(descending) == ["a2", "a5", "a3", "a1", "B6", "a4"]  # a1 and B6 tie at 0.5: the older row first
    ascending = query("knowledge_atoms", order_by={"field": "confidence"})
    assert ids(ascending) == ["a4", "a1", "B6", "a3", "a5", "a2"]


def test_it_orders_text_by_code_point_as_python_does(rows):
    result = query("knowledge_atoms", order_by={"field": "source_section", "direction": "asc"}, select=["source_section"])
    assert [row["source_section"] for row in result] == sorted(row["source_section"] for row in ATOMS)
    result = query("knowledge_atoms", order_by={"field": "atom_id", "direction": "desc"}, select=["atom_id"])
    assert ids(result) == sorted((row["atom_id"] for row in ATOMS), reverse=True)


def test_it_puts_nulls_last_in_both_directions(rows):
    assert ids(query("papers", order_by={"field": "year"}), "paper_id") == ["paper_a", "paper_c", "paper_b"]
    assert ids(query("papers", order_by={"field": "year", "direction": "desc"}), "paper_id") == ["paper_c", "paper_a", "paper_b"]


def test_it_orders_by_primary_key_without_order_by(rows):
    assert ids(query("knowledge_atoms")) == [row["atom_id"] for row in ATOMS]


def test_it_limits_to_100_by_default_and_never_more_than_1000(rows):
    paper = rows["paper_a"]
    KnowledgeAtom.objects.bulk_create(
        KnowledgeAtom(atom_id=f"bulk_{n:04d}", paper=paper, atom_type="claim", content="c", confidence=0.6)
        for n in range(MAX_LIMIT + 5)
    )
    assert len(query("knowledge_atoms", select=["atom_id"])) == 100
    assert len(query("knowledge_atoms", select=["atom_id"], limit=3)) == 3
    capped = query("knowledge_atoms", select=["atom_id"], limit=10_000)
    assert isinstance(capped, CappedRows) and len(capped.rows) == MAX_LIMIT
    assert capped.record() == {"limit_requested": 10_000, "limit_applied": MAX_LIMIT, "rows_passed": MAX_LIMIT,
                               "rows_left_out": len(ATOMS) + 5}
    # A limit above the cap that leaves nothing out is no cut.
    assert len(query("knowledge_atoms", select=["atom_id"], limit=10_000,
                     conditions=[{"field": "paper_id", "operator": "eq", "value": "paper_b"}])) < MAX_LIMIT
    top = query("knowledge_atoms", select=["atom_id"], order_by={"field": "confidence", "direction": "desc"}, limit=2)
    assert ids(top) == ["a2", "a5"]


# -- errors ------------------------------------------------------------------------------


def test_it_denies_a_table_that_is_not_registered():
    message = refused({"table": "auth_user"}, errors.REF_PERMISSION_DENIED)
    assert "'auth_user'" in message
    assert "papers" in message and "knowledge_atoms" in message and "execution_logs" in message
    assert set(tables()) == {"papers", "knowledge_atoms", "relations", "quality_records", "execution_logs"}


@pytest.mark.parametrize(
    "reference,where",
    [
        ({"conditions": [{"field": "paper__title", "operator": "eq", "value": "x"}]}, "conditions[0]: field 'paper__title'"),
        ({"conditions": [{"field": "id", "operator": "eq", "value": 1}]}, "conditions[0]: field 'id'"),
        ({"select": ["atom_id", "pk"]}, "select[1]: field 'pk'"),
        ({"order_by": {"field": "paper__abstract"}}, "order_by: field 'paper__abstract'"),
        ({"order_by": {"field": "-confidence"}}, "order_by: field '-confidence'"),
    ],
)
def test_it_denies_fields_that_are_not_public(reference, where):
    message = refused({"table": "knowledge_atoms", **reference}, errors.REF_PERMISSION_DENIED)
    assert where in message and "'knowledge_atoms'" in message
    assert "allowed fields: atom_id, paper_id, atom_type, content, confidence, domain, source_section, created_at" in message


@pytest.mark.parametrize(
    "conditions,where",
    [
        ([{"field": "content", "operator": "like", "value": "%"}], "conditions[0] (content): unknown operator 'like'"),
        ([{"field": "atom_id", "operator": "eq", "value": "a"}, {"field": "atom_type", "operator": "in", "value": "claim"}],
         "conditions[1] (atom_type): in needs a list"),
        ([{"field": "confidence", "operator": "gt", "value": None}], "conditions[0] (confidence): gt needs a number or a string"),
        ([{"field": "confidence", "operator": "lte", "value": [1]}], "conditions[0] (confidence): lte needs a number or a string"),
        ([{"field": "confidence", "operator": "gte", "value": True}], "conditions[0] (confidence): gte needs a number or a string"),
        ([{"field": "confidence", "operator": "lt", "value": {"$gt": 0}}], "conditions[0] (confidence): lt needs a number"),
        ([{"field": "content", "operator": "contains", "value": 5}], "conditions[0] (content): contains needs a string"),
        ([{"field": "confidence", "operator": "contains", "value": "5"}], "conditions[0] (confidence): contains works on text"),
        ([{"field": "created_at", "operator": "gt", "value": "yesterday"}], "conditions[0] (created_at): 'yesterday' is not an ISO"),
        ([{"field": "confidence", "operator": "gt", "value": float("nan")}], "conditions[0] (confidence): nan is not a finite"),
        ([{"field": "atom_id", "operator": "eq"}], "conditions[0]: a condition is an object"),
        (["atom_id = 'a1'"], "conditions[0]: a condition is an object"),
        ({"field": "atom_id", "operator": "eq", "value": "a1"}, "conditions: a list"),
    ],
)
def test_it_refuses_a_bad_condition_naming_its_index_and_field(rows, conditions, where):
    message = refused({"table": "knowledge_atoms", "conditions": conditions}, errors.REF_FILTER_ERROR)
    assert message.startswith(where), message


def test_it_refuses_filtering_on_a_json_field(rows):
    message = refused({"table": "papers", "conditions": [{"field": "authors", "operator": "eq", "value": []}]},
                      errors.REF_FILTER_ERROR)
    assert "conditions[0] (authors)" in message


@pytest.mark.parametrize(
    "reference",
    [
        {},
        {"table": ["knowledge_atoms"]},
        {"table": "knowledge_atoms", "select": "atom_id"},
        {"table": "knowledge_atoms", "select": []},
        {"table": "knowledge_atoms", "order_by": "confidence"},
        {"table": "knowledge_atoms", "order_by": {"field": "confidence", "direction": "DESC; DROP TABLE x"}},
        {"table": "knowledge_atoms", "limit": 0},
        {"table": "knowledge_atoms", "limit": "10"},
        {"table": "knowledge_atoms", "limit": True},
        {"table": "papers", "order_by": {"field": "authors"}},
    ],
)
def test_it_refuses_a_malformed_reference_as_a_format_error(reference):
    refused(reference, errors.REF_FORMAT_ERROR)


def test_it_keeps_sql_looking_strings_as_values(rows):
    before = KnowledgeAtom.objects.count()
    for operator, value in [("eq", INJECTION), ("contains", "'; DROP TABLE"), ("in", [INJECTION]), ("gt", INJECTION)]:
        result = query("knowledge_atoms", {"field": "content", "operator": operator, "value": value})
        assert ids(result) == [row["atom_id"] for row in ATOMS if python_matches(operator, row["content"], value)]
    assert ids(query("knowledge_atoms", {"field": "content", "operator": "eq", "value": INJECTION})) == ["B6"]
    assert query("knowledge_atoms", {"field": "atom_id", "operator": "eq", "value": "x' OR '1'='1"}) == []
    assert query("knowledge_atoms", {"field": "atom_id", "operator": "in", "value": ["a1') OR 1=1 --"]}) == []
    assert len(query("knowledge_atoms", {"field": "atom_id", "operator": "ne", "value": INJECTION})) == len(ATOMS)
    for reference in (
        {"table": "knowledge_atoms; DROP TABLE knowledge_knowledgeatom"},
        {"table": "knowledge_atoms", "select": ["atom_id FROM knowledge_knowledgeatom; DROP TABLE knowledge_paper; --"]},
        {"table": "knowledge_atoms", "conditions": [{"field": "1=1) OR (1", "operator": "eq", "value": 1}]},
        {"table": "knowledge_atoms", "order_by": {"field": "(SELECT 1)"}},
    ):
        refused(reference, errors.REF_PERMISSION_DENIED)
    assert {"knowledge_knowledgeatom", "knowledge_paper"} <= set(connection.introspection.table_names())
    assert KnowledgeAtom.objects.count() == before


# -- the other tables --------------------------------------------------------------------


def test_it_queries_relations_and_quality_records(rows):
    a1, a2 = KnowledgeAtom.objects.get(atom_id="a1"), KnowledgeAtom.objects.get(atom_id="a2")
    Relation.objects.create(relation_id="r1", source=a2, target=a1, relation_type="supports", confidence=0.9, created_at=T0)
    Relation.objects.create(relation_id="r2", source=a1, target=a2, relation_type="contradicts", confidence=0.3, created_at=T0)
    QualityRecord.objects.create(record_id="q1", target_type="atom", target_id="a1", score=0.4, passed=False,
                                 details={"reason": "weak"}, created_at=T0)
    supports = query("relations", {"field": "target_atom_id", "operator": "eq", "value": "a1"})
    assert supports == [{"relation_id": "r1", "source_atom_id": "a2", "target_atom_id": "a1", "relation_type": "supports",
                         "confidence": 0.9, "created_at": "2026-02-03T10:30:00Z"}]
    failed = query("quality_records", {"field": "passed", "operator": "eq", "value": False}, select=["record_id", "details"])
    assert failed == [{"record_id": "q1", "details": {"reason": "weak"}}]


@pytest.fixture
def node_runs():
    from agents.models import Agent
    from core.documents import import_documents
    from executions.models import Execution, NodeRun
    from workflows.models import Workflow

    import_documents([
        {"agent_id": "reader", "name": "Reader"}, {"agent_id": "writer", "name": "Writer"},
        {"workflow_id": "w", "name": "W", "topology": "seq",
         "nodes": [{"id": "read", "agent_ref": "reader"}, {"id": "write", "agent_ref": "writer"}]},
    ])
    reader, writer = Agent.objects.get(agent_id="reader"), Agent.objects.get(agent_id="writer")
    execution = Execution.objects.create(execution_id="exec_1", workflow=Workflow.objects.get(workflow_id="w"))
    common = {"execution": execution, "started_at": T0}
    NodeRun.objects.create(**common, node_id="read", agent=reader, agent_version=reader.versions.first(), status="failed",
                           attempt=1, sequence=1, tokens_in=1200, tokens_out=300, duration_ms=950, error="timeout",
                           completed_at=T0 + timedelta(seconds=1), prompt="secret prompt")
    NodeRun.objects.create(**common, node_id="read", agent=reader, status="success", attempt=2, sequence=2, tokens_in=1200,
                           tokens_out=400, duration_ms=800, completed_at=T0 + timedelta(seconds=3))
    NodeRun.objects.create(**common, node_id="write", agent=writer, status="running", attempt=1, sequence=3)
    return execution


def test_it_reads_node_runs_as_execution_logs(node_runs):
    failed = query("execution_logs", {"field": "status", "operator": "eq", "value": "failed"})
    assert failed == [{
        "execution_id": "exec_1", "workflow_id": "w", "node_id": "read", "agent_id": "reader", "agent_version": "1.0.0",
        "status": "failed", "attempt": 1, "sequence": 1, "backend": "", "model": "", "tokens_in": 1200, "tokens_out": 300,
        "duration_ms": 950, "started_at": "2026-02-03T10:30:00Z", "ended_at": "2026-02-03T10:30:01Z", "error": "timeout",
    }]
    costly = query("execution_logs", {"field": "tokens_out", "operator": "gte", "value": 300},
                   select=["node_id", "attempt", "tokens_out"], order_by={"field": "tokens_out", "direction": "desc"})
    assert costly == [{"node_id": "read", "attempt": 2, "tokens_out": 400}, {"node_id": "read", "attempt": 1, "tokens_out": 300}]
    not_read = query("execution_logs", {"field": "agent_version", "operator": "ne", "value": "1.0.0"}, select=["attempt", "node_id"])
    assert not_read == [{"attempt": 2, "node_id": "read"}, {"attempt": 1, "node_id": "write"}], "NULL versions count as not equal"
    unfinished = query("execution_logs", {"field": "ended_at", "operator": "eq", "value": None}, select=["node_id", "status"])
    assert unfinished == [{"node_id": "write", "status": "running"}]
    assert ids(query("execution_logs", {"field": "workflow_id", "operator": "eq", "value": "w"}), "node_id") == ["read", "read", "write"]


def test_it_keeps_prompts_and_outputs_out_of_execution_logs(node_runs):
    for private in ("prompt", "output", "resolved_inputs", "context_record"):
        refused({"table": "execution_logs", "select": [private]}, errors.REF_PERMISSION_DENIED)


# -- timeouts ----------------------------------------------------------------------------


@pytest.mark.skipif(connection.vendor != "postgresql", reason="statement_timeout is PostgreSQL's")
def test_it_maps_a_cancelled_query_to_ref_timeout():
    import psycopg

    settings = connection.settings_dict
    # Another session holds the table locked, so the query waits until the timeout cancels it.
    # (Nothing in this test touched the table yet, so the lock is granted at once.)
    other = psycopg.connect(dbname=settings["NAME"], user=settings["USER"], password=settings["PASSWORD"] or None,
                            host=settings["HOST"] or None, port=settings["PORT"] or None, autocommit=False)
    try:
        other.execute("SET lock_timeout = '10s'")
        other.execute("LOCK TABLE knowledge_knowledgeatom IN ACCESS EXCLUSIVE MODE")
        message = refused({"table": "knowledge_atoms"}, errors.REF_TIMEOUT, timeout_ms=50)
        assert "'knowledge_atoms'" in message and "50 ms" in message
    finally:
        other.rollback()
        other.close()
    assert query("knowledge_atoms") == [], "the connection is usable afterwards"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="statement_timeout is PostgreSQL's")
def test_it_restores_the_statement_timeout_after_a_query(rows):
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        before = cursor.fetchone()[0]
    assert len(run_db_query({"table": "knowledge_atoms"}, timeout_ms=5000)) == len(ATOMS)
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == before


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite ignores the timeout")
def test_it_ignores_the_timeout_on_sqlite(rows):
    assert len(run_db_query({"table": "knowledge_atoms"}, timeout_ms=1)) == len(ATOMS)


@pytest.mark.parametrize("timeout_ms", [0, -5, 1.5, "100", True])
def test_it_rejects_a_timeout_that_is_not_a_positive_integer(timeout_ms):
    with pytest.raises(ValueError):
        run_db_query({"table": "papers"}, timeout_ms=timeout_ms)


# -- the demo ----------------------------------------------------------------------------


def test_it_loads_the_demo_knowledge_once(tmp_path, settings, capsys):
    from demo.documents import KNOWLEDGE_ATOMS, QUALITY_RECORDS, RELATIONS

    settings.WORKSPACE_ROOT = tmp_path
    call_command("load_demo")
    assert "created: knowledge atoms" in capsys.readouterr().out
    snapshot = [list(model.objects.order_by("pk").values()) for model in (Paper, KnowledgeAtom, Relation, QualityRecord)]
    call_command("load_demo")
    assert "0 changed" in capsys.readouterr().out
    assert [list(model.objects.order_by("pk").values()) for model in (Paper, KnowledgeAtom, Relation, QualityRecord)] == snapshot

    assert (Paper.objects.count(), KnowledgeAtom.objects.count()) == (1, len(KNOWLEDGE_ATOMS))
    assert 60 <= len(KNOWLEDGE_ATOMS) <= 80
    assert (Relation.objects.count(), QualityRecord.objects.count()) == (len(RELATIONS), len(QUALITY_RECORDS))
    assert Paper.objects.get(paper_id="paper_transformer").title == "Attention Is All You Need"
    assert {"claim", "evidence", "methodology", "background"} == set(KnowledgeAtom.objects.values_list("atom_type", flat=True))
    confidences = list(KnowledgeAtom.objects.values_list("confidence", flat=True))
    assert 0.5 <= min(confidences) and max(confidences) <= 0.99 and len(set(confidences)) > 10


def test_it_puts_enough_demo_atoms_behind_the_vault_query_to_overflow_its_budget(tmp_path, settings):
    import json

    from demo.documents import THESIS_CHAIN
    from engine.tokens import get_encoding

    settings.WORKSPACE_ROOT = tmp_path
    call_command("load_demo")
    vault_inputs = THESIS_CHAIN["task_chain"][2]["input"]["data_references"]
    [reference] = [r for r in vault_inputs if r["ref_type"] == "db_query"]
    atoms = run_db_query(reference)
    assert len(atoms) == KnowledgeAtom.objects.count()
    text = json.dumps(atoms, ensure_ascii=False)
    assert len(text) >= 24_000
    assert len(get_encoding("cl100k_base").encode(text)) > 6_000 > 4_050


def test_it_runs_the_seed_db_query_example_on_the_demo_rows(tmp_path, settings):
    """data-transfer-protocol §2.4, with the demo paper's id in place of paper_001."""
    settings.WORKSPACE_ROOT = tmp_path
    call_command("load_demo", stdout=open("/dev/null", "w"))
    rows = run_db_query({
        "ref_type": "db_query", "table": "knowledge_atoms",
        "conditions": [{"field": "paper_id", "operator": "eq", "value": "paper_transformer"},
                       {"field": "atom_type", "operator": "in", "value": ["claim", "evidence"]}],
        "select": ["atom_id", "content", "confidence"],
        "order_by": {"field": "confidence", "direction": "desc"},
        "limit": 50,
    })
    expected = KnowledgeAtom.objects.filter(paper__paper_id="paper_transformer", atom_type__in=["claim", "evidence"])
    assert len(rows) == min(50, expected.count()) and rows
    assert all(set(row) == {"atom_id", "content", "confidence"} for row in rows)
    confidences = [row["confidence"] for row in rows]
    assert confidences == sorted(confidences, reverse=True)
