"""An agent's tools on its page (each with its description and argument schema, `server.*`
expanded, the approval mark, a warning for a tool the catalogue does not hold) and in the
editor (picked from the catalogue, with the runtime's tool settings); the browser test at
the end picks a tool in chromium."""
import pytest

from agents.models import Agent
from agents.services import agent_import_document
from tests.pages.conftest import signed_in
from tools import catalogue

pytestmark = pytest.mark.django_db


@pytest.fixture
def marked_up_tool(monkeypatch):
    """A builtin tool whose description and schema carry markup, for this test only."""
    monkeypatch.setattr(catalogue, "_builtin", dict(catalogue._builtin))
    catalogue.register("shout", description="Says <b>loudly</b> what it is given.", input_schema={
        "type": "object", "properties": {"text": {"type": "string", "description": "<script>alert(1)</script>"}},
        "required": ["text"]}, function=lambda arguments: arguments["text"].upper())


def imported(agent_id="Reader", tools=(), **runtime):
    agent, _ = agent_import_document({
        "agent_id": agent_id, "name": agent_id, "capabilities": {"tools": list(tools)}, "runtime": runtime,
    }, actor="seed")
    return agent


def edit_values(client, agent_id):
    """The edit form as it comes, as a browser would post it back (lists stay lists)."""
    form = client.get(f"/agents/{agent_id}/edit/").context["form"]
    values = {}
    for name in form.fields:
        value = form[name].value()
        if isinstance(value, bool):
            if value:
                values[name] = "on"
        elif value is not None:
            values[name] = value
    return values


# --- the agent's page ----------------------------------------------------------------

def test_it_lists_each_tool_with_its_description_schema_and_approval(api, marked_up_tool):
    imported(tools=["builtin.shout", "builtin.*"], tools_needing_approval=["builtin.shout"], max_tool_calls=5,
             parallel_tool_calls=False)
    response = signed_in(api.viewer.user).get("/agents/Reader/")
    page = response.content.decode()
    listing = response.context["tools"]
    assert [entry["name"] for entry in listing] == ["builtin.shout", "builtin.*"]
    # server.* expands to each tool of the server, in the catalogue's order.
    assert [tool["name"] for tool in listing[1]["tools"]] == [
        "builtin.db_query", "builtin.knowledge_search", "builtin.read_file", "builtin.shout"]
    assert "Says &lt;b&gt;loudly&lt;/b&gt; what it is given." in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in page
    assert '<summary class="small">Arguments (JSON Schema)</summary><pre class="schema">{\n  &quot;properties&quot;' in page
    assert "Read a file of the workspace" in page  # from builtin.*'s expansion
    assert page.count("needs approval</span>") == 2  # builtin.shout, named and in builtin.*
    assert 'id="missing-tools"' not in page
    assert '<dd id="max-tool-calls">at most 5</dd>' in page
    assert '<dd id="parallel-tool-calls">run one after another</dd>' in page
    assert '<span class="mono">builtin.shout</span>' in page


def test_it_warns_of_each_imported_tool_the_catalogue_does_not_hold(api):
    imported(tools=["pdf_reader", "builtin.read_file", "legal_database"])
    page = signed_in(api.viewer.user).get("/agents/Reader/").content.decode()
    assert ("Not in the tool catalogue: <code>pdf_reader</code>, <code>legal_database</code>.\n"
            "  At run time each is a missing tool") in page
    assert page.count('<span class="chip approval">missing</span>') == 2


# --- the editor ----------------------------------------------------------------------

def test_the_editor_offers_the_catalogue_by_server_with_descriptions(api):
    imported(tools=["builtin.read_file"], tools_needing_approval=["builtin.read_file"])
    response = signed_in(api.author.user).get("/agents/Reader/edit/")
    page = response.content.decode()
    assert [group["server"] for group in response.context["tool_groups"]] == ["builtin"]
    assert '<input type="checkbox" name="tools" value="builtin.read_file" data-server="builtin" checked>' in page
    assert '<input type="checkbox" name="tools" value="builtin.db_query" data-server="builtin">' in page
    assert 'value="builtin.*" data-every="builtin">' in page
    assert 'name="tools_needing_approval" value="builtin.read_file" data-for-tool="builtin.read_file" ' \
           'data-server="builtin" checked>' in page
    assert "Read rows of a public table of the knowledge base" in page
    assert 'name="max_tool_calls" value="8"' in page


def test_the_editor_saves_the_tools_and_their_settings(api):
    imported()
    author = signed_in(api.author.user)
    values = edit_values(author, "Reader") | {
        "tools": ["builtin.read_file", "builtin.db_query"], "tools_needing_approval": ["builtin.db_query"],
        "max_tool_calls": "20"}
    values.pop("parallel_tool_calls")  # unticked
    response = author.post("/agents/Reader/edit/", values)
    assert response.status_code == 302
    agent = Agent.objects.get(agent_id="Reader")
    assert agent.capabilities["tools"] == ["builtin.read_file", "builtin.db_query"]
    assert (agent.max_tool_calls, agent.parallel_tool_calls, agent.tools_needing_approval) == (
        20, False, ["builtin.db_query"])
    assert agent.version == "1.0.1"
    # Saving the same choice again changes nothing, whatever order the boxes came in.
    again = author.post("/agents/Reader/edit/", edit_values(author, "Reader") | {
        "tools": ["builtin.db_query", "builtin.read_file"]}, follow=True)
    assert "Nothing changed" in again.content.decode()


def test_the_editor_refuses_an_imported_tool_the_catalogue_lacks_at_its_field(api):
    imported(tools=["legal_database", "builtin.read_file"])
    author = signed_in(api.author.user)
    form_page = author.get("/agents/Reader/edit/")
    assert [tool["name"] for tool in form_page.context["tool_groups"][-1]["tools"]] == ["legal_database"]
    assert 'id="missing-tools-note"' in form_page.content.decode()
    values = edit_values(author, "Reader") | {"system_prompt": "A change."}
    response = author.post("/agents/Reader/edit/", values)
    assert response.status_code == 200
    message = ("'legal_database' is not a tool of the catalogue (known: builtin.db_query, builtin.knowledge_search, "
               "builtin.read_file)")
    assert response.context["form"].errors["tools"] == [message]
    assert f'<p class="field-error" id="id_tools-error" data-for="tools">{message.replace(chr(39), "&#x27;")}</p>' \
        in response.content.decode()
    assert Agent.objects.get(agent_id="Reader").version == "1.0.0"
    # Unticked, it goes, and the edit is saved.
    saved = author.post("/agents/Reader/edit/", values | {"tools": ["builtin.read_file"]})
    assert saved.status_code == 302
    assert Agent.objects.get(agent_id="Reader").capabilities["tools"] == ["builtin.read_file"]


@pytest.mark.parametrize("change, field, message", [
    ({"tools_needing_approval": ["builtin.db_query"]}, "tools_needing_approval",
     "'builtin.db_query' is not one of the agent's tools (capabilities.tools: builtin.read_file)"),
    ({"max_tool_calls": "101"}, "max_tool_calls", "101 is greater than the maximum of 100"),
    ({"max_tool_calls": "0"}, "max_tool_calls", "0 is less than the minimum of 1"),
])
def test_the_editor_refuses_tool_settings_at_their_field(api, change, field, message):
    imported(tools=["builtin.read_file"])
    author = signed_in(api.author.user)
    response = author.post("/agents/Reader/edit/", edit_values(author, "Reader") | change)
    assert response.status_code == 200
    assert response.context["form"].errors[field] == [message]
    assert Agent.objects.get(agent_id="Reader").version == "1.0.0"


# --- in the browser ------------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_an_author_picks_a_tool_in_the_editor_and_sees_it_on_the_agent_page(page_for, api):
    from playwright.sync_api import expect

    imported()
    page = page_for(api.author.user)
    said = []
    page.on("console", lambda message: said.append(f"{message.type}: {message.text}")
            if message.type in ("error", "warning") else None)
    page.on("pageerror", lambda error: said.append(f"thrown: {error}"))
    page.goto("/agents/Reader/edit/")
    approval = page.locator('input[name=tools_needing_approval][value="builtin.read_file"]')
    expect(approval).to_be_disabled()  # not one of its tools yet
    page.check('input[name=tools][value="builtin.read_file"]')
    expect(approval).to_be_enabled()
    approval.check()
    page.fill("input[name=max_tool_calls]", "4")
    page.click("#save-agent")
    page.wait_for_url("**/agents/Reader/?from=1.0.0&to=1.0.1#versions")
    item = page.locator('.tool-item[data-tool="builtin.read_file"]')
    expect(item).to_contain_text("Read a file of the workspace")
    expect(item.locator(".chip.approval")).to_have_text("needs approval")
    schema = item.locator("details.tool-schema")
    expect(schema.locator("pre")).not_to_be_visible()
    schema.locator("summary").click()
    expect(schema.locator("pre")).to_contain_text('"path"')
    expect(page.locator("#max-tool-calls")).to_have_text("at most 4")
    agent = Agent.objects.get(agent_id="Reader")
    assert (agent.capabilities["tools"], agent.tools_needing_approval) == (["builtin.read_file"], ["builtin.read_file"])
    assert said == []
