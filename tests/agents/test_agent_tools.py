"""An agent's tools and how it calls them: authors may name only tools of the catalogue, an
imported document may name any (kept, a missing tool at run time); the runtime's tool
settings are checked, exported, imported and frozen in versions like the rest of it."""
import io
import json

import pytest
from django.core.management import call_command

from agents.agent_tools import approval_problems, tool_listing, unknown_tool_problems
from agents.documents import agent_as_of, agent_document
from agents.models import Agent, AgentVersion
from agents.services import agent_import_document
from core.documents import export_document, import_documents
from core.errors import DocumentError

pytestmark = pytest.mark.django_db

KNOWN = "builtin.db_query, builtin.knowledge_search, builtin.read_file"


def agent(agent_id="reader", **extra):
    return {"agent_id": agent_id, "name": agent_id.title(), **extra}


def tools(*names):
    return {"capabilities": {"skills": [], "tools": list(names), "knowledge_domains": []}}


# --- the catalogue's names, for authors ------------------------------------------------

@pytest.mark.parametrize("method", ["post", "put"])
def test_the_api_refuses_a_tool_the_catalogue_does_not_hold_naming_it_and_where(api, method):
    agent_import_document(agent(), actor="seed")
    before = agent_document(Agent.objects.get(agent_id="reader"))
    document = agent("reader" if method == "put" else "newcomer") | tools("builtin.read_file", "legal_database", "x.y")
    response = getattr(api.author, method)("/api/agents" + ("/reader" if method == "put" else ""), document)
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "INVALID_DOCUMENT"
    assert body["message"] == (f"capabilities.tools[1]: 'legal_database' is not a tool of the catalogue "
                               f"(known: {KNOWN})")
    assert body["details"] == [
        {"where": "capabilities.tools[1]", "message": f"'legal_database' is not a tool of the catalogue (known: {KNOWN})"},
        {"where": "capabilities.tools[2]", "message": f"'x.y' is not a tool of the catalogue (known: {KNOWN})"},
    ]
    assert not Agent.objects.filter(agent_id="newcomer").exists()
    assert agent_document(Agent.objects.get(agent_id="reader")) == before


def test_the_api_takes_tools_of_the_catalogue_and_whole_servers(api):
    created = api.author.post("/api/agents", agent() | tools("builtin.read_file"))
    assert created.status_code == 201 and created.json()["capabilities"]["tools"] == ["builtin.read_file"]
    updated = api.author.put("/api/agents/reader", agent() | tools("builtin.*", "builtin.db_query"))
    assert updated.status_code == 200
    assert updated.json()["capabilities"]["tools"] == ["builtin.*", "builtin.db_query"]
    assert updated.json()["version"] == "1.0.1"


def test_an_unknown_server_star_is_refused_too(api):
    response = api.author.post("/api/agents", agent() | tools("github.*"))
    assert response.status_code == 422
    assert response.json()["message"].startswith("capabilities.tools[0]: 'github.*' is not a tool of the catalogue")


def test_an_operators_server_names_its_allowed_tools(api, settings):
    settings.TOOL_SERVERS = {"github": {"allow": ["search_issues"]}}
    assert api.author.post("/api/agents", agent() | tools("github.search_issues", "github.*")).status_code == 201
    refused = api.author.post("/api/agents", agent("other") | tools("github.delete_repo"))
    assert refused.status_code == 422 and "github.search_issues" in refused.json()["message"]


# --- free text, for imports ------------------------------------------------------------

def test_an_imported_document_keeps_tools_the_catalogue_does_not_hold(tmp_path):
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(agent() | tools("pdf_reader", "builtin.read_file")))
    call_command("import_document", str(path), stdout=io.StringIO())
    assert Agent.objects.get(agent_id="reader").capabilities["tools"] == ["pdf_reader", "builtin.read_file"]
    report = import_documents([agent("second") | tools("legal_database")])
    assert report[0]["result"] == "created"
    assert export_document("agent", "second")["capabilities"]["tools"] == ["legal_database"]


def test_the_listing_marks_what_the_catalogue_does_not_hold():
    listing = tool_listing(["legal_database", "builtin.*", "builtin.read_file"], ["builtin.read_file"])
    assert [(entry["name"], entry["known"], entry["every"]) for entry in listing] == [
        ("legal_database", False, False), ("builtin.*", True, True), ("builtin.read_file", True, False)]
    assert listing[0]["tools"] == []
    assert [tool["name"] for tool in listing[1]["tools"]] == ["builtin.db_query", "builtin.knowledge_search",
                                                              "builtin.read_file"]
    read_file = listing[2]["tools"][0]
    assert read_file["needs_approval"] and read_file["description"].startswith("Read a file of the workspace")
    assert json.loads(read_file["schema_json"])["type"] == "object"
    assert not listing[1]["tools"][0]["needs_approval"]
    assert unknown_tool_problems(["builtin.read_file"]) == []


# --- the runtime's tool settings -------------------------------------------------------

def settings_of(document):
    return {key: document["runtime"][key] for key in ("max_tool_calls", "parallel_tool_calls", "tools_needing_approval")}


def test_an_agent_has_the_default_tool_settings_when_its_document_leaves_them_out():
    created, _ = agent_import_document(agent(), actor="seed")
    assert settings_of(agent_document(created)) == {"max_tool_calls": 8, "parallel_tool_calls": True,
                                                    "tools_needing_approval": []}


@pytest.mark.parametrize("runtime, where, message", [
    ({"max_tool_calls": 0}, "runtime.max_tool_calls", "0 is less than the minimum of 1"),
    ({"max_tool_calls": 101}, "runtime.max_tool_calls", "101 is greater than the maximum of 100"),
    ({"max_tool_calls": "8"}, "runtime.max_tool_calls", "'8' is not of type 'integer'"),
    ({"parallel_tool_calls": 1}, "runtime.parallel_tool_calls", "1 is not of type 'boolean'"),
    ({"tools_needing_approval": "builtin.read_file"}, "runtime.tools_needing_approval", "is not of type 'array'"),
    ({"tools_needing_approval": ["builtin.read_file", "builtin.db_query"]}, "runtime.tools_needing_approval[1]",
     "'builtin.db_query' is not one of the agent's tools (capabilities.tools: builtin.read_file)"),
])
def test_it_refuses_tool_settings_out_of_range_or_naming_a_tool_the_agent_lacks(api, runtime, where, message):
    document = agent() | tools("builtin.read_file") | {"runtime": runtime}
    response = api.author.post("/api/agents", document)
    assert response.status_code == 422 and response.json()["message"].startswith(f"{where}: ")
    assert message in response.json()["message"]
    with pytest.raises(DocumentError) as refused:  # an import is held to the same settings
        agent_import_document(document)
    assert refused.value.where == where
    assert not Agent.objects.exists()


def test_approval_may_name_a_tool_its_servers_star_gives():
    assert approval_problems(["builtin.*"], ["builtin.db_query", "builtin.*"]) == []
    assert approval_problems(["builtin.read_file"], ["builtin.*"]) == [
        ("runtime.tools_needing_approval[0]", "'builtin.*' is not one of the agent's tools "
                                              "(capabilities.tools: builtin.read_file)")]


def test_the_tool_settings_round_trip_through_export_import_and_versions(api):
    runtime = {"max_tool_calls": 3, "parallel_tool_calls": False, "tools_needing_approval": ["builtin.db_query"]}
    response = api.author.post("/api/agents", agent() | tools("builtin.db_query") | {"runtime": runtime})
    assert response.status_code == 201 and settings_of(response.json()) == runtime
    exported = export_document("agent", "reader")
    assert settings_of(exported) == runtime
    copy = exported | {"agent_id": "reader_copy", "lineage": {"parent_id": None}}
    assert import_documents([copy])[0]["result"] == "created"
    assert settings_of(agent_document(Agent.objects.get(agent_id="reader_copy"))) == runtime
    assert import_documents([exported])[0]["result"] == "unchanged"

    changed = api.author.put("/api/agents/reader", exported | {"runtime": exported["runtime"] | {"max_tool_calls": 12}})
    assert changed.json()["version"] == "1.0.1"  # a changed setting is a new version
    first = api.viewer.get("/api/agents/reader/versions/1.0.0").json()["content"]["runtime"]
    assert settings_of({"runtime": first}) == runtime
    reader = Agent.objects.get(agent_id="reader")
    assert agent_as_of(reader, reader.versions.get(version="1.0.0")).max_tool_calls == 3
    assert reader.max_tool_calls == 12


def test_a_version_frozen_before_the_tool_settings_ran_with_their_defaults():
    created, _ = agent_import_document(agent() | {"runtime": {"max_tool_calls": 30}}, actor="seed")
    old = AgentVersion.objects.get(agent=created)
    old.content["runtime"] = {key: old.content["runtime"][key] for key in ("backend", "model", "encoding", "role")}
    old.save()
    frozen = agent_as_of(created, old)
    assert (frozen.max_tool_calls, frozen.parallel_tool_calls, frozen.tools_needing_approval) == (8, True, [])


def test_a_refusal_never_grows_with_the_document(api):
    long_name = "x" * 500
    response = api.author.post("/api/agents", agent() | tools(long_name, *[f"tool_{n}" for n in range(100)]))
    assert response.status_code == 422
    body = response.json()
    assert body["message"].startswith("capabilities.tools[0]: '" + "x" * 60 + "… (500 characters)' is not a tool")
    assert len(body["details"]) == 20 and len(response.content) < 10_000
