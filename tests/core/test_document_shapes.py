"""Each document shape is written once, as a pydantic model: the JSON Schema an import is
checked against and the API's OpenAPI schema both come from it."""
import functools
import json
import re

import pytest

import core.jsonutil
from agents.schemas import AgentDetailOut, AgentDocument
from core.documents import import_documents
from engine.json_schema import document_schema
from project.api import api as ninja_api
from tests import seed_examples as seed
from tests.conftest import ROOT
from workflows.schemas import WorkflowDocument

pytestmark = pytest.mark.django_db


@pytest.fixture
def shapes_checked(monkeypatch):
    """The models whose generated schemas the import checked documents against."""
    used = []

    def spy(model):
        used.append(model)
        return document_schema(model)

    monkeypatch.setattr(core.jsonutil, "document_schema", spy)
    return used


@functools.cache
def openapi_schema() -> dict:
    """The API's OpenAPI schema, made once: making it takes most of a second."""
    return ninja_api.get_openapi_schema(path_prefix="")


def openapi_component(name):
    return openapi_schema()["components"]["schemas"][name]


def response_component(path, method="get", status=200):
    operation = openapi_schema()["paths"][path][method]
    return operation["responses"][status]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]


def assert_same_fields(model):
    """The import schema and the OpenAPI components of a model and every shape inside it name
    the same fields."""
    generated = document_schema(model)
    assert set(generated["properties"]) == set(openapi_component(model.__name__)["properties"])
    for name, definition in generated.get("$defs", {}).items():
        assert set(definition.get("properties", {})) == set(openapi_component(name).get("properties", {})), name


def test_it_checks_an_imported_workflow_and_agent_against_their_models(shapes_checked):
    import_documents([seed.AGENT_ROOT, seed.AGENT_VALIDATOR, seed.AGENT_CHILD, seed.WORKFLOW])
    assert AgentDocument in shapes_checked and WorkflowDocument in shapes_checked


def test_it_answers_workflows_and_agents_with_the_same_models():
    assert response_component("/workflows/{workflow_id}") == "WorkflowDocument"
    assert response_component("/agents/{agent_id}") == "AgentDetailOut"
    assert issubclass(AgentDetailOut, AgentDocument)
    assert_same_fields(WorkflowDocument)
    assert_same_fields(AgentDocument)


def test_it_describes_an_agent_body_by_the_agent_shape():
    body = openapi_schema()["paths"]["/agents"]["post"]["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    assert set(schema["properties"]) == set(AgentDetailOut.model_fields)
    assert "#/components/schemas/LineageDetail" in json.dumps(schema["properties"]["lineage"])


def test_it_types_a_node_input_down_to_each_kind_of_reference():
    node_input = openapi_component("NodeDocument")["properties"]["input_mapping"]
    assert "#/components/schemas/NodeInput" in json.dumps(node_input)
    assert {"TaskOutputReference", "FileReference", "DbQueryReference"} <= set(document_schema(WorkflowDocument)["$defs"])


def test_no_app_writes_a_json_schema_of_its_own_by_hand():
    # The demo's blueprint contracts are data (JSON Schemas its agents' outputs must meet),
    # and engine/json_schema.py generates the schemas: neither is a shape of Switchyard's.
    object_schema = re.compile(r"""["']type["']\s*:\s*["']object["']""")
    found = [
        str(path.relative_to(ROOT))
        for package in ("agents", "core", "executions", "knowledge", "workflows", "project")
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts and object_schema.search(path.read_text(encoding="utf-8"))
    ]
    assert found == []
