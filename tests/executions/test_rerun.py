"""Re-running a past run from a node, and trying one node alone, with the node runs run in
this process (the real-worker proofs are in test_rerun_worker.py)."""
import pytest

from agents.documents import agent_document
from agents.models import Agent
from agents.services import agent_import_document
from core.errors import DocumentError, IllegalTransition
from executions.models import Evaluation, Execution
from executions.services import execution_cancel, execution_rerun, execution_start, node_try
from tests.executions.conftest import drain
from tests.workflow_edits import edit_workflow
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)

CHAIN = ["task_scholar_001", "task_validator_001", "task_vault_001"]


@pytest.fixture(autouse=True)
def demo(in_process):
    return in_process


def run(workflow_id, **input):
    return drain(execution_start(workflow=Workflow.objects.get(workflow_id=workflow_id), input=input))


def runs(execution):
    return list(execution.node_runs.order_by("sequence", "id"))


def named_input(node_run, name):
    return next(i["content"] for i in node_run.resolved_inputs if i["name"] == name)


def new_version(agent_id, **prompt):
    agent = Agent.objects.get(agent_id=agent_id)
    document = agent_document(agent)
    agent_import_document({**document, "prompt_config": {**document["prompt_config"], **prompt}}, actor="test")
    return Agent.objects.get(agent_id=agent_id).version


def test_a_rerun_of_the_chain_from_its_last_node_runs_only_that_node_and_reuses_the_rest(demo):
    source = run("thesis_reading")
    assert source.status == "success"
    before = {r.pk: (r.status, r.output) for r in runs(source)}
    sent = demo.run_node.call_count

    rerun = drain(execution_rerun(source=source, from_node="task_vault_001"))

    assert rerun.status == "success" and rerun.rerun_of == source
    assert rerun.rerun == {"from_node": "task_vault_001", "step": None, "reused": CHAIN[:2], "copies": 2,
                           "edited": [], "pinned": {}}
    scholar, validator, vault = runs(rerun)
    assert [r.node_id for r in runs(rerun)] == CHAIN
    originals = runs(source)
    for copy, original in ((scholar, originals[0]), (validator, originals[1])):
        assert copy.kind == "reused" and copy.reused_from == original and copy.output == original.output
        assert copy.tokens_in == 0 and copy.tokens_out == 0 and copy.dispatches == 0
    assert vault.kind == "first" and vault.tokens_in > 0 and vault.reused_from is None
    assert demo.run_node.call_count == sent + 1  # only the vault node went to a worker
    assert {r.pk: (r.status, r.output) for r in runs(source)} == before  # the past run is never changed
    assert list(source.reruns.all()) == [rerun]


def test_an_edited_upstream_output_is_what_the_rerun_node_receives():
    source = run("thesis_reading")
    validator = runs(source)[1]
    edited = {"validation_results": [{"atom_id": "edited-1", "valid": False, "note": "edited by a person"}]}

    rerun = drain(execution_rerun(source=source, from_node="task_vault_001", outputs={"task_validator_001": edited}))

    copy, vault = runs(rerun)[1:]
    assert copy.kind == "edited" and copy.reused_from == validator and copy.output == edited
    received = {i["source"].get("task_id"): i for i in vault.resolved_inputs}
    assert received["task_validator_001"]["content"] == edited["validation_results"], received
    assert "edited by a person" not in str(runs(source)[2].resolved_inputs)
    assert rerun.rerun["edited"] == ["task_validator_001"]


def test_an_edited_output_that_breaks_its_contract_is_refused_naming_it():
    source = run("thesis_reading")
    with pytest.raises(DocumentError) as refused:
        execution_rerun(source=source, from_node="task_vault_001", outputs={"task_validator_001": {"oops": 1}})
    assert refused.value.where == "outputs.task_validator_001.validation_results"
    assert refused.value.problem.startswith("is required") and "Validator → Knowledge_Vault" in refused.value.problem
    assert Execution.objects.count() == 1  # nothing was started


def test_a_rerun_runs_the_version_each_node_ran_unless_another_is_pinned():
    source = run("thesis_reading")
    old = runs(source)[2].agent_version.version
    new = new_version("Knowledge_Vault", task_context="Mention the pinned version marker ZX-NEW.")

    same = drain(execution_rerun(source=source, from_node="task_vault_001"))
    current = drain(execution_rerun(source=source, from_node="task_vault_001",
                                    agent_versions={"task_vault_001": "current"}))
    pinned_old = drain(execution_rerun(source=source, from_node="task_vault_001",
                                       agent_versions={"task_vault_001": old}))

    assert runs(same)[2].agent_version.version == old and "ZX-NEW" not in runs(same)[2].prompt
    assert runs(current)[2].agent_version.version == new and "ZX-NEW" in runs(current)[2].prompt
    assert current.rerun["pinned"] == {"task_vault_001": new}
    assert runs(pinned_old)[2].agent_version.version == old and "ZX-NEW" not in runs(pinned_old)[2].prompt
    with pytest.raises(DocumentError, match="has no version '9.9.9'") as refused:
        execution_rerun(source=source, from_node="task_vault_001", agent_versions={"task_vault_001": "9.9.9"})
    assert refused.value.where == "agent_versions.task_vault_001"
    with pytest.raises(DocumentError, match="only a node that runs can be pinned"):
        execution_rerun(source=source, from_node="task_vault_001", agent_versions={"task_scholar_001": "current"})


def test_a_dag_rerun_from_a_branch_reuses_the_other_branches_and_runs_the_join():
    source = run("parallel_analysis", repository="switchyard")
    assert source.status == "success", source.ended_reason

    rerun = drain(execution_rerun(source=source, from_node="task_b"))

    assert rerun.status == "success", rerun.ended_reason
    by_node = {r.node_id: r for r in runs(rerun)}
    assert {n for n, r in by_node.items() if r.kind == "reused"} == {"task_a", "task_c"}
    assert by_node["task_b"].kind == by_node["task_d"].kind == "first"
    assert len(runs(rerun)) == 4


def test_a_par_rerun_runs_only_the_chosen_node():
    from core.documents import import_documents

    import_documents([{"workflow_id": "fan", "name": "fan", "topology": "par",
                       "nodes": [{"id": "one", "agent_ref": "Code_Analyzer", "input_mapping": {"repository": "x"}},
                                 {"id": "two", "agent_ref": "Docs_Analyzer", "input_mapping": {"repository": "x"}}],
                       "transitions": []}])
    source = run("fan")
    rerun = drain(execution_rerun(source=source, from_node="two"))
    assert rerun.status == "success"
    assert [(r.node_id, r.kind) for r in runs(rerun)] == [("one", "reused"), ("two", "first")]


def test_a_state_machine_rerun_starts_at_a_step_of_the_recorded_path_with_the_state_of_that_step():
    source = run("release_review", topic="the 2.0 release")
    assert source.status == "waiting", source.ended_reason  # at the gate before publishing: a re-run may start
    path = [r.node_id for r in runs(source) if r.kind == "first"]
    assert path[:3] == ["draft", "review", "draft"]

    rerun = drain(execution_rerun(source=source, from_node="review", step=2))

    first_runs = runs(rerun)
    assert [(r.node_id, r.kind) for r in first_runs[:1]] == [("draft", "reused")]
    assert first_runs[1].node_id == "review" and first_runs[1].kind == "first"
    # The review at step 2 read the draft of step 1, as the past run's did.
    assert named_input(first_runs[1], "draft") == named_input(runs(source)[1], "draft")
    assert named_input(first_runs[1], "draft") != named_input(runs(source)[3], "draft")  # not the later draft
    assert rerun.rerun["step"] == 2
    with pytest.raises(DocumentError, match="step 1 of the past run's path .* is 'draft', not 'review'"):
        execution_rerun(source=source, from_node="review", step=1)
    if "compliance" not in path:
        with pytest.raises(DocumentError, match="not on the past run's path"):
            execution_rerun(source=source, from_node="compliance")


def test_bad_reruns_are_refused_naming_what_is_wrong():
    source = run("thesis_reading")
    with pytest.raises(DocumentError, match="node 'nope' is not in the workflow") as refused:
        execution_rerun(source=source, from_node="nope")
    assert refused.value.where == "from_node"
    with pytest.raises(DocumentError, match="runs again in a re-run from 'task_validator_001'"):
        execution_rerun(source=source, from_node="task_validator_001", outputs={"task_vault_001": {}})

    running = execution_start(workflow=source.workflow, input={})
    with pytest.raises(IllegalTransition, match="is running"):
        execution_rerun(source=running, from_node="task_vault_001")
    execution_cancel(execution=running)

    edit_workflow(source.workflow.workflow_id, lambda document: next(
        node for node in document["nodes"] if node["id"] == "task_vault_001").update(input_mapping={"data_references": []}))
    source.refresh_from_db()
    with pytest.raises(DocumentError) as changed:
        execution_rerun(source=source, from_node="task_vault_001")
    assert changed.value.where == "workflow"
    assert "node 'task_vault_001' reads its inputs differently now: input_mapping 'data_references', 'transfer_config' changed" \
        in changed.value.problem


def test_a_rerun_from_after_a_node_that_failed_is_refused_naming_it():
    from core.documents import import_documents

    import_documents([{"workflow_id": "broken", "name": "broken", "topology": "seq",
                       "nodes": [{"id": "one", "agent_ref": "Code_Analyzer",
                                  "input_mapping": {"repository": "x"}},
                                 {"id": "two", "agent_ref": "Docs_Analyzer", "input_mapping": {"repository": "x"}}],
                       "transitions": [], "error_handling": {"escalate_to": None}}])
    source = execution_start(workflow=Workflow.objects.get(workflow_id="broken"), input={})
    execution_cancel(execution=source)
    with pytest.raises(DocumentError, match="node 'one', whose output a re-run from 'two' reuses, (never ran|ended)"):
        execution_rerun(source=source, from_node="two")


def test_trying_a_node_runs_it_alone_with_no_evaluation_and_is_not_listed(demo):
    from executions.selectors import executions_list

    source = run("thesis_reading")
    evaluated = demo.evaluate.call_count

    trial = drain(node_try(workflow=source.workflow, node_id="task_vault_001", source=source,
                           outputs={"task_validator_001": {"validation_results": [{"note": "typed by hand"}]}}))

    assert trial.trial and trial.status == "success"
    kinds = {r.node_id: r.kind for r in runs(trial)}
    assert kinds == {"task_scholar_001": "reused", "task_validator_001": "edited", "task_vault_001": "first"}
    vault = runs(trial)[-1]
    assert "typed by hand" in str(vault.resolved_inputs) and vault.context_record and vault.prompt
    assert demo.evaluate.call_count == evaluated and not Evaluation.objects.filter(execution=trial).exists()
    assert trial.execution_id not in [e["execution_id"] for e in executions_list().queryset]
    with pytest.raises(DocumentError, match="is the node tried"):
        node_try(workflow=source.workflow, node_id="task_vault_001", outputs={"task_vault_001": 1})


def test_a_failing_trial_is_tried_once_and_fails_without_retry_fallback_or_escalation():
    workflow = Workflow.objects.get(workflow_id="release_review")  # retries twice, falls back, escalates
    trial = drain(node_try(workflow=workflow, node_id="publish", state={"draft": "Release notes for 2.0"}))
    assert trial.status == "failed" and "publish" in trial.ended_reason
    assert [(r.node_id, r.kind, r.status) for r in runs(trial)] == [("publish", "first", "failed")]
    assert named_input(runs(trial)[0], "draft") == "Release notes for 2.0"


def test_an_imported_run_cannot_take_the_id_of_the_compare_page_nor_be_rerun():
    from executions.services import execution_import_document

    with pytest.raises(DocumentError, match="names a page") as refused:
        execution_import_document({"execution_id": "compare", "workflow_ref": "thesis_reading", "status": "success"})
    assert refused.value.where == "execution_id"
    imported, _ = execution_import_document({"execution_id": "exec_elsewhere", "workflow_ref": "thesis_reading",
                                             "status": "success"})
    with pytest.raises(DocumentError, match="did not record the version of the workflow it ran"):
        execution_rerun(source=imported, from_node="task_vault_001")


def test_a_rerun_of_a_long_run_reads_its_node_runs_light_and_has_the_database_copy_them():
    """The past run's records never come into this process whole: what the re-run decides
    reads light fields, the copies are made by the database, in a bounded number of
    statements, and each copy holds its original's record."""
    import tracemalloc

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from benchmarks.large_runs import LOOP, large_run_create, loop_workflow_create

    source = large_run_create(workflow=loop_workflow_create(workflow_id="rerun_loop"), node_runs=1_500)
    last = source.node_runs.order_by("-sequence").first()

    tracemalloc.start()
    try:
        with CaptureQueriesContext(connection) as queries:
            rerun = execution_rerun(source=source, from_node=last.node_id)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    copies = list(rerun.node_runs.filter(kind="reused").order_by("sequence").select_related("reused_from"))
    assert len(copies) == 1_500 - 15 - 1  # every step before the last: a retried step is one, its failure not
    assert [copy.sequence for copy in copies] == list(range(1, len(copies) + 1))
    assert [copy.reused_from.sequence for copy in copies] == sorted(copy.reused_from.sequence for copy in copies)
    for copy in copies:
        original = copy.reused_from
        assert original.execution_id == source.pk and original.status == copy.status == "success"
        assert (copy.node_id, copy.output, copy.prompt, copy.context_record, copy.resolved_inputs, copy.decision) == (
            original.node_id, original.output, original.prompt, original.context_record, original.resolved_inputs,
            original.decision)
        assert (copy.tokens_in, copy.tokens_out, copy.cost, copy.calls, copy.worker) == (0, 0, 0, [], "")
    # Each node reused once, in the order it first was, and the count: not an entry per copy.
    assert rerun.rerun["reused"] == list(LOOP) and rerun.rerun["copies"] == len(copies)
    assert rerun.node_runs.get(kind="first").node_id == last.node_id == LOOP[(1_500 - 16) % len(LOOP)]

    heavy = [q["sql"] for q in queries.captured_queries
             if q["sql"].startswith("SELECT") and "executions_noderun" in q["sql"] and '"prompt"' in q["sql"]]
    assert heavy == [], "the past run's node runs were read whole"
    assert len(queries.captured_queries) <= 30, "statements grow with the run's length"
    assert peak < 8_000_000, f"{peak / 1e6:.1f} MB held at once"
