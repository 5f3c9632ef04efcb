"""Every model call of a run is on its record, whatever made it: a node, its batches, a
Tree-of-Thoughts search's roles, the judge; and every one is held to the run's max_cost —
the judge's, a call the server counted more tokens for than its bound, the claims of a
worker killed mid-call (node runs run in this process; the real-worker proofs with priced
models are in test_costs_worker.py)."""
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from decimal import Decimal
from unittest import mock

import pytest
from django.utils import timezone

from agents.backends.metering import units
from agents.backends.openai import OpenAICompatibleBackend
from agents.documents import agent_document
from agents.models import Agent
from agents.services import agent_import_document
from executions.models import NodeRun
from executions.services import execution_start, node_runs_sweep
from quality.evaluations import execution_evaluate
from tests.executions.conftest import drain, thesis_reply
from tests.workflow_edits import edit_workflow
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def demo(in_process):
    return in_process


def run(workflow_id, **input):
    return drain(execution_start(workflow=Workflow.objects.get(workflow_id=workflow_id), input=input))


def test_a_search_records_each_role_call_and_a_batched_node_each_batch():
    search = run("game24", numbers=[4, 9, 10, 13])
    (solve,) = search.node_runs.all()
    purposes = {call["purpose"] for call in solve.calls}
    assert {"tot decomposer", "tot generator", "tot evaluator"} <= purposes
    assert all(call["backend"] == "builtin" and call["usage"] == "builtin" and call["cost"] == "0.000000000000"
               for call in solve.calls)
    assert solve.cost == 0 and solve.cost_complete and search.cost == 0

    chain = run("thesis_reading")
    vault = chain.node_runs.get(node_id="task_vault_001")
    batches = [call["purpose"] for call in vault.calls]
    assert len(batches) > 1 and batches == [f"batch {i}/{len(batches)}" for i in range(1, len(batches) + 1)]
    assert sum(call["tokens_in"] for call in vault.calls) == vault.tokens_in


def test_the_judges_call_is_part_of_what_the_run_cost():
    analysis = run("parallel_analysis", repository="acme/shop")
    assert analysis.calls == []
    execution_evaluate(execution_pk=analysis.pk)
    analysis.refresh_from_db()
    (judge,) = analysis.calls
    assert (judge["purpose"], judge["backend"], judge["usage"]) == ("judge", "builtin", "builtin")
    assert analysis.cost_complete is True


# -- the run's cost limit holds for every call -------------------------------------------------

# A model priced in round figures: $1 per million tokens in, $2 per million out.
PRICED = {"input_price": Decimal("1"), "output_price": Decimal("2")}


class WorkerKilled(BaseException):
    """The worker process dies: nothing after this line of the worker runs."""


@pytest.fixture
def priced(settings, chat_server):
    """The loopback chat-completions server as the backend `chat`, serving `priced-model`."""
    settings.LLM_BACKENDS = {**settings.LLM_BACKENDS, "chat": {
        "kind": "openai_compatible", "base_url": chat_server.base_url, "model": "priced-model", "max_retries": 0,
        "timeout_seconds": 5}}
    settings.MODEL_OVERRIDES = {"priced-model": PRICED}
    chat_server.respond_with(thesis_reply)
    return chat_server


def serve(agent_ids, *, max_output_tokens=None):
    """Move the agents to the priced model on the loopback server."""
    for agent_id in agent_ids:
        document = agent_document(Agent.objects.get(agent_id=agent_id))
        agent_import_document({**document, "runtime": {**document.get("runtime", {}), "backend": "chat",
                                                       "model": "priced-model"}}, actor="test")
    if max_output_tokens is not None:
        Agent.objects.filter(agent_id__in=agent_ids).update(max_output_tokens=max_output_tokens)


def dollars(units):
    return Decimal(units) / 10**12


def test_it_holds_the_judge_to_the_runs_budget_and_says_so_when_nothing_is_left(priced):
    serve(["Code_Analyzer", "Judge"], max_output_tokens=100)
    priced.reply(usage={"prompt_tokens": 2000, "completion_tokens": 20})
    priced.respond_with(lambda body: {"score": 0.5, "feedback": ["fine"]})
    edit_workflow("parallel_analysis", lambda document: document.setdefault("limits", {}).update(max_cost="0.000001"))
    stopped = run("parallel_analysis", repository="acme")
    assert stopped.status == "failed" and stopped.ended_reason.startswith("BUDGET_EXCEEDED at node 'task_a'")
    assert stopped.cost == 0 and priced.requests == []

    evaluation = execution_evaluate(execution_pk=stopped.pk)

    assert priced.requests == [], "the judge's call was made past the run's max_cost"
    stopped.refresh_from_db()
    assert (stopped.cost, stopped.cost_reserved, stopped.calls) == (0, 0, [])
    problem = evaluation.details["accuracy"]["judge_problem"]
    assert problem.startswith("judge Judge could not answer (BUDGET_EXCEEDED)") and "max_cost $0.000001" in problem
    assert problem in evaluation.feedback

    # With room left, the judge is asked, and what it cost is within the run's limit and on its record.
    edit_workflow("parallel_analysis", lambda document: document["limits"].update(max_cost="0.01"))
    Agent.objects.filter(agent_id="Code_Analyzer").update(backend="builtin", model="")
    judged = run("parallel_analysis", repository="acme")
    assert judged.status == "success"
    evaluation = execution_evaluate(execution_pk=judged.pk)
    assert len(priced.requests) == 1 and evaluation.details["accuracy"]["judge"]["score"] == 0.5
    judged.refresh_from_db()
    assert dollars(judged.cost) == Decimal(2000 * 1 + 20 * 2) / 10**6 and judged.cost_reserved == 0


def test_it_stops_a_run_whose_server_counted_more_input_than_its_bound_once_its_spend_crossed_the_limit(priced):
    serve(["Scholar", "Validator", "Knowledge_Vault"], max_output_tokens=100)
    small = {"prompt_tokens": 500, "completion_tokens": 10}
    priced.reply_once(None, usage=small).reply_once(None, usage=small)  # the scholar's and the validator's calls
    # Then the server counts 30,000 tokens in each of the vault's prompts, far more than are
    # counted here: $0.03002 a call, each within its own bound's check, two past the limit.
    priced.reply(usage={"prompt_tokens": 30_000, "completion_tokens": 10})
    edit_workflow("thesis_reading", lambda document: document["limits"].update(max_cost="0.05"))

    execution = run("thesis_reading")

    call = Decimal(30_000 * 1 + 10 * 2) / 10**6
    assert len(priced.requests) == 4, "a call was made after the run's spend had crossed its max_cost"
    assert execution.status == "failed"
    # Every call, as the server counted it, on the record, and the record says the limit was crossed.
    spent = 2 * Decimal(500 * 1 + 10 * 2) / 10**6 + 2 * call
    assert dollars(execution.cost) == spent
    assert execution.ended_reason.startswith(f"BUDGET_EXCEEDED at node 'task_vault_001': the run has spent ${spent:.12f}, "
                                             "past its max_cost $0.050000000000: its last call cost $0.030020000000")
    assert execution.cost_reserved == 0
    vault = execution.node_runs.get(node_id="task_vault_001")
    assert vault.error_code == "BUDGET_EXCEEDED" and vault.error_details["limit"] == "max_cost"
    assert vault.error_details["crossed"] is True and vault.error_details["tokens_in"] == 30_000
    assert vault.error_details["tokens_counted"] < 30_000
    assert Decimal(vault.error_details["cost"]) == call > Decimal(vault.error_details["estimate"])
    assert [entry["usage"] for entry in vault.calls] == ["reported", "reported"]
    assert execution.node_runs.filter(node_id="task_vault_001").count() == 1  # never retried


def test_it_gives_back_what_a_worker_killed_mid_call_had_claimed_from_the_runs_limit(priced, settings):
    serve(["Scholar", "Validator", "Knowledge_Vault"], max_output_tokens=100)
    # The scholar may write 10,000 tokens ($0.02): its claim is two thirds of the run's limit.
    Agent.objects.filter(agent_id="Scholar").update(max_output_tokens=10_000)
    priced.reply(usage={"prompt_tokens": 100, "completion_tokens": 10})
    edit_workflow("thesis_reading", lambda document: document["limits"].update(max_cost="0.03"))
    execution = execution_start(workflow=Workflow.objects.get(workflow_id="thesis_reading"))
    with mock.patch.object(OpenAICompatibleBackend, "_post", side_effect=WorkerKilled), \
            pytest.raises(WorkerKilled):
        drain(execution)  # the worker dies while the scholar's call is in flight, its claim made
    scholar = execution.node_runs.get(node_id="task_scholar_001")
    assert scholar.status == "running" and priced.requests == []
    NodeRun.objects.filter(pk=scholar.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=settings.NODE_STALE_SECONDS + 1))

    assert node_runs_sweep()["requeued"] == [scholar.pk]
    execution = drain(execution)

    assert execution.status == "success", execution.ended_reason
    assert execution.node_runs.filter(status="success").count() == 3
    assert execution.cost_reserved == 0 and not execution.node_runs.exclude(cost_reserved=0).exists()
    # The dead call may have been billed, and nobody knows what it cost: the run's cost says so.
    assert execution.cost_complete is False


def test_it_lets_only_one_of_two_calls_in_flight_together_claim_the_last_of_the_limit(priced):
    from django.db import connection

    from executions.services import execution_graph
    from executions.services.budget import node_run_budget

    edit_workflow("parallel_analysis", lambda document: document.setdefault("limits", {}).update(max_cost="0.001"))
    execution = execution_start(workflow=Workflow.objects.get(workflow_id="parallel_analysis"), input={"repository": "x"})
    runs = list(execution.node_runs.filter(node_id__in=["task_a", "task_b"]))
    for run in runs:
        NodeRun.objects.filter(pk=run.pk).update(status="running", worker=f"w/{run.node_id}")
    limits = execution_graph(execution).settings
    budgets = [node_run_budget(execution, limits, node_run_id=run.pk, claim=f"w/{run.node_id}") for run in runs]
    start = threading.Barrier(2)

    def claim(budget):
        try:
            start.wait()
            return budget.reserve(units(Decimal("0.0006")))
        finally:
            connection.close()

    with ThreadPoolExecutor(2) as pool:
        claimed = list(pool.map(claim, budgets))

    assert sorted(claimed) == [False, True]
    assert budgets[0].spent() == (0, units(Decimal("0.0006")))
    assert sorted(NodeRun.objects.filter(pk__in=[run.pk for run in runs]).values_list("cost_reserved", flat=True)) == [
        0, units(Decimal("0.0006"))]
