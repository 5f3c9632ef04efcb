"""Experiments in this process: create (everything checked first), start and advance under the
caps, scoring each item once when its run ends, aggregates, cancel, the sweep."""
from __future__ import annotations

from unittest import mock

import pytest

from agents.models import AgentVersion
from core.errors import DocumentError, IllegalTransition
from executions.models import Execution
from experiments.experiment_services import (
    experiment_advance,
    experiment_cancel,
    experiment_create,
    experiment_start,
    status_counts,
)
from experiments.models import Experiment, ExperimentItem
from experiments.scoring import experiments_sweep, item_run_ended
from tests.executions.conftest import drain, in_process  # noqa: F401 - fixture
from tests.experiments.core_support import judge_backend, load, run_in_process, runs_per_item


@pytest.fixture
def sent(in_process):  # noqa: F811 - the fixture imported above
    """The demo data; what would go to workers is recorded (run_ended too), not sent."""
    with mock.patch("experiments.tasks.run_ended.apply_async") as run_ended:
        in_process.run_ended = run_ended
        yield in_process


def nothing_stored() -> bool:
    return not (Experiment.objects.exists() or ExperimentItem.objects.exists())


@pytest.mark.django_db(transaction=True)
def test_an_experiment_runs_every_item_once_under_its_concurrency_and_scores_it(sent, settings):
    load()
    experiment = experiment_create(workflow_id="echo", dataset="capitals", concurrency=2, scorers=[
        {"type": "contains", "path": "$.nodes.say.response"}, {"type": "regex", "pattern": "capital|expected"}], actor="ann")
    assert experiment.status == "pending" and experiment.items.count() == 4
    assert experiment.workflow_version.number == experiment.workflow.versions.order_by("-number").first().number
    experiment = experiment_start(experiment=experiment)
    counts = status_counts(experiment)
    assert (counts["running"], counts["pending"]) == (2, 2), counts
    runs = Execution.objects.filter(experiment=experiment.experiment_id)
    assert runs.count() == 2 and all(run.status == "running" for run in runs)
    experiment_advance(experiment_pk=experiment.pk)  # again: nothing more starts
    assert runs.count() == 2
    experiment = run_in_process(experiment)
    assert experiment.status == "success" and experiment.completed_at
    assert runs_per_item(experiment) == {0: 1, 1: 1, 2: 1, 3: 1}
    items = {item.dataset_item.item_id: item for item in experiment.items.select_related("dataset_item")}
    assert items["q1"].scores["contains"]["score"] == 1.0
    assert items["q3"].scores["contains"]["score"] == 0.0
    assert items["q4"].scores["contains"] == {"not_scored": "NO_EXPECTED", "reason": mock.ANY}
    assert all(item.scores["regex"]["score"] == 1.0 for item in items.values())
    assert items["q1"].output["nodes"]["say"]["response"] and items["q1"].latency_seconds is not None
    assert items["q1"].nodes[0]["node_id"] == "say"
    aggregates = experiment.summary["aggregates"]
    assert aggregates["items"] == 4 and aggregates["statuses"] == {"success": 4}
    contains = aggregates["scorers"]["contains"]
    assert contains["summary"]["count"] == 3 and contains["not_scored"] == {"NO_EXPECTED": 1}
    assert contains["summary"]["pass_rate"] == pytest.approx(2 / 3)
    # The runs are test traffic: none was evaluated or raised a derive request.
    assert not sent.evaluate.called and not sent.raise_derive_requests.called


@pytest.mark.django_db(transaction=True)
def test_a_second_delivery_scores_nothing_twice(sent):
    load()
    experiment = experiment_start(experiment=experiment_create(workflow_id="echo", dataset="capitals", concurrency=1,
                                                               scorers=[{"type": "contains"}]))
    item = experiment.items.get(status="running")
    drain(item.execution)
    assert item_run_ended(execution_pk=item.execution_id) == "scored"
    item.refresh_from_db()
    first = (item.status, item.scores, item.completed_at)
    assert item_run_ended(execution_pk=item.execution_id) == "scored already"
    item.refresh_from_db()
    assert (item.status, item.scores, item.completed_at) == first
    assert experiment.items.filter(status="running").count() == 1, "the next item started, once"


@pytest.mark.django_db(transaction=True)
def test_the_global_cap_holds_across_experiments(sent, settings):
    settings.EXPERIMENT_MAX_RUNNING_ITEMS = 3
    load()
    first = experiment_start(experiment=experiment_create(workflow_id="echo", dataset="capitals", concurrency=2))
    second = experiment_start(experiment=experiment_create(workflow_id="echo", dataset="capitals", concurrency=2))
    assert status_counts(first)["running"] == 2 and status_counts(second)["running"] == 1
    run_in_process(first)
    assert status_counts(second)["running"] == 1, "room is taken as items end, by whichever advances"
    second = run_in_process(second)
    assert second.status == "success" and runs_per_item(second) == {0: 1, 1: 1, 2: 1, 3: 1}


@pytest.mark.django_db(transaction=True)
def test_cancel_cancels_pending_items_and_running_runs(sent):
    load()
    experiment = experiment_start(experiment=experiment_create(workflow_id="echo", dataset="capitals", concurrency=1))
    running = experiment.items.get(status="running")
    experiment = experiment_cancel(experiment=experiment, actor="bob")
    assert (experiment.status, experiment.cancelled_by) == ("cancelled", "bob")
    running.execution.refresh_from_db()
    assert running.execution.status == "cancelled"
    item_run_ended(execution_pk=running.execution_id)  # the task its run's end sends
    counts = status_counts(experiment)
    assert counts["cancelled"] == 4 and counts["running"] == counts["pending"] == 0
    assert Execution.objects.filter(experiment=experiment.experiment_id).count() == 1, "nothing started after"
    with pytest.raises(IllegalTransition):
        experiment_cancel(experiment=experiment, actor="bob")


@pytest.mark.django_db(transaction=True)
def test_the_sweep_scores_a_run_whose_message_was_lost_and_starts_more(sent):
    load()
    experiment = experiment_start(experiment=experiment_create(workflow_id="echo", dataset="capitals", concurrency=2,
                                                               scorers=[{"type": "contains"}]))
    for item in experiment.items.filter(status="running"):
        drain(item.execution)  # each run ended; its run_ended message is "lost" (recorded, not run)
    assert sent.run_ended.called
    assert experiments_sweep() == {"scored": 2, "advanced": 1}
    assert status_counts(experiment)["running"] == 2 and status_counts(experiment)["success"] == 2
    assert experiments_sweep()["scored"] == 0
    experiment = run_in_process(experiment)
    assert experiment.status == "success" and runs_per_item(experiment) == {0: 1, 1: 1, 2: 1, 3: 1}


@pytest.mark.django_db(transaction=True)
def test_pins_and_overrides_by_agent_reach_the_runs(sent, settings):
    load()
    judge_backend(settings)
    version = AgentVersion.objects.get(agent__agent_id="Echo")
    experiment = experiment_create(
        workflow_id="echo", dataset="capitals", concurrency=1, agent_versions={"Echo": version.version},
        agent_overrides={"Echo": {"runtime": {"backend": "builtin", "model": "other"}}},
        scorers=[{"type": "llm_judge", "rubric": "names the city", "agent": "Judge"}])
    assert experiment.agent_versions == {"say": version.pk}
    assert experiment.agent_overrides == {"say": {"runtime": {"backend": "builtin", "model": "other"}}}
    experiment = experiment_start(experiment=experiment)
    run = Execution.objects.get(experiment=experiment.experiment_id)
    assert run.agent_versions == {"say": version.pk} and run.agent_overrides["say"]["runtime"]["model"] == "other"
    drain(run)
    assert run.node_runs.get().agent_version_id == version.pk
    item_run_ended(execution_pk=run.pk)
    item = experiment.items.get(execution=run)
    assert item.scores["llm_judge"] == {"score": 0.75, "reason": "judge: names the city"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("fields, where", [
    ({"workflow_id": "nope"}, "workflow_id"),
    ({"dataset": "nope"}, "dataset"),
    ({"dataset_version_number": 9}, "dataset_version"),
    ({"workflow_version": 9}, "workflow_version"),
    ({"agent_versions": {"say": "9.9.9"}}, "agent_versions.say"),
    ({"agent_versions": {"Nobody": "1.0.0"}}, "agent_versions.Nobody"),
    ({"agent_overrides": {"say": {"runtime": {"backend": "nowhere"}}}}, "agent_overrides.say.runtime.backend"),
    ({"agent_overrides": {"Echo": {"secret": 1}}}, "agent_overrides.Echo.secret"),
    ({"agent_overrides": {"say": {"runtime": {"colour": "red"}}}}, "agent_overrides.say.runtime.colour"),
    ({"scorers": [{"type": "numeric", "tolerance": "0.1"}]}, "scorers[0].tolerance"),
    ({"scorers": [{"type": "llm_judge", "rubric": "x"}]}, "scorers[0].agent"),
    ({"agent_overrides": {"say": {"runtime": {"max_tool_calls": "many"}}}}, "agent_overrides.say.runtime.max_tool_calls"),
    ({"agent_overrides": {"Echo": {"context_limits": {"max_input_tokens": -5}}}},
     "agent_overrides.Echo.context_limits.max_input_tokens"),
    ({"agent_overrides": {"say": {"capabilities": {"skills": "all"}}}}, "agent_overrides.say.capabilities.skills"),
    ({"max_cost": 10**9}, "max_cost"),
    ({"concurrency": 0}, "concurrency"),
    ({"max_cost": "lots"}, "max_cost"),
    ({"max_cost": -1}, "max_cost"),
])
def test_a_refused_experiment_names_its_field_and_stores_nothing(db, fields, where):
    load()
    asked = {"workflow_id": "echo", "dataset": "capitals", **fields}
    with pytest.raises(DocumentError) as refused:
        experiment_create(**asked)
    assert refused.value.where == where, refused.value
    assert nothing_stored()


@pytest.mark.django_db(transaction=True)
def test_max_cost_stops_starting_items_and_ends_the_experiment(sent):
    load()
    experiment = experiment_start(experiment=experiment_create(workflow_id="echo", dataset="capitals", concurrency=1,
                                                               max_cost="0.01"))
    item = experiment.items.get(status="running")
    drain(item.execution)
    Execution.objects.filter(pk=item.execution_id).update(cost=10**10)  # $0.01: what its model calls cost
    item_run_ended(execution_pk=item.execution_id)
    experiment.refresh_from_db()
    assert (experiment.status, experiment.cancelled_by) == ("cancelled", "max_cost")
    assert status_counts(experiment) == {"pending": 0, "running": 0, "success": 1, "failed": 0, "cancelled": 3}
    assert set(experiment.items.filter(status="cancelled").values_list("error_code", flat=True)) == {"BUDGET_EXCEEDED"}
    assert Execution.objects.filter(experiment=experiment.experiment_id).count() == 1
    assert experiment.summary["aggregates"]["statuses"] == {"success": 1, "cancelled": 3}


@pytest.mark.django_db(transaction=True)
def test_a_judge_without_prices_is_not_called_under_a_max_cost(sent, settings):
    load()
    judge_backend(settings)
    experiment = experiment_start(experiment=experiment_create(
        workflow_id="echo", dataset="capitals", concurrency=1, max_cost=1,
        scorers=[{"type": "llm_judge", "rubric": "names the city", "agent": "Judge"}]))
    item = experiment.items.get(status="running")
    drain(item.execution)
    item_run_ended(execution_pk=item.execution_id)
    item.refresh_from_db()
    assert item.scores["llm_judge"]["not_scored"] == "BUDGET_EXCEEDED"
    experiment.refresh_from_db()
    assert experiment.cost_reserved == 0


@pytest.mark.django_db(transaction=True)
def test_an_evaluation_scorer_evaluates_the_run_first_and_moves_no_aggregate(sent):
    from executions.models import Evaluation

    load()
    experiment = experiment_start(experiment=experiment_create(
        workflow_id="echo", dataset="capitals", concurrency=1,
        scorers=[{"type": "evaluation", "score": "overall"}, {"type": "evaluation", "score": "efficiency",
                                                             "name": "speed"}]))
    item = experiment.items.get(status="running")
    drain(item.execution)
    item_run_ended(execution_pk=item.execution_id)
    item.refresh_from_db()
    evaluation = Evaluation.objects.get(execution=item.execution, target_type="execution")
    assert item.scores["evaluation"]["score"] == pytest.approx(evaluation.overall_score)
    assert item.scores["speed"]["score"] == pytest.approx(evaluation.efficiency)
    assert not Evaluation.objects.filter(method="aggregate").exists()
    item_run_ended(execution_pk=item.execution_id)
    assert Evaluation.objects.filter(execution=item.execution).count() == 1


@pytest.mark.django_db(transaction=True)
def test_an_item_whose_input_the_workflow_refuses_fails_naming_why(sent):
    from core.documents import import_documents
    from tests.experiments.core_support import ECHO

    load([{"id": "good", "input": {"question": "the capital of Peru is Lima"}}, {"id": "bad", "input": {"other": 1}}],
         name="some_bad")
    strict = {**ECHO[-1], "input_schema": {"type": "object", "required": ["question"],
                                           "properties": {"question": {"type": "string"}}}}
    import_documents([strict], actor="test")
    experiment = experiment_start(experiment=experiment_create(workflow_id="echo", dataset="some_bad"))
    bad = experiment.items.get(dataset_item__item_id="bad")
    assert bad.status == "failed" and bad.error_code == "INVALID_DOCUMENT" and "question" in bad.error, bad.error
    assert bad.execution is None
    experiment = run_in_process(experiment)
    assert experiment.status == "success" and experiment.summary["aggregates"]["statuses"] == {"failed": 1,
                                                                                              "success": 1}


@pytest.mark.django_db(transaction=True)
def test_a_summary_of_fewer_ended_items_never_overwrites_one_of_more(sent):
    from experiments.summaries import summary_refresh

    load()
    experiment = run_in_process(experiment_start(experiment=experiment_create(workflow_id="echo", dataset="capitals")))
    assert experiment.summary["items_ended"] == 4
    ExperimentItem.objects.filter(experiment=experiment, position=0).update(status="running")  # as seen earlier
    summary_refresh(experiment.pk, force=True)
    experiment.refresh_from_db()
    assert experiment.summary["items_ended"] == 4 and experiment.summary["aggregates"]["items"] == 4


def test_the_beat_sends_the_experiments_sweep_to_a_registered_task(settings):
    from project.celery import app

    app.loader.import_default_modules()
    sent = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "experiments.sweep" in sent
    assert {"experiments.sweep", "experiments.run_ended"} <= set(app.tasks)
