"""What a run cost, on a real worker: the demo chain served by two named OpenAI-compatible
backends (two loopback servers that report usage), every call recorded with the backend and
model that served it, and every cost recomputed here from the catalogue's prices and the
usage the servers reported; node costs sum to the run's cost exactly."""
from decimal import Decimal

import pytest

from agents.documents import agent_document
from agents.models import Agent
from agents.services import agent_import_document
from executions.services import execution_start
from tests.agents.backends.chat_server import ChatServer
from tests.executions.conftest import thesis_reply, wait_for
from workflows.models import Workflow

pytestmark = pytest.mark.integration

HOSTED_USAGE = {"prompt_tokens": 1234, "completion_tokens": 56, "prompt_tokens_details": {"cached_tokens": 1000}}
LOCAL_USAGE = {"prompt_tokens": 4321, "completion_tokens": 65}


def move(agent_id, backend, model):
    """Put the agent on another backend and model; its encoding follows the model."""
    document = agent_document(Agent.objects.get(agent_id=agent_id))
    runtime = {key: value for key, value in document.get("runtime", {}).items() if key != "encoding"}
    agent_import_document({**document, "runtime": {**runtime, "backend": backend, "model": model}}, actor="test")


@pytest.fixture
def two_servers(tmp_path, settings, demo):
    with ChatServer() as hosted, ChatServer() as local:
        hosted.reply(usage=HOSTED_USAGE).respond_with(thesis_reply)
        local.reply(usage=LOCAL_USAGE).respond_with(thesis_reply)
        config = tmp_path / "backends.toml"
        config.write_text(f"""
[backends.hosted]
kind = "openai_compatible"
base_url = "{hosted.base_url}"
api_key_env = "HOSTED_KEY"
max_retries = 0

[backends.local]
kind = "openai_compatible"
base_url = "{local.base_url}"
max_retries = 0

[models."local-llama"]
context_window = 32768
input_price = "0.02"
output_price = "0.05"
""")
        from agents.backends.config import read_backends_file

        loaded = read_backends_file(config)
        settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, **loaded["backends"]}
        settings.MODEL_OVERRIDES = loaded["models"]
        demo.env.update(SWITCHYARD_BACKENDS_FILE=str(config), HOSTED_KEY="sk-hosted")
        yield hosted, local


def test_the_demo_chain_on_two_named_backends_costs_what_the_prices_and_usage_say(demo, two_servers, api):
    hosted, local = two_servers
    move("Scholar", "hosted", "gpt-4o-mini")
    move("Validator", "hosted", "gpt-4o-mini")
    move("Knowledge_Vault", "local", "local-llama")
    demo.start(1)

    execution = wait_for(execution_start(workflow=Workflow.objects.get(workflow_id="thesis_reading")),
                         workers=demo, timeout=120)

    assert execution.status == "success", (execution.ended_reason, demo.logs())
    runs = list(execution.node_runs.order_by("sequence"))
    served = {run.node_id: {(call["backend"], call["model"]) for call in run.calls} for run in runs}
    assert served == {"task_scholar_001": {("hosted", "gpt-4o-mini")}, "task_validator_001": {("hosted", "gpt-4o-mini")},
                      "task_vault_001": {("local", "local-llama")}}
    assert hosted.requests and local.requests
    assert all(request.header("Authorization") == "Bearer sk-hosted" for request in hosted.requests)
    assert all(request.header("Authorization") is None for request in local.requests)

    # gpt-4o-mini's published prices (per million tokens): 0.15 input, 0.075 cached input, 0.60 output.
    hosted_call = (Decimal(234) * Decimal("0.15") + Decimal(1000) * Decimal("0.075") + Decimal(56) * Decimal("0.60")) / 10**6
    local_call = (Decimal(4321) * Decimal("0.02") + Decimal(65) * Decimal("0.05")) / 10**6
    total = Decimal(0)
    for run in runs:
        expected_call = hosted_call if run.node_id != "task_vault_001" else local_call
        assert run.calls and all(call["usage"] == "reported" for call in run.calls)
        assert all(Decimal(call["cost"]) == expected_call for call in run.calls), run.calls
        assert Decimal(run.cost) / 10**12 == expected_call * len(run.calls)
        total += expected_call * len(run.calls)
    vault = runs[-1]
    assert len(vault.calls) == len(local.requests)  # one call per batch, each recorded
    assert Decimal(execution.cost) / 10**12 == total == sum(Decimal(run.cost) for run in runs) / 10**12
    assert execution.cost_complete is True

    # What the workflow and each agent cost, run by run, as their pages chart it.
    (latest,) = api.viewer.get("/api/workflows/thesis_reading/costs").json()
    assert (latest["execution_id"], Decimal(latest["cost"])) == (execution.execution_id, total)
    (vault_cost,) = api.viewer.get("/api/agents/Knowledge_Vault/costs").json()
    assert Decimal(vault_cost["cost"]) == Decimal(vault.cost) / 10**12 and vault_cost["tokens_in"] == vault.tokens_in
    record = api.viewer.record(execution.execution_id)
    assert Decimal(record["cost"]) == total and record["node_runs"][0]["calls"][0]["backend"] == "hosted"


def test_a_run_with_a_cost_limit_stops_before_the_call_that_would_cross_it(demo, two_servers, api):
    from tests.workflow_edits import edit_workflow

    hosted, _ = two_servers
    for agent_id in ("Scholar", "Validator", "Knowledge_Vault"):
        move(agent_id, "hosted", "gpt-4o-mini")
    # Each call may write this many tokens: what a call could cost is its input and this, priced.
    Agent.objects.filter(agent_id__in=["Scholar", "Validator"]).update(max_output_tokens=1000)
    Agent.objects.filter(agent_id="Knowledge_Vault").update(max_output_tokens=4000)
    edit_workflow("thesis_reading", lambda document: document["limits"].update(max_cost="0.0015"))
    demo.start(1)

    execution = wait_for(execution_start(workflow=Workflow.objects.get(workflow_id="thesis_reading")),
                         workers=demo, timeout=120)

    assert execution.status == "failed", (execution.status, demo.logs())
    assert execution.ended_reason.startswith("BUDGET_EXCEEDED at node 'task_vault_001': the next call (up to $")
    assert "would take the run past its max_cost $0.001500000000" in execution.ended_reason
    vault = execution.node_runs.get(node_id="task_vault_001")
    assert vault.error_code == "BUDGET_EXCEEDED" and vault.error_details["limit"] == "max_cost"
    assert vault.calls == [] and execution.node_runs.filter(node_id="task_vault_001").count() == 1  # never retried
    assert len(hosted.requests) == 2  # the vault's call was never made
    spent = Decimal(execution.cost) / 10**12
    assert spent == 2 * (Decimal(234) * Decimal("0.15") + Decimal(1000) * Decimal("0.075")
                         + Decimal(56) * Decimal("0.60")) / 10**6
    assert spent + Decimal(vault.error_details["estimate"]) > Decimal("0.0015") >= spent
    assert execution.cost_reserved == 0  # every claim on the limit released

    record = api.viewer.record(execution.execution_id)
    assert record["ended_reason"] == execution.ended_reason and record["cost"] == f"{spent:.12f}"
    assert record["node_runs"][-1]["error_code"] == "BUDGET_EXCEEDED"
