"""`manage.py run_workflow`, a node run on the OpenAI-compatible backend, and what people do
with an escalated run."""
import json
import subprocess
import sys

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core.documents import import_documents
from executions.models import Execution
from executions.services import execution_abort, execution_retry, execution_start
from tests.executions.conftest import ROOT, approve_gate, database_url, wait_for
from tests.workflow_edits import store_as_before
from workflows.models import Workflow

pytestmark = pytest.mark.integration


def test_it_waits_and_prints_the_final_execution_with_its_node_records(demo):
    from django.db import connection

    demo.start(1)
    done = subprocess.run(
        [sys.executable, "manage.py", "run_workflow", "Parallel analysis with compression", "--input",
         '{"repository": "acme"}', "--wait", "--timeout", "120"],
        cwd=ROOT, env={**demo.env, "DATABASE_URL": database_url(connection)}, capture_output=True, text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["status"] == "success" and record["workflow_ref"] == "parallel_analysis"
    assert {r["node_id"] for r in record["results"]} == {"task_a", "task_b", "task_c", "task_d"}
    synthesis = next(r for r in record["node_runs"] if r["node_id"] == "task_d")
    assert synthesis["compression"]["totals"]["dependencies"] == 3 and synthesis["context_management"]


def test_the_demo_research_runs_with_its_tool_calls_on_the_record(demo):
    from django.db import connection

    demo.start(1)
    done = subprocess.run([sys.executable, "manage.py", "run_workflow", "research_with_tools", "--wait", "--timeout",
                           "120"], cwd=ROOT, env={**demo.env, "DATABASE_URL": database_url(connection)},
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    [node] = json.loads(done.stdout)["node_runs"]
    [call] = node["tool_calls"]
    assert (call["name"], call["status"]) == ("builtin.knowledge_search", "success")
    assert [turn["tool_call_ids"] for turn in node["turns"]] == [[call["id"]], []]
    assert set(node["output"]["sources"]) <= {atom["atom_id"] for atom in call["result"]["atoms"]}


@pytest.mark.parametrize("arguments, message", [
    (["no_such_workflow"], "no workflow has the id or name"),
    (["thesis_reading", "--input", "{oops"], "--input: malformed JSON"),
    (["thesis_reading", "--input", "[1, 2]"], "--input: the input of a run is a JSON object"),
    (["thesis_reading", "--input", "[" * 100_000 + "]" * 100_000], "--input: the JSON is nested too deeply"),
    (["thesis_reading", "--input", '{"topic": NaN}'], "--input: NaN is not a JSON number"),
    (["thesis_reading", "--input", '{"topic": "lone \\ud800"}'], "--input: input.topic: is not valid Unicode"),
])
def test_it_exits_2_on_bad_input(demo, arguments, message):
    with pytest.raises(CommandError, match=message) as caught:
        call_command("run_workflow", *arguments)
    assert caught.value.returncode == 2
    assert not Execution.objects.exists()


def test_it_exits_1_when_the_run_does_not_succeed(demo):
    demo.start(1)
    with pytest.raises(CommandError, match="is waiting for a decision at the gates approve") as caught:
        call_command("run_workflow", "release_review", "--input", '{"topic": "x"}', "--wait", "--timeout", "120",
                     stdout=open("/dev/null", "w"))
    assert caught.value.returncode == 1


def test_it_retries_or_aborts_an_escalated_run(demo):
    demo.start(1)
    workflow = Workflow.objects.get(workflow_id="release_review")
    execution = wait_for(execution_start(workflow=workflow, input={"topic": "a"}), workers=demo)
    execution = wait_for(approve_gate(execution), statuses=("escalated", "failed", "success"), workers=demo)
    assert execution.status == "escalated"
    execution_retry(execution=execution)
    execution = wait_for(execution, statuses=("escalated", "failed", "success"), workers=demo, timeout=60)
    compliance = execution.node_runs.filter(node_id="compliance").order_by("sequence")
    assert execution.status == "escalated" and compliance.count() == 4, "tried again: first attempt, then fallback"
    execution_abort(execution=execution)
    execution.refresh_from_db()
    assert execution.status == "failed" and execution.ended_reason.startswith("aborted by")


def test_it_runs_a_node_on_an_openai_compatible_server(workers, settings, chat_server):
    chat_server.reply('{"verdict": "accept", "comments": "fine"}', usage={"prompt_tokens": 321, "completion_tokens": 9})
    backend = {"kind": "openai_compatible", "base_url": chat_server.base_url, "api_key_env": "OPENAI_API_KEY",
               "timeout_seconds": 10, "max_retries": 1, "model": "test-model"}
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "openai": backend}
    workers.env.update(OPENAI_BASE_URL=chat_server.base_url, OPENAI_API_KEY="sk-test", OPENAI_MODEL="test-model")
    import_documents([
        {"agent_id": "Remote_Reviewer", "name": "Remote reviewer", "version": "1.0.0", "type": "business",
         "status": "active", "prompt_config": {"system_prompt": "You review drafts."},
         "capabilities": {"skills": ["review"]}, "runtime": {"backend": "openai", "model": "test-model"}},
        {"workflow_id": "remote_review", "name": "Remote review", "topology": "seq",
         "nodes": [{"id": "review", "agent_ref": "Remote_Reviewer", "input_mapping": {"draft": "$.input.draft"}}]},
    ], actor="test")
    workers.start(1)
    execution = wait_for(execution_start(workflow=Workflow.objects.get(workflow_id="remote_review"),
                                         input={"draft": "Release notes for v2"}), workers=workers)
    assert execution.status == "success", execution.ended_reason
    run = execution.node_runs.get()
    assert run.output == {"verdict": "accept", "comments": "fine"}
    assert (run.backend, run.model, run.tokens_in, run.tokens_out) == ("openai", "test-model", 321, 9)
    (request,) = chat_server.requests
    assert request.header("Authorization") == "Bearer sk-test"
    assert "Release notes for v2" in request.body["messages"][-1]["content"]


def test_it_exits_2_naming_a_transition_the_workflow_cannot_honour(demo):
    store_as_before("parallel_analysis", lambda document: next(  # stored before it was refused
        t for t in document["transitions"] if t["from"] == "task_b").update(condition="output.ok == true"))
    with pytest.raises(CommandError, match=r"transitions\[1\]\.condition: \(task_b → task_d\) a condition") as caught:
        call_command("run_workflow", "parallel_analysis")
    assert caught.value.returncode == 2
    assert not Execution.objects.exists()
