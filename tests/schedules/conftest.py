"""A workflow to schedule: the demo's parallel analysis, declaring one required input."""
import pytest

INPUTS = {"type": "object", "properties": {"repository": {"type": "string", "description": "the repository"}},
          "required": ["repository"]}


@pytest.fixture
def workflow(db, tmp_path, settings):
    from core.documents import import_documents
    from demo.documents import AGENTS, PARALLEL_ANALYSIS
    from workflows.models import Workflow

    settings.WORKSPACE_ROOT = tmp_path
    import_documents([*AGENTS, {**PARALLEL_ANALYSIS, "input_schema": INPUTS}])
    return Workflow.objects.get(workflow_id="parallel_analysis")
