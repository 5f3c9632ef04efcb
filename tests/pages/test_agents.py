"""The agent pages (detail with lineage, versions and their diff, runs and evaluations; the
edit form) and the blueprint pages, through Django's test client; the browser tests at
the end drive them in chromium."""
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from agents import services
from agents.models import Agent, AgentVersion, DeriveRequest
from core.errors import DocumentError
from executions.models import Evaluation, Execution, NodeRun
from quality.derive_requests import services as derive_request_services
from tests.pages.conftest import signed_in
from workflows.models import Workflow

pytestmark = pytest.mark.django_db


def derive(parent: str, agent_id: str, name: str) -> Agent:
    """A child agent, as an approved derivation would make it."""
    agent, _ = services.agent_import_document({
        "agent_id": agent_id, "name": name, "lineage": {"parent_id": parent},
        "prompt_config": {"system_prompt": f"You are {name}."},
    }, actor="tests")
    return agent


def edit_prompt(agent_id: str, system_prompt: str, user) -> Agent:
    agent = Agent.objects.get(agent_id=agent_id)
    document = {"agent_id": agent_id, "name": agent.name,
                "prompt_config": {**agent.prompt_config, "system_prompt": system_prompt},
                "capabilities": agent.capabilities, "constraints": agent.constraints,
                "runtime": {"backend": agent.backend, "model": agent.model, "encoding": agent.encoding,
                            "role": agent.role},
                "context_limits": {"max_input_tokens": agent.max_input_tokens,
                                   "max_output_tokens": agent.max_output_tokens,
                                   "reserved_for_system_prompt": agent.reserved_for_system_prompt,
                                   "reserved_for_instructions": agent.reserved_for_instructions,
                                   "safety_margin": agent.safety_margin}}
    return services.agent_update(agent=agent, document=document, user=user)


def finished_run(execution_id: str, workflow_id: str, agents: list[str], status: str = "success") -> Execution:
    """A finished execution whose nodes ran the given agents (no worker needed to read it)."""
    execution = Execution.objects.create(execution_id=execution_id, workflow=Workflow.objects.get(workflow_id=workflow_id),
                                         status=status)
    by_id = Agent.objects.in_bulk(agents, field_name="agent_id")
    NodeRun.objects.bulk_create([
        NodeRun(execution=execution, node_id=f"node_{index}", agent=by_id[agent_id], status="success", sequence=index)
        for index, agent_id in enumerate(agents)
    ])
    return execution


def evaluation(evaluation_id: str, target_type: str, target_id: str, overall: float = 0.8, **extra) -> Evaluation:
    values = {"accuracy": overall, "completeness": overall, "efficiency": overall, "overall_score": overall,
              "passed": overall >= 0.7, "feedback": [], "action": "approve" if overall >= 0.7 else "revise"}
    return Evaluation.objects.create(evaluation_id=evaluation_id, target_type=target_type, target_id=target_id,
                                     **(values | extra))


# --- the list and the detail ---------------------------------------------------------

def test_it_links_each_agent_of_the_list_to_its_page(api, demo):
    page = signed_in(api.viewer.user).get("/agents/", {"status": "active"}).content.decode()
    assert 'href="/agents/Scholar/"' in page
    assert 'href="/agents/Publisher/"' in page  # Backup_Publisher's parent, linked from its row


def test_it_shows_an_agents_prompt_capabilities_constraints_runtime_and_limits(api, demo):
    response = signed_in(api.viewer.user).get("/agents/Backup_Publisher/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "You publish release notes when the main publisher cannot." in page
    for text in ("System prompt", "Role play", "Task context", "Thinking process", "Output constraint",
                 "compliance_check", "publish only reviewed drafts", "builtin", "cl100k_base",
                 "Effective data limit", "Max input"):
        assert text in page, text
    assert 'href="/agents/Publisher/"' in page  # derived from


def test_it_draws_the_whole_family_from_the_root_with_the_current_agent_marked(api, demo):
    derive("Scholar", "Scholar_Medicine", "Scholar for medicine")
    derive("Scholar_Medicine", "Scholar_Oncology", "Scholar for oncology")
    derive("Scholar", "Scholar_Physics", "Scholar for physics")
    response = signed_in(api.viewer.user).get("/agents/Scholar_Medicine/")
    graph = response.context["lineage_graph"]
    assert {node["id"] for node in graph["nodes"]} == {"Scholar", "Scholar_Medicine", "Scholar_Oncology", "Scholar_Physics"}
    assert [node["id"] for node in graph["nodes"] if node["current"]] == ["Scholar_Medicine"]
    assert {(e["source"], e["target"]) for e in graph["edges"]} == {
        ("Scholar", "Scholar_Medicine"), ("Scholar_Medicine", "Scholar_Oncology"), ("Scholar", "Scholar_Physics")}
    assert all(node["href"] == f"/agents/{node['id']}/" for node in graph["nodes"])
    # The list version of the tree: parents before children, each indented by its depth.
    family = [(n["agent_id"], n["depth"]) for n in response.context["family"]["nodes"]]
    assert family == [("Scholar", 0), ("Scholar_Medicine", 1), ("Scholar_Oncology", 2), ("Scholar_Physics", 1)]
    assert 'id="lineage-data"' in response.content.decode()


def test_it_answers_404_for_an_agent_that_does_not_exist(api, demo):
    assert signed_in(api.viewer.user).get("/agents/Nobody/").status_code == 404
    assert signed_in(api.viewer.user).get("/agents/bad%20id/").status_code == 404


def test_it_diffs_prompt_config_between_the_previous_and_the_latest_version_by_default(api, demo):
    edit_prompt("Scholar", "You read papers carefully.", api.author.user)
    edit_prompt("Scholar", "You read papers very carefully.", api.author.user)
    response = signed_in(api.viewer.user).get("/agents/Scholar/")
    assert [v["version"] for v in response.context["versions"]] == ["1.0.2", "1.0.1", "1.0.0"]
    diff = response.context["diff"]
    assert (diff["older"], diff["newer"]) == ("1.0.1", "1.0.2")
    changed = [(line["kind"], line["text"]) for line in diff["lines"] if line["kind"] in ("add", "remove")]
    assert changed == [("remove", '-  "system_prompt": "You read papers carefully.",'),
                       ("add", '+  "system_prompt": "You read papers very carefully.",')]
    page = response.content.decode()
    assert '<span class="line add">+  &quot;system_prompt&quot;: &quot;You read papers very carefully.&quot;,</span>' in page


def test_it_diffs_the_two_versions_chosen(api, demo):
    edit_prompt("Scholar", "You read papers carefully.", api.author.user)
    edit_prompt("Scholar", "You read papers very carefully.", api.author.user)
    response = signed_in(api.viewer.user).get("/agents/Scholar/", {"from": "1.0.0", "to": "1.0.2"})
    removed = [line["text"] for line in response.context["diff"]["lines"] if line["kind"] == "remove"]
    assert removed == ['-  "system_prompt": "You read papers and extract knowledge atoms (claims, evidence, '
                       'methodology, background).",']
    # Unknown versions fall back to the default comparison rather than failing.
    fallback = signed_in(api.viewer.user).get("/agents/Scholar/", {"from": "9.9", "to": "1.0.2"}).context["diff"]
    assert (fallback["older"], fallback["newer"]) == ("1.0.1", "1.0.2")


def test_it_says_when_there_is_only_one_version(api, demo):
    response = signed_in(api.viewer.user).get("/agents/Validator/")
    assert response.context["diff"] is None
    assert "Only one version so far" in response.content.decode()


def test_it_lists_the_runs_the_agent_took_part_in_and_their_evaluations(api, demo):
    finished_run("exec_with_scholar", "thesis_reading", ["Scholar", "Validator", "Scholar"])
    finished_run("exec_without_scholar", "release_review", ["Drafter"])
    evaluation("eval_of_scholar", "agent", "Scholar", 0.9, feedback=["clear atoms"])
    evaluation("eval_of_run", "execution", "exec_with_scholar", 0.4)
    evaluation("eval_of_other_run", "execution", "exec_without_scholar", 0.6)
    evaluation("eval_of_validator", "agent", "Validator", 0.6)
    response = signed_in(api.viewer.user).get("/agents/Scholar/")
    runs = response.context["executions"]
    assert [(e.execution_id, e.agent_runs) for e in runs["rows"]] == [("exec_with_scholar", 2)]
    assert runs["total"] == 1
    evaluations = response.context["evaluations"]
    assert {e.evaluation_id for e in evaluations["rows"]} == {"eval_of_scholar", "eval_of_run"}
    page = response.content.decode()
    assert 'href="/executions/exec_with_scholar/"' in page
    assert 'href="/workflows/thesis_reading/"' in page
    assert "clear atoms" in page
    assert 'href="/evaluations/?target_type=agent&amp;target_id=Scholar"' in page


def test_it_reads_the_agent_page_in_the_same_number_of_queries_however_much_there_is(api, demo, django_assert_max_num_queries):
    viewer = signed_in(api.viewer.user)
    edit_prompt("Scholar", "You read papers carefully.", api.author.user)  # two versions: the diff is read
    viewer.get("/agents/Scholar/")  # warm the session

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert viewer.get("/agents/Scholar/").status_code == 200
        return len(captured)

    small = queries()
    # A big family, many versions, a thousand node runs over fifty runs, evaluations and requests.
    for number in range(30):
        derive("Scholar", f"Scholar_child_{number}", f"Child {number}")
    scholar = Agent.objects.get(agent_id="Scholar")
    AgentVersion.objects.bulk_create([AgentVersion(agent=scholar, version=f"0.{n}", content={"prompt_config": {}})
                                      for n in range(40)])
    workflow = Workflow.objects.get(workflow_id="thesis_reading")
    executions = Execution.objects.bulk_create([Execution(execution_id=f"exec_{n}", workflow=workflow, status="success")
                                                for n in range(50)])
    NodeRun.objects.bulk_create([NodeRun(execution=executions[n % 50], node_id=f"node_{n}", agent=scholar,
                                         status="success", sequence=n) for n in range(1000)])
    Evaluation.objects.bulk_create([
        Evaluation(evaluation_id=f"eval_{n}", target_type="execution", target_id=f"exec_{n % 50}", accuracy=0.5,
                   completeness=0.5, efficiency=0.5, overall_score=0.5, passed=False, action="revise")
        for n in range(60)])
    for n in range(25):  # decided, as one agent has one pending request per trigger at most
        raised = derive_request_services.derive_request_create(parent_agent_id="Scholar", trigger="quality_issue",
                                                new_name=f"Child {n}", user=api.author.user)
        derive_request_services.derive_request_reject(request=raised, user=api.approver.user)
    assert queries() == small
    with django_assert_max_num_queries(16):
        response = viewer.get("/agents/Scholar/")
    assert len(response.context["family"]["nodes"]) == 31
    assert len(response.context["executions"]["rows"]) == 20 and response.context["executions"]["total"] == 50


# --- who sees what -------------------------------------------------------------------

def test_it_shows_the_edit_button_and_the_derive_form_to_authors_only(api, demo):
    for user, expected in ((api.viewer.user, False), (api.approver.user, False), (api.author.user, True),
                           (api.admin.user, True)):
        page = signed_in(user).get("/agents/Scholar/").content.decode()
        assert ('id="edit-agent"' in page) is expected, user
        assert ('id="raise-form"' in page) is expected, user


@pytest.mark.parametrize("method", ["get", "post"])
def test_it_refuses_the_edit_form_to_a_viewer_with_403(api, demo, method):
    response = getattr(signed_in(api.viewer.user), method)("/agents/Scholar/edit/", {"name": "Taken over"})
    assert response.status_code == 403
    assert "Only a user with the <strong>author</strong> role may edit agent Scholar" in response.content.decode()
    assert Agent.objects.get(agent_id="Scholar").name == "Scholar"


# --- editing -------------------------------------------------------------------------

def edit_form(browser: Client, agent_id: str) -> dict:
    form = browser.get(f"/agents/{agent_id}/edit/").context["form"]
    return {name: form[name].value() or "" for name in form.fields}


def test_it_fills_the_edit_form_with_what_the_agent_is(api, demo):
    values = edit_form(signed_in(api.author.user), "Backup_Publisher")
    assert values["name"] == "Backup Publisher"
    assert values["system_prompt"] == "You publish release notes when the main publisher cannot."
    assert values["skills"] == "publish, compliance_check"
    assert values["constraints"] == "publish only reviewed drafts"
    assert (values["backend"], values["based_on"]) == ("builtin", "1.0.0")


def test_it_saves_an_edit_as_a_new_version_through_the_service(api, demo):
    author = signed_in(api.author.user)
    values = edit_form(author, "Backup_Publisher")
    values.update(system_prompt="You publish release notes, carefully.", skills="publish, compliance_check, translate",
                  constraints="publish only reviewed drafts\nnever on Fridays", model="tiny")
    response = author.post("/agents/Backup_Publisher/edit/", values)
    assert response.status_code == 302
    assert response["Location"] == "/agents/Backup_Publisher/?from=1.0.0&to=1.0.1#versions"
    agent = Agent.objects.get(agent_id="Backup_Publisher")
    assert agent.version == "1.0.1"
    assert agent.prompt_config["system_prompt"] == "You publish release notes, carefully."
    assert agent.prompt_config["role_play"] == "Backup Publisher"  # untouched parts stay
    assert agent.capabilities["skills"] == ["publish", "compliance_check", "translate"]
    assert agent.constraints == ["publish only reviewed drafts", "never on Fridays"]
    assert (agent.model, agent.parent.agent_id, agent.max_input_tokens) == ("tiny", "Publisher", 100_000)
    assert AgentVersion.objects.get(agent=agent, version="1.0.1").created_by == "author-user"
    page = author.get(response["Location"]).content.decode()
    assert "Saved Backup Publisher as version 1.0.1." in page
    assert "You publish release notes, carefully." in page


def test_it_says_so_when_an_edit_changes_nothing(api, demo):
    author = signed_in(api.author.user)
    response = author.post("/agents/Scholar/edit/", edit_form(author, "Scholar"), follow=True)
    assert "Nothing changed: Scholar stays at version 1.0.0." in response.content.decode()
    assert AgentVersion.objects.filter(agent__agent_id="Scholar").count() == 1


def test_it_shows_a_form_error_next_to_its_field_and_saves_nothing(api, demo):
    author = signed_in(api.author.user)
    values = edit_form(author, "Scholar") | {"name": "", "backend": "nowhere"}
    response = author.post("/agents/Scholar/edit/", values)
    assert response.status_code == 200
    assert response.context["form"].errors["name"] == ["This field is required."]
    assert "nowhere is not one of the available choices" in response.context["form"].errors["backend"][0]
    page = response.content.decode()
    assert re.search(r'<p class="field-error" id="id_name-error" data-for="name">This field is required.</p>', page)
    assert 'aria-invalid="true"' in page
    assert Agent.objects.get(agent_id="Scholar").version == "1.0.0"


def test_it_puts_the_services_error_next_to_the_field_it_names(api, demo, monkeypatch):
    def refuse(**kwargs):
        raise DocumentError("is not a skill any backend knows", where="capabilities.skills[1]")

    monkeypatch.setattr(services, "agent_update", refuse)
    author = signed_in(api.author.user)
    response = author.post("/agents/Scholar/edit/", edit_form(author, "Scholar") | {"skills": "extract_atoms, fly"})
    assert response.status_code == 200
    assert response.context["form"].errors["skills"] == ["is not a skill any backend knows"]
    assert Agent.objects.get(agent_id="Scholar").capabilities["skills"] == ["extract_atoms"]


def test_it_refuses_to_overwrite_a_version_saved_since_the_form_was_opened(api, demo):
    author = signed_in(api.author.user)
    values = edit_form(author, "Scholar") | {"system_prompt": "Mine."}
    edit_prompt("Scholar", "Theirs.", api.admin.user)  # someone else saves first
    response = author.post("/agents/Scholar/edit/", values)
    assert response.status_code == 200
    assert "it is version 1.0.1 now, not 1.0.0" in response.content.decode()
    assert Agent.objects.get(agent_id="Scholar").prompt_config["system_prompt"] == "Theirs."
    # Saving again, knowingly, replaces it.
    again = author.post("/agents/Scholar/edit/", values | {"based_on": "1.0.1"})
    assert again.status_code == 302
    assert Agent.objects.get(agent_id="Scholar").prompt_config["system_prompt"] == "Mine."


# --- blueprints ----------------------------------------------------------------------

def test_it_links_each_blueprint_to_its_page(api, demo):
    page = signed_in(api.viewer.user).get("/blueprints/").content.decode()
    assert 'href="/blueprints/thesis_reading_system/"' in page


def test_it_shows_a_blueprints_agents_with_their_roles_and_its_contracts(api, demo, django_assert_max_num_queries):
    viewer = signed_in(api.viewer.user)
    with django_assert_max_num_queries(8):
        response = viewer.get("/blueprints/thesis_reading_system/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "extracts knowledge atoms from papers" in page and 'href="/agents/Knowledge_Vault/"' in page
    assert "integrates atoms into the vault" in page
    assert "knowledge_atoms" in page and "validation_results" in page
    assert '&quot;atom_type&quot;: {\n' in page  # the schema, pretty-printed
    graph = response.context["graph"]
    assert {(e["source"], e["target"], e["label"]) for e in graph["edges"]} == {
        ("Scholar", "Validator", "knowledge_atoms"), ("Validator", "Knowledge_Vault", "validation_results")}


def test_it_answers_404_for_a_blueprint_that_does_not_exist(api, demo):
    assert signed_in(api.viewer.user).get("/blueprints/nothing_here/").status_code == 404


# --- in the browser ------------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_it_lets_an_author_edit_the_system_prompt_and_see_the_new_version_and_the_diff(page_for, api, demo):
    from playwright.sync_api import expect

    from tests.pages.conftest import screenshot

    derive("Scholar", "Scholar_Medicine", "Scholar for medicine")
    derive("Scholar_Medicine", "Scholar_Oncology", "Scholar for oncology")
    derive("Scholar", "Scholar_Physics", "Scholar for physics")
    finished_run("exec_20260203_thesis", "thesis_reading", ["Scholar", "Validator", "Knowledge_Vault"])
    evaluation("eval_thesis_run", "execution", "exec_20260203_thesis", 0.82, feedback=["atoms well grounded"])
    evaluation("eval_scholar", "agent", "Scholar", 0.64, accuracy=0.7, completeness=0.55, efficiency=0.68,
               feedback=["misses methodology atoms"])
    page = page_for(api.author.user)
    page.goto("/agents/Scholar/")
    page.click("#edit-agent")
    page.wait_for_url("**/agents/Scholar/edit/")
    page.fill("textarea[name=system_prompt]", "You read papers and extract knowledge atoms, citing the page of each.")
    page.click("#save-agent")
    page.wait_for_url("**/agents/Scholar/?from=1.0.0&to=1.0.1#versions")
    expect(page.locator(".messages")).to_contain_text("Saved Scholar as version 1.0.1.")
    expect(page.locator(".page-head .chip.version")).to_have_text("v1.0.1")
    expect(page.locator(".diff .line.remove")).to_contain_text("extract knowledge atoms (claims, evidence")
    expect(page.locator(".diff .line.add")).to_contain_text("citing the page of each")
    # The lineage tree is drawn, with Scholar highlighted; a node opens its agent.
    expect(page.locator("#lineage-graph[data-drawn=true] canvas").first).to_be_attached()
    current = page.evaluate("document.getElementById('lineage-graph').cy.nodes('[?current]').map(n => n.id())")
    assert current == ["Scholar"]
    screenshot(page, "agent_detail")
    page.locator("#lineage-graph").scroll_into_view_if_needed()
    # Let the scroll's events reach cytoscape before clicking, as they would for a person:
    # it maps a click through the container's position, which it re-reads on scroll.
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    box = page.locator("#lineage-graph").bounding_box()
    point = page.evaluate("(() => { const p = document.getElementById('lineage-graph').cy"
                          ".getElementById('Scholar_Physics').renderedPosition(); return [p.x, p.y]; })()")
    page.mouse.click(box["x"] + point[0], box["y"] + point[1])
    page.wait_for_url("**/agents/Scholar_Physics/")
    expect(page.locator("h1")).to_have_text("Scholar for physics")


@pytest.mark.django_db(transaction=True)
def test_it_shows_a_viewer_no_edit_button_and_no_derive_form(page_for, api, demo):
    from playwright.sync_api import expect

    page = page_for(api.viewer.user)
    page.goto("/agents/Backup_Publisher/")
    expect(page.locator("h1")).to_have_text("Backup Publisher")
    expect(page.locator("#lineage-graph[data-drawn=true]")).to_be_attached()
    expect(page.get_by_role("link", name="Edit")).to_have_count(0)
    expect(page.get_by_role("button", name="Edit")).to_have_count(0)
    expect(page.locator("#raise-form")).to_have_count(0)


@pytest.mark.django_db(transaction=True)
def test_it_draws_a_blueprint_with_its_contracts(page_for, api, demo):
    from playwright.sync_api import expect

    from tests.pages.conftest import screenshot

    page = page_for(api.viewer.user)
    page.goto("/blueprints/")
    page.click("text=Thesis reading system")
    page.wait_for_url("**/blueprints/thesis_reading_system/")
    expect(page.locator("#blueprint-graph[data-drawn=true] canvas").first).to_be_attached()
    edges = page.evaluate("document.getElementById('blueprint-graph').cy.edges().map(e => e.data('label'))")
    assert sorted(edges) == ["knowledge_atoms", "validation_results"]
    screenshot(page, "blueprint")


@pytest.mark.django_db(transaction=True)
def test_it_raises_a_derive_request_from_the_agent_page(page_for, api, demo):
    from playwright.sync_api import expect

    page = page_for(api.author.user)
    page.goto("/agents/Scholar/")
    page.click("text=Raise a derive request")
    page.click("#raise-form button[type=submit]")  # no name yet
    expect(page.locator('.field-error[data-for="new_name"]')).to_have_text("Give the new agent a name.")
    page.fill("input[name=new_name]", "Scholar for medicine")
    # The browser stops at 200 characters; without that limit, the API's refusal shows by the field.
    page.evaluate("document.querySelector('input[name=domain_focus]').removeAttribute('maxlength')")
    page.fill("input[name=domain_focus]", "y" * 201)
    page.fill("input[name=additional_skills]", "read_trials, grade_evidence")
    page.fill("textarea[name=note]", "Medical papers keep failing validation.")
    page.click("#raise-form button[type=submit]")
    expect(page.locator('.field-error[data-for="domain_focus"]')).to_have_text("String should have at most 200 characters")
    assert DeriveRequest.objects.count() == 0
    page.fill("input[name=domain_focus]", "clinical trials")
    page.click("#raise-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/derive-requests/dr_[0-9a-f]+/$"))
    expect(page.locator("h1")).to_have_text("Derive Scholar for medicine from Scholar")
    request = DeriveRequest.objects.get()
    assert (request.status, request.created_by, request.additional_skills) == (
        "pending", "author-user", ["read_trials", "grade_evidence"])
    assert request.trigger_context == {"raised_by_hand": True, "note": "Medical papers keep failing validation."}
