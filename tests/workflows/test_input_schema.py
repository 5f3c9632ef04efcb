"""A workflow declares its inputs (`input_schema`): kept with its versions and exports, and a
run missing a required input refused by the API, the command and a re-run, naming it."""
import copy

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core.documents import export_document, import_documents
from core.errors import DocumentError
from demo.documents import AGENTS, PARALLEL_ANALYSIS
from executions.models import Execution
from executions.services import execution_rerun, execution_start
from workflows.models import Workflow
from workflows.services import workflow_import_document

pytestmark = pytest.mark.django_db

INPUTS = {"type": "object",
          "properties": {"repository": {"type": "string", "description": "the repository to analyse"},
                         "branch": {"type": "string", "default": "main"}},
          "required": ["repository"]}


@pytest.fixture(autouse=True)
def declared(tmp_path, settings):
    settings.WORKSPACE_ROOT = tmp_path
    import_documents([*AGENTS, {**PARALLEL_ANALYSIS, "input_schema": INPUTS}])
    return Workflow.objects.get(workflow_id="parallel_analysis")


def test_it_keeps_the_declared_inputs_with_the_version_and_the_export(declared):
    assert declared.input_schema == INPUTS
    assert declared.versions.get().document["input_schema"] == INPUTS
    assert export_document("workflow", "parallel_analysis")["input_schema"] == INPUTS


def test_it_refuses_a_schema_that_is_not_one_of_an_object_naming_the_field():
    for schema, said in (({"type": "object", "properties": {"x": {"type": "nonsense"}}}, "is not a valid JSON Schema"),
                         ({"type": "array"}, "JSON object")):
        with pytest.raises(DocumentError, match=said) as refused:
            workflow_import_document({**PARALLEL_ANALYSIS, "input_schema": schema})
        assert refused.value.where == "input_schema"
    # A default its own input refuses would refuse every run that leaves that input out.
    depth = {"type": "integer", "minimum": 1, "default": 0}
    with pytest.raises(DocumentError, match="the default does not fit its input: 0 is less than the minimum of 1") as refused:
        workflow_import_document({**PARALLEL_ANALYSIS, "input_schema": {"type": "object", "properties": {"depth": depth}}})
    assert refused.value.where == "input_schema.properties.depth.default"
    assert Workflow.objects.get(workflow_id="parallel_analysis").input_schema == INPUTS  # nothing lost


def test_a_run_gets_the_defaults_of_the_inputs_it_leaves_out(declared):
    execution = execution_start(workflow=declared, input={"repository": "acme"})
    assert execution.input == {"repository": "acme", "branch": "main"}


def test_the_api_refuses_a_run_missing_a_required_input_naming_it(api):
    response = api.author.post("/api/executions", {"workflow_id": "parallel_analysis", "input": {}})
    assert response.status_code == 422
    assert response.json()["message"] == "input.repository: is required by the workflow (the repository to analyse)"
    response = api.author.post("/api/executions", {"workflow_id": "parallel_analysis", "input": {"repository": 7}})
    assert response.status_code == 422 and response.json()["message"] == "input.repository: 7 is not of type 'string'"
    assert not Execution.objects.exists()


def test_the_command_refuses_it_too():
    with pytest.raises(CommandError, match="input.repository: is required by the workflow"):
        call_command("run_workflow", "parallel_analysis", "--input", "{}")
    assert not Execution.objects.exists()


def test_a_rerun_is_refused_when_the_version_it_runs_requires_an_input_the_run_was_not_given(declared):
    source = execution_start(workflow=declared, input={"repository": "acme"})
    Execution.objects.filter(pk=source.pk).update(status="failed")
    stricter = copy.deepcopy(INPUTS)
    stricter["properties"]["ticket"] = {"type": "string"}
    stricter["required"].append("ticket")
    workflow_import_document({**PARALLEL_ANALYSIS, "input_schema": stricter})
    with pytest.raises(DocumentError, match="input.ticket: is required by the workflow"):
        execution_rerun(source=source, from_node="task_d")
    assert Execution.objects.count() == 1


def test_validating_drafts_the_inputs_the_nodes_read_and_names_a_schema_a_save_would_refuse(api):
    undeclared = {key: value for key, value in PARALLEL_ANALYSIS.items() if key != "input_schema"}
    body = api.viewer.post("/api/workflows/parallel_analysis/validate", undeclared).json()
    assert body["valid"] is True
    assert body["inferred_input_schema"] == {"type": "object", "required": ["repository"], "properties": {
        "repository": {"description": "read by task_a, task_b, task_c"}}}

    body = api.viewer.post("/api/workflows/parallel_analysis/validate", {**undeclared, "input_schema": {"type": "array"}}).json()
    assert body["valid"] is False
    assert [(p["where"], p["code"]) for p in body["problems"]] == [("input_schema", "INVALID_DOCUMENT")]
    assert "JSON object" in body["problems"][0]["message"]
    assert Workflow.objects.get(workflow_id="parallel_analysis").input_schema == INPUTS  # nothing saved
