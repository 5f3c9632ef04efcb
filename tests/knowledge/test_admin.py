import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from knowledge.models import KnowledgeAtom

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, settings, tmp_path):
    settings.WORKSPACE_ROOT = tmp_path
    call_command("load_demo")
    client.force_login(get_user_model().objects.create_superuser("root", password="pw-not-used"))
    return client


@pytest.mark.parametrize("page", ["paper", "knowledgeatom", "relation", "qualityrecord"])
def test_it_lists_and_searches_every_knowledge_model(admin_client, page):
    response = admin_client.get(f"/admin/knowledge/{page}/", {"q": "transformer"})
    assert response.status_code == 200
    assert "0 results" not in response.content.decode()


def test_it_shows_an_atom(admin_client):
    atom = KnowledgeAtom.objects.get(atom_id="atom_transformer_001")
    response = admin_client.get(f"/admin/knowledge/knowledgeatom/{atom.pk}/change/")
    assert response.status_code == 200 and "dispensing with recurrence" in response.content.decode()
