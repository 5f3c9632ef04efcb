import json
import os
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents.models import Agent, AgentVersion
from core.documents import export_document, import_documents
from core.errors import DocumentError, WorkflowInvalid
from executions.models import Evaluation, Execution, NodeRun
from tests import seed_examples as seed
from tests.conftest import ROOT
from workflows.models import Blueprint, Node, Workflow

pytestmark = pytest.mark.django_db


def assert_round_trips(imported, exported, where="document"):
    """Everything the document said comes back unchanged (exports may add derived keys)."""
    if isinstance(imported, dict):
        assert isinstance(exported, dict), where
        for key, value in imported.items():
            assert key in exported, f"{where}.{key} missing from the export"
            assert_round_trips(value, exported[key], f"{where}.{key}")
    elif isinstance(imported, list):
        assert isinstance(exported, list) and len(exported) == len(imported), where
        for index, (a, b) in enumerate(zip(imported, exported, strict=True)):
            assert_round_trips(a, b, f"{where}[{index}]")
    else:
        assert exported == imported, f"{where}: {exported!r} != {imported!r}"


def table_counts():
    return [model.objects.count() for model in (Agent, AgentVersion, Blueprint, Workflow, Node, Execution, NodeRun, Evaluation)]


KINDS = [
    ("agent", "agent_id", seed.AGENT_ROOT),
    ("agent", "agent_id", seed.AGENT_CHILD),
    ("agent", "agent_id", seed.AGENT_VALIDATOR),
    ("blueprint", "blueprint_id", seed.BLUEPRINT),
    ("workflow", "workflow_id", seed.WORKFLOW),
    ("execution", "execution_id", seed.EXECUTION),
    ("derive_request", "derive_request_id", seed.DERIVE_REQUEST),
    ("evaluation", "evaluation_id", seed.EVALUATION),
]


@pytest.mark.parametrize("kind,id_key,document", KINDS, ids=[f"{k}:{d[i]}" for k, i, d in KINDS])
def test_it_round_trips_every_seed_structure(kind, id_key, document):
    import_documents(seed.all_documents())
    exported = export_document(kind, document[id_key])
    assert_round_trips(document, exported)
    # The export is a fixed point: importing it again changes nothing.
    report = import_documents(json.loads(json.dumps(exported)))
    assert report[0]["result"] == "unchanged"
    assert export_document(kind, document[id_key]) == exported


def test_it_round_trips_the_task_chain_exactly():
    import_documents(seed.TASK_CHAIN_AGENTS)
    report = import_documents(seed.fresh(seed.TASK_CHAIN))
    assert report == [{"kind": "task_chain", "id": "chain_task_scholar_001", "result": "created", "index": None}]
    assert export_document("task_chain", "chain_task_scholar_001") == seed.TASK_CHAIN
    workflow = Workflow.objects.get(workflow_id="chain_task_scholar_001")
    assert workflow.topology == "seq"
    assert list(workflow.nodes.values_list("node_id", flat=True)) == ["task_scholar_001", "task_validator_001", "task_vault_001"]


def test_it_imports_through_the_command_from_stdin(monkeypatch):
    monkeypatch.setattr("sys.stdin", StringIO(json.dumps(seed.all_documents())))
    out = StringIO()
    call_command("import_document", "-", stdout=out)
    assert "created: workflow wf_review" in out.getvalue()
    printed = StringIO()
    call_command("export_document", "evaluation", "eval_001", stdout=printed)
    assert json.loads(printed.getvalue()) == seed.EVALUATION


def test_it_reports_unchanged_and_updated_on_reimport():
    import_documents(seed.all_documents())
    changed = seed.fresh(seed.EVALUATION)
    changed["feedback"] = ["Revised by a person"]
    report = import_documents([seed.fresh(seed.EVALUATION), changed])
    assert [entry["result"] for entry in report] == ["unchanged", "updated"]


def test_it_refuses_malformed_json_and_keeps_the_database(tmp_path):
    import_documents(seed.all_documents())
    before = table_counts()
    path = tmp_path / "broken.json"
    path.write_text('{"agent_id": "x", "name": ')
    with pytest.raises(CommandError, match=r"malformed JSON at line 1, column 27"):
        call_command("import_document", str(path))
    assert table_counts() == before


def evaluation_with(value_json: str) -> str:
    """The seed's evaluation as JSON text, with `value_json` as its first feedback."""
    return json.dumps({**seed.EVALUATION, "feedback": ["@"]}).replace('"@"', value_json)


UNREADABLE = [
    ("[" * 100_000 + "]" * 100_000, "the JSON is nested too deeply"),
    (evaluation_with("NaN").replace('"overall_score": 0.88', '"overall_score": NaN'), "NaN is not a JSON number"),
    (evaluation_with("9" * 5000), "an integer of 5000 digits is too long (the limit is 4300 digits)"),
    (evaluation_with('"lone \\ud800 surrogate"'),
     "document (evaluation 'eval_001').feedback[0]: is not valid Unicode (it contains a lone surrogate)"),
    (json.dumps({**seed.AGENT_ROOT, "prompt_config": {"system_prompt\udc00": "x"}}),
     "document (agent 'agent_scholar').prompt_config: a key is not valid Unicode"),
]


@pytest.mark.parametrize("text, message", UNREADABLE, ids=["deep", "nan", "long-integer", "surrogate", "surrogate-key"])
def test_it_refuses_what_json_or_the_database_cannot_hold_and_writes_nothing(tmp_path, text, message):
    import_documents([seed.AGENT_ROOT, seed.AGENT_VALIDATOR, seed.AGENT_CHILD, seed.WORKFLOW, seed.EXECUTION])
    before = table_counts()
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(CommandError) as refused:
        call_command("import_document", str(path))
    assert message in str(refused.value) and "nothing was imported" in str(refused.value)
    assert table_counts() == before


@pytest.mark.parametrize("text, message", UNREADABLE, ids=["deep", "nan", "long-integer", "surrogate", "surrogate-key"])
def test_it_prints_a_message_and_no_traceback_for_what_it_refuses(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    # A database of its own, which the refusal never touches.
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'import.sqlite3'}", "SWITCHYARD_DATA_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "manage.py", "import_document", str(path)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert "Traceback" not in done.stderr and message in done.stderr, done.stderr[-2000:]


def test_it_refuses_an_integer_beyond_what_its_column_holds():
    execution = {**seed.EXECUTION, "results": [{**seed.EXECUTION["results"][0], "duration_ms": 10**30}]}
    agent = {**seed.AGENT_VALIDATOR, "context_limits": {"max_input_tokens": 2**31}}
    before = table_counts()
    with pytest.raises(DocumentError, match=r"results\[0\]\.duration_ms: 10+ is greater than the maximum of 2147483647"):
        import_documents([seed.AGENT_ROOT, seed.AGENT_VALIDATOR, seed.AGENT_CHILD, seed.WORKFLOW, execution])
    with pytest.raises(DocumentError, match=r"context_limits\.max_input_tokens: 2147483648 is greater than the maximum"):
        import_documents(agent)
    assert table_counts() == before


def test_it_names_the_field_of_a_wrong_shape():
    bad = seed.fresh(seed.AGENT_ROOT)
    bad["capabilities"]["skills"] = "extract_atoms"
    with pytest.raises(DocumentError) as caught:
        import_documents(bad)
    assert caught.value.where == "document (agent 'agent_scholar').capabilities.skills"
    assert "is not of type 'array'" in caught.value.message


def test_it_names_unknown_fields():
    bad = seed.fresh(seed.EVALUATION)
    bad["scores"]["acuracy"] = 0.5
    with pytest.raises(DocumentError, match=r"scores: unknown field\(s\): 'acuracy'"):
        import_documents(bad)


def test_it_rolls_back_the_whole_list_when_one_document_fails():
    documents = seed.all_documents()
    bad_workflow = seed.fresh(seed.WORKFLOW)
    bad_workflow["nodes"][1]["agent_ref"] = "agent_nobody"
    documents[4] = bad_workflow
    with pytest.raises(WorkflowInvalid) as caught:
        import_documents(documents)
    assert caught.value.problems[0]["where"] == "document[4] (workflow 'wf_review').nodes[validate].agent_ref"
    assert "agent 'agent_nobody' does not exist" in caught.value.problems[0]["message"]
    assert table_counts() == [0] * 8


def test_it_fails_the_command_on_a_cyclic_dag_naming_the_transition_that_closes_it(tmp_path):
    import_documents([seed.AGENT_ROOT | {"lineage": {}}, seed.AGENT_VALIDATOR])
    before = table_counts()
    cyclic = {
        "workflow_id": "wf_cycle", "name": "Cycle", "topology": "dag",
        "nodes": [{"id": "a", "agent_ref": "agent_scholar"}, {"id": "b", "agent_ref": "agent_validator"}],
        "transitions": [{"from": "a", "to": "b"}, {"from": "b", "to": "a"}],
    }
    path = tmp_path / "cycle.json"
    path.write_text(json.dumps(cyclic))
    with pytest.raises(CommandError) as caught:
        call_command("import_document", str(path))
    assert "transitions[1]: (b → a) closes a cycle in the dag: a → b → a" in str(caught.value)
    assert "nothing was imported" in str(caught.value)
    assert table_counts() == before


def test_it_refuses_an_unknown_agent_reference_in_a_derive_request():
    with pytest.raises(DocumentError, match=r"parent_agent_id: agent 'agent_scholar' does not exist"):
        import_documents(seed.fresh(seed.DERIVE_REQUEST))


def test_it_refuses_a_document_of_no_known_kind():
    with pytest.raises(DocumentError, match=r"document\[1\]: cannot tell what this document is"):
        import_documents([seed.AGENT_VALIDATOR, {"name": "what am I"}])


def test_it_refuses_a_contract_with_an_invalid_json_schema():
    import_documents([seed.AGENT_ROOT | {"lineage": {}}, seed.AGENT_VALIDATOR])
    bad = seed.fresh(seed.BLUEPRINT)
    bad["agents"] = bad["agents"][:2]
    bad["contracts"]["agent_scholar → agent_validator"]["schema"] = {"type": "objekt"}
    with pytest.raises(DocumentError, match=r"contracts\['agent_scholar → agent_validator'\].schema: is not a valid JSON Schema"):
        import_documents(bad)


def test_it_refuses_a_contract_between_agents_outside_the_blueprint():
    import_documents([seed.AGENT_ROOT | {"lineage": {}}, seed.AGENT_VALIDATOR])
    bad = seed.fresh(seed.BLUEPRINT)
    bad["agents"] = bad["agents"][:1]
    with pytest.raises(DocumentError, match=r"'agent_validator' is not one of the blueprint's agents"):
        import_documents(bad)


def test_it_does_not_rewrite_a_recorded_execution():
    import_documents(seed.all_documents())
    changed = seed.fresh(seed.EXECUTION)
    changed["status"] = "failed"
    with pytest.raises(DocumentError, match="executions are records"):
        import_documents(changed)
    assert Execution.objects.get(execution_id="exec_001").status == "success"


def test_it_points_imported_node_runs_at_the_agent_version():
    import_documents(seed.all_documents())
    run = NodeRun.objects.filter(node_id="extract").get()
    assert run.agent_version.version == "1.0.0" and run.agent_version.agent.agent_id == "agent_scholar"


def test_it_refuses_an_evaluation_of_a_missing_target():
    with pytest.raises(DocumentError, match=r"target_id: execution 'exec_001' does not exist"):
        import_documents(seed.fresh(seed.EVALUATION))


def test_it_exports_unknown_ids_as_not_found():
    with pytest.raises(CommandError, match="agent 'ghost' does not exist"):
        call_command("export_document", "agent", "ghost")


@pytest.mark.parametrize("option, value", [
    ("batch_config", {"enabled": True, "batch_size_tokens": "many"}),
    ("batch_config", {"aggregation_strategy": "average"}),
    ("summary_config", {"strategy": "poetic"}),
    ("summary_config", {"summary_ratio": 2}),
])
def test_it_refuses_reference_settings_a_run_could_not_use(option, value):
    import_documents({"agent_id": "reader", "name": "Reader"})
    workflow = {"workflow_id": "odd", "name": "Odd", "topology": "seq", "nodes": [
        {"id": "read", "agent_ref": "reader", "input_mapping": {"data_references": [
            {"ref_type": "file", "path": "papers/a.md", option: value}]}}]}
    with pytest.raises(DocumentError) as caught:
        import_documents(workflow)
    assert option in caught.value.where


# -- the registry: each app registers its own kinds --------------------------------------------


def test_it_knows_every_kind_in_import_order_from_the_apps_that_own_them():
    from core.documents import IMPORT_ORDER, KINDS, KINDS_BY_NAME

    assert [kind.name for kind in KINDS] == list(IMPORT_ORDER) == list(KINDS_BY_NAME)
    owners = {kind.name: kind.importer.__module__.split(".")[0] for kind in KINDS}
    assert owners == {"agent": "agents", "derive_request": "quality", "blueprint": "workflows",
                      "workflow": "workflows", "task_chain": "workflows", "execution": "executions",
                      "evaluation": "quality", "thought_tree": "executions"}


def test_it_refuses_to_register_a_kind_with_no_place_in_the_import_order():
    from core.documents import KINDS_BY_NAME, Kind, register_kind

    with pytest.raises(ValueError, match="document kind 'note' has no place in IMPORT_ORDER"):
        register_kind(Kind("note", "note_id", Agent, "agent_id", lambda document, actor="": None, lambda obj: {}))
    assert "note" not in KINDS_BY_NAME
