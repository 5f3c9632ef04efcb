"""Re-runs and trials on a real Celery worker against the real Redis, in every topology."""
import json
import time
from collections import Counter

import pytest
from django.core.management import call_command

from agents.documents import agent_document
from agents.models import Agent
from agents.services import agent_import_document
from benchmarks.large_runs import large_run_create, loop_workflow_create
from core.documents import import_documents
from executions.comparison import execution_comparison
from executions.models import Execution
from executions.services import (
    execution_cancel,
    execution_rerun,
    execution_start,
    node_try,
)
from tests.executions.conftest import wait_for
from workflows.models import Workflow

pytestmark = pytest.mark.integration


def finished(demo, workflow_id, **input):
    execution = wait_for(execution_start(workflow=Workflow.objects.get(workflow_id=workflow_id), input=input),
                         workers=demo)
    assert execution.status == "success", execution.ended_reason
    return execution


def runs(execution):
    return [(r.node_id, r.kind, r.status) for r in execution.node_runs.order_by("sequence", "id")]


def test_the_thesis_chain_rerun_from_its_last_node_edited_and_pinned(demo, tmp_path):
    demo.start(1)
    source = finished(demo, "thesis_reading")
    vault_before = source.node_runs.get(node_id="task_vault_001")
    old = vault_before.agent_version.version

    plain = wait_for(execution_rerun(source=source, from_node="task_vault_001"), workers=demo)
    assert plain.status == "success", plain.ended_reason
    assert runs(plain) == [("task_scholar_001", "reused", "success"), ("task_validator_001", "reused", "success"),
                           ("task_vault_001", "first", "success")]
    assert plain.node_runs.get(node_id="task_vault_001").worker  # run by the worker, the others were not
    assert not plain.node_runs.exclude(node_id="task_vault_001").exclude(worker="").exists()

    edited_results = [{"atom_id": "a1", "verdict": "rejected by a person"}]
    edited = wait_for(execution_rerun(source=source, from_node="task_vault_001",
                                      outputs={"task_validator_001": {"validation_results": edited_results}}),
                      workers=demo)
    assert edited.status == "success", edited.ended_reason
    received = {i["source"].get("task_id"): i for i in edited.node_runs.get(node_id="task_vault_001").resolved_inputs}
    assert received["task_validator_001"]["content"] == edited_results
    # The comparison shows what the edit changed in what the node received.
    compared = {pair["node_id"]: pair for pair in execution_comparison(source, edited)["pairs"]}
    assert compared["task_scholar_001"]["verdict"] == "same"
    assert compared["task_validator_001"]["verdict"] == "differs" and compared["task_validator_001"]["output_diff"]
    vault_inputs = {entry["name"]: entry for entry in compared["task_vault_001"]["inputs"]}
    validator_input = vault_inputs["task_validator_001_output"]
    assert validator_input["differs"] and "resolved_tokens" in validator_input["changed"]

    document = agent_document(Agent.objects.get(agent_id="Knowledge_Vault"))
    agent_import_document({**document, "prompt_config": {**document["prompt_config"],
                                                         "task_context": "Cite the atom ids."}}, actor="test")
    (tmp_path / "results.json").write_text(json.dumps({"validation_results": edited_results}))
    out = tmp_path / "out.json"
    with open(out, "w") as stdout:
        call_command("rerun_execution", source.execution_id, "--from-node", "task_vault_001",
                     "--output", f"task_validator_001={tmp_path / 'results.json'}",
                     "--agent-version", f"task_vault_001={old}", "--wait", "--timeout", "60", stdout=stdout)
    record = json.loads(out.read_text())
    assert record["status"] == "success" and record["rerun_of"] == source.execution_id
    vault = record["node_runs"][-1]
    assert vault["agent_version"] == old != Agent.objects.get(agent_id="Knowledge_Vault").version
    assert "Cite the atom ids." not in vault["prompt"]
    assert record["rerun"]["pinned"] == {"task_vault_001": old}
    pinned = Execution.objects.get(execution_id=record["execution_id"])
    versions = {pair["node_id"]: pair for pair in execution_comparison(plain, pinned)["pairs"]}
    assert "agent_version" not in versions["task_vault_001"]["changed"]  # both ran the version the source ran
    current = wait_for(execution_rerun(source=source, from_node="task_vault_001",
                                       agent_versions={"task_vault_001": "current"}), workers=demo)
    versions = {pair["node_id"]: pair for pair in execution_comparison(pinned, current)["pairs"]}
    assert "agent_version" in versions["task_vault_001"]["changed"]
    assert (versions["task_vault_001"]["a"]["agent_version"], versions["task_vault_001"]["b"]["agent_version"]) == (
        old, Agent.objects.get(agent_id="Knowledge_Vault").version)
    assert list(source.reruns.order_by("created_at").values_list("execution_id", flat=True))[:3] == [
        plain.execution_id, edited.execution_id, record["execution_id"]]


def test_reruns_of_a_dag_a_par_a_state_machine_and_a_thought_search(demo):
    demo.start(2)
    dag = finished(demo, "parallel_analysis", repository="switchyard")
    again = wait_for(execution_rerun(source=dag, from_node="task_c"), workers=demo)
    assert again.status == "success", again.ended_reason
    assert sorted(runs(again)) == [("task_a", "reused", "success"), ("task_b", "reused", "success"),
                                   ("task_c", "first", "success"), ("task_d", "first", "success")]

    import_documents([{"workflow_id": "fan_out", "name": "fan out", "topology": "par",
                       "nodes": [{"id": "code", "agent_ref": "Code_Analyzer", "input_mapping": {"repository": "x"}},
                                 {"id": "docs", "agent_ref": "Docs_Analyzer", "input_mapping": {"repository": "x"}}],
                       "transitions": []}])
    par = finished(demo, "fan_out")
    again = wait_for(execution_rerun(source=par, from_node="docs"), workers=demo)
    assert again.status == "success" and runs(again) == [("code", "reused", "success"), ("docs", "first", "success")]

    machine = wait_for(execution_start(workflow=Workflow.objects.get(workflow_id="release_review"),
                                       input={"topic": "2.0"}), workers=demo)
    path = [r.node_id for r in machine.node_runs.filter(kind="first").order_by("sequence")]
    again = wait_for(execution_rerun(source=machine, from_node="review", step=path.index("review", 2) + 1),
                     workers=demo)
    assert again.status == machine.status
    assert [r[:2] for r in runs(again)][:3] == [("draft", "reused"), ("review", "reused"), ("draft", "reused")]
    assert again.state["draft"] == machine.state["draft"]

    search = finished(demo, "game24", numbers=[4, 9, 10, 13])
    again = wait_for(execution_rerun(source=search, from_node="solve"), workers=demo)
    assert again.status == "success", again.ended_reason
    solved = again.node_runs.get(node_id="solve")
    assert solved.kind == "first" and solved.thought_search.final_solution
    assert solved.output == search.node_runs.get(node_id="solve").output


def evaluated(execution, timeout=30):
    deadline = time.monotonic() + timeout
    while not execution.evaluations.exists():
        assert time.monotonic() < deadline, f"{execution.execution_id} was not evaluated"
        time.sleep(0.1)


def test_a_node_tried_alone_on_a_worker_is_not_evaluated_nor_listed(demo):
    demo.start(1)  # one worker: the tasks it is sent run in the order they were sent
    source = finished(demo, "thesis_reading")
    trial = wait_for(node_try(workflow=source.workflow, node_id="task_validator_001", source=source), workers=demo)
    assert trial.status == "success" and trial.trial
    assert runs(trial)[-1] == ("task_validator_001", "first", "success")
    assert trial.node_runs.get(node_id="task_validator_001").worker
    later = finished(demo, "thesis_reading")
    evaluated(later)  # sent after anything the trial could have sent, so that is done too
    assert not trial.evaluations.exists()
    assert list(Execution.objects.filter(trial=False).order_by("created_at")) == [source, later]


def test_a_large_rerun_is_copied_by_a_worker_then_runs(demo, settings):
    settings.RERUN_COPY_INLINE_MAX = 0  # every copy on the worker, a node run at a time
    demo.start(1, RERUN_COPY_CHUNK="1")
    source = finished(demo, "thesis_reading")

    rerun = execution_rerun(source=source, from_node="task_vault_001")
    assert rerun.status == "pending" and not rerun.node_runs.exists()

    rerun = wait_for(rerun, workers=demo)
    assert rerun.status == "success", rerun.ended_reason
    assert runs(rerun) == [("task_scholar_001", "reused", "success"), ("task_validator_001", "reused", "success"),
                           ("task_vault_001", "first", "success")]
    for copy in rerun.node_runs.filter(kind="reused").select_related("reused_from"):
        original = copy.reused_from
        assert original.execution_id == source.pk
        assert (copy.node_id, copy.output, copy.prompt, copy.resolved_inputs, copy.context_record) == (
            original.node_id, original.output, original.prompt, original.resolved_inputs, original.context_record)


def test_a_copy_whose_worker_is_killed_is_finished_by_another_once_the_sweep_sends_it_again(workers, settings):
    settings.RERUN_COPY_INLINE_MAX = 0
    source = large_run_create(workflow=loop_workflow_create(workflow_id="killed_copy"), node_runs=3_000)
    first, = workers.start(1, RERUN_COPY_CHUNK="10")
    last = source.node_runs.order_by("-sequence", "-id").first()
    rerun = execution_rerun(source=source, from_node=last.node_id)
    of = rerun.copy_progress["of"]

    deadline = time.monotonic() + 60
    while not 0 < (Execution.objects.get(pk=rerun.pk).copy_progress or {"copied": 0})["copied"] < of // 2:
        assert time.monotonic() < deadline, workers.logs()
        time.sleep(0.01)
    workers.kill(first)  # mid-copy
    first.wait(timeout=10)
    rerun.refresh_from_db()
    assert rerun.status == "pending" and rerun.copy_progress["copied"] < of

    workers.start(1, beat=True, RERUN_COPY_CHUNK="500")  # its sweep sends the copy again once it is stale
    rerun = wait_for(rerun, statuses=("running", "success", "failed", "cancelled"), timeout=90, workers=workers)
    assert rerun.status == "running", rerun.ended_reason
    copies = list(rerun.node_runs.filter(reused_from__isnull=False).order_by("sequence"))
    originals = [run for run in list(source.node_runs.order_by("sequence", "id"))[:-1] if run.status == "success"]
    assert [copy.reused_from_id for copy in copies] == [run.pk for run in originals]  # each once, in order
    assert max(Counter(copy.reused_from_id for copy in copies).values()) == 1
    assert [copy.sequence for copy in copies] == list(range(1, of + 1))
    execution_cancel(execution=rerun)  # the loop would go round until its max_steps
