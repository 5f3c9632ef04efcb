"""What the experiments' tests share: people signed in to the pages, a finished run to add
to a dataset, and a check that a refusal stored nothing."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from core.documents import import_documents
from demo.documents import AGENTS, RELEASE_REVIEW
from experiments.models import Dataset, DatasetItem, DatasetVersion


def signed_in(role: str | None) -> Client:
    """A client signed in as a new person holding `role` (None: a viewer)."""
    user = User.objects.create_user(username=f"{role or 'viewer'}-person", password="a long password")
    if role:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def author(db):
    return signed_in("author")


@pytest.fixture
def viewer(db):
    return signed_in(None)


def nothing_stored() -> bool:
    return not (Dataset.objects.exists() or DatasetVersion.objects.exists() or DatasetItem.objects.exists())


@pytest.fixture
def finished_run(db):
    """A successful run of release_review with an output on each of its nodes."""
    from executions.models import Execution, NodeRun
    from workflows.models import Workflow

    import_documents([*AGENTS, RELEASE_REVIEW])
    workflow = Workflow.objects.get(workflow_id="release_review")
    execution = Execution.objects.create(execution_id="run_1", workflow=workflow, status="success",
                                         input={"topic": "billing", "draft": "v1"}, state={"verdict": "ok"})
    agents = {node.node_id: node.agent for node in workflow.nodes.select_related("agent")}
    NodeRun.objects.bulk_create([
        NodeRun(execution=execution, agent=agent, node_id=node_id, sequence=index + 1, status="success",
                output={"text": f"{node_id} done"})
        for index, (node_id, agent) in enumerate(agents.items())
    ])
    return execution
