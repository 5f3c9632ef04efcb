"""Pieces of a node run that need no worker: contracts, named inputs, text for compression."""
import pytest
from django.core.management import call_command

from executions.runner import NodeFailure, as_text, check_contracts, named_inputs
from executions.services import workflow_graph
from workflows.models import Workflow

pytestmark = pytest.mark.django_db


@pytest.fixture
def chain(tmp_path, settings):
    settings.WORKSPACE_ROOT = tmp_path
    call_command("load_demo", stdout=open("/dev/null", "w"))
    workflow = Workflow.objects.get(workflow_id="thesis_reading")
    return workflow, workflow_graph(workflow)


def test_it_checks_an_output_against_the_blueprint_contract_to_the_next_agent(chain):
    workflow, graph = chain
    scholar = workflow.nodes.get(node_id="task_scholar_001")
    good = {"atoms": [{"atom_id": "a1", "atom_type": "claim", "content": "x", "confidence": 0.9}]}
    check_contracts(scholar, graph.plan, good, {}, graph.contracts)
    with pytest.raises(NodeFailure) as caught:
        check_contracts(scholar, graph.plan, {"atoms": [{"atom_id": "a1", "atom_type": "rumour"}]}, {}, graph.contracts)
    assert caught.value.code == "CONTRACT_VIOLATION"
    assert "Scholar → Validator" in str(caught.value) and "atoms/0" in str(caught.value)


def test_it_leaves_a_node_without_a_contract_alone(chain):
    workflow, graph = chain
    check_contracts(workflow.nodes.get(node_id="task_vault_001"), graph.plan, "anything", {}, graph.contracts)


def test_it_reads_named_inputs_from_the_run_and_skips_what_is_not_there_yet(chain):
    workflow, _ = chain
    node = Workflow.objects.get(workflow_id="release_review").nodes.get(node_id="draft")
    items = named_inputs(node, {"input": {"topic": "v2"}, "state": {}, "nodes": {}})
    assert items == [{"name": "topic", "content": "v2", "priority": 1}]


def test_it_turns_outputs_into_lines_for_compression():
    assert as_text({"analysis": "a\nb\nc", "score": 3}) == "analysis:\na\nb\nc\nscore: 3"
    assert as_text([{"x": 1}, "y"]).splitlines() == ['{"x": 1}', '"y"']


def test_it_reads_the_graph_again_after_a_new_agent_version_or_new_contracts(chain):
    from core.demo import AGENTS, BLUEPRINT
    from core.documents import import_documents

    workflow, graph = chain
    scholar = next(dict(a) for a in AGENTS if a["agent_id"] == "Scholar")
    scholar["prompt_config"] = dict(scholar["prompt_config"], system_prompt="You read papers, carefully.")
    import_documents(scholar, actor="test")
    workflow.refresh_from_db()
    fresh = workflow_graph(workflow)
    assert fresh is not graph
    assert fresh.versions[workflow.nodes.get(node_id="task_scholar_001").agent_id] != graph.versions[
        workflow.nodes.get(node_id="task_scholar_001").agent_id]

    blueprint = dict(BLUEPRINT, contracts={})
    import_documents(blueprint, actor="test")
    workflow.refresh_from_db()
    assert workflow_graph(workflow).contracts == []
