import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from agents.models import Agent

pytestmark = pytest.mark.django_db

PAGES = [
    "agents/agent", "agents/agentversion", "agents/deriverequest", "workflows/workflow",
    "workflows/blueprint", "executions/execution", "executions/noderun", "executions/evaluation",
]


def form_post(page, document):
    assert not page.context["inline_admin_formsets"], "everything is edited through the document"
    return {"document": json.dumps(document)}


def document_of(page):
    return json.loads(page.context["adminform"].form["document"].value())


@pytest.fixture
def admin_client(client, settings, tmp_path):
    settings.WORKSPACE_ROOT = tmp_path
    call_command("load_demo")
    user = get_user_model().objects.create_superuser("root", password="pw-not-used")
    client.force_login(user)
    return client


@pytest.mark.parametrize("page", PAGES)
def test_it_lists_every_model_with_search_and_filters(admin_client, page):
    response = admin_client.get(f"/admin/{page}/", {"q": "a"})
    assert response.status_code == 200


def test_it_sends_anonymous_visitors_to_the_login_page(client):
    response = client.get("/admin/agents/agent/")
    assert response.status_code == 302 and response["Location"] == "/login/?next=/admin/agents/agent/"


def test_it_edits_an_agent_as_its_document_and_makes_a_new_version(admin_client):
    agent = Agent.objects.get(agent_id="Scholar")
    page = admin_client.get(f"/admin/agents/agent/{agent.pk}/change/")
    assert page.status_code == 200
    document = document_of(page)
    document["constraints"] = ["Quote the sentence each atom comes from"]
    response = admin_client.post(f"/admin/agents/agent/{agent.pk}/change/", form_post(page, document))
    assert response.status_code == 302, response.content.decode()[:2000]
    agent.refresh_from_db()
    assert agent.version == "1.0.1" and agent.versions.count() == 2


def test_it_shows_workflow_problems_on_the_form_and_saves_nothing(admin_client):
    from workflows.models import Workflow

    workflow = Workflow.objects.get(workflow_id="parallel_analysis")
    page = admin_client.get(f"/admin/workflows/workflow/{workflow.pk}/change/")
    document = document_of(page)
    document["transitions"].append({"from": "task_d", "to": "task_a"})
    response = admin_client.post(f"/admin/workflows/workflow/{workflow.pk}/change/", form_post(page, document))
    assert response.status_code == 200
    assert "(task_d → task_a) closes a cycle in the dag" in response.content.decode()
    assert workflow.transitions.count() == 3


def test_it_adds_an_evaluation_through_the_admin(admin_client):
    document = {
        "evaluation_id": "eval_admin", "target_type": "workflow", "target_id": "release_review",
        "scores": {"accuracy": 0.5, "completeness": 0.5, "efficiency": 0.5}, "overall_score": 0.5,
        "pass": False, "feedback": ["added by hand"], "action": "revise",
    }
    response = admin_client.post("/admin/executions/evaluation/add/", {"document": json.dumps(document)})
    assert response.status_code == 302
    from executions.models import Evaluation

    assert Evaluation.objects.get(evaluation_id="eval_admin").created_by == "root"


@pytest.mark.parametrize("text, message", [
    ("[" * 100_000 + "]" * 100_000, "the JSON is nested too deeply"),
    ('{"evaluation_id": "eval_x", "overall_score": NaN}', "NaN is not a JSON number"),
    ('{"evaluation_id": ' + "9" * 5000 + "}", "an integer of 5000 digits is too long"),
    ('{"evaluation_id": "eval_x", "feedback": ["lone \\ud800"]}', "feedback[0]: is not valid Unicode"),
])
def test_it_shows_a_document_it_cannot_read_as_a_form_error_and_saves_nothing(admin_client, text, message):
    from executions.models import Evaluation

    before = Evaluation.objects.count()
    response = admin_client.post("/admin/executions/evaluation/add/", {"document": text})
    assert response.status_code == 200
    assert message in response.context["adminform"].form.errors["document"][0]
    assert Evaluation.objects.count() == before
