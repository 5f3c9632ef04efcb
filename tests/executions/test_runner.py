"""Pieces of a node run that need no worker: contracts, named inputs, text for compression."""
import pytest
from django.core.management import call_command

from executions.runner import NodeFailure, as_text, check_contracts, named_inputs
from executions.services import workflow_plan
from workflows.models import Workflow

pytestmark = pytest.mark.django_db


@pytest.fixture
def chain(tmp_path, settings):
    settings.WORKSPACE_ROOT = tmp_path
    call_command("load_demo", stdout=open("/dev/null", "w"))
    workflow = Workflow.objects.get(workflow_id="thesis_reading")
    return workflow, workflow_plan(workflow)


def test_it_checks_an_output_against_the_blueprint_contract_to_the_next_agent(chain):
    workflow, plan = chain
    scholar = workflow.nodes.get(node_id="task_scholar_001")
    good = {"atoms": [{"atom_id": "a1", "atom_type": "claim", "content": "x", "confidence": 0.9}]}
    check_contracts(scholar, plan, good, {})
    with pytest.raises(NodeFailure) as caught:
        check_contracts(scholar, plan, {"atoms": [{"atom_id": "a1", "atom_type": "rumour"}]}, {})
    assert caught.value.code == "CONTRACT_VIOLATION"
    assert "Scholar → Validator" in str(caught.value) and "atoms/0" in str(caught.value)


def test_it_leaves_a_node_without_a_contract_alone(chain):
    workflow, plan = chain
    check_contracts(workflow.nodes.get(node_id="task_vault_001"), plan, "anything", {})


def test_it_reads_named_inputs_from_the_run_and_skips_what_is_not_there_yet(chain):
    workflow, _ = chain
    node = Workflow.objects.get(workflow_id="release_review").nodes.get(node_id="draft")
    items = named_inputs(node, {"input": {"topic": "v2"}, "state": {}, "nodes": {}})
    assert items == [{"name": "topic", "content": "v2", "priority": 1}]


def test_it_turns_outputs_into_lines_for_compression():
    assert as_text({"analysis": "a\nb\nc", "score": 3}) == "analysis:\na\nb\nc\nscore: 3"
    assert as_text([{"x": 1}, "y"]).splitlines() == ['{"x": 1}', '"y"']
