"""`manage.py solve24`: a Game of 24 through the normal execution path — in this process when
no worker answers, on a real Celery worker when one does."""
import json
import os
import subprocess
import sys
import uuid
from io import StringIO
from unittest import mock

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from demo.management.commands import solve24
from engine.tot import verify
from executions.models import Execution, ThoughtSearch
from tests.executions.conftest import ROOT, database_url
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def here(settings, monkeypatch):
    """No worker listens: the test's own queue, nothing sent to it, a short wait for an answer."""
    settings.CELERY_TASK_DEFAULT_QUEUE = f"switchyard-test-{uuid.uuid4().hex[:10]}"
    settings.NODE_RETRY_BACKOFF_SECONDS = 0
    monkeypatch.setattr(solve24, "WORKER_WAIT_SECONDS", 0.2)
    with mock.patch("executions.tasks.run_node.apply_async"):
        yield


def run(*args):
    """(exit code, the JSON printed or None, stderr) of the command."""
    out, err = StringIO(), StringIO()
    code = 0
    try:
        call_command("solve24", *args, stdout=out, stderr=err)
    except CommandError as error:
        code = error.returncode
        err.write(str(error))
    printed = out.getvalue()
    return code, json.loads(printed) if printed else None, err.getvalue()


def test_it_solves_the_seed_example_in_this_process_and_exits_0(here):
    code, printed, err = run("4 9 10 13")
    assert code == 0
    assert set(printed) == {"final_solution", "stats", "execution_id"}
    assert printed["final_solution"]["verification"]["is_valid"] is True
    assert verify(printed["final_solution"]["answer"], [4, 9, 10, 13]) == []
    assert set(printed["stats"]) == {"total_nodes", "total_backtracks", "llm_calls"}
    assert "loaded the demo's game24 workflow and its agents" in err
    assert "no Celery worker answered" in err and "running the search in this process" in err
    execution = Execution.objects.get(execution_id=printed["execution_id"])
    seed_example = {"strategy": "BFS", "branching_factor": 5, "breadth": 3}
    assert (execution.status, execution.input) == ("success", {"numbers": [4, 9, 10, 13], "search_config": seed_example})
    assert execution.node_runs.get().worker.startswith("solve24@")
    config = execution.thought_searches.get().tree["search_config"]
    assert {key: config[key] for key in seed_example} == seed_example


def test_it_solves_3_3_8_8_through_fractions_with_the_seed_settings(here):
    code, printed, _ = run("3 3 8 8")
    assert code == 0
    assert verify(printed["final_solution"]["answer"], [3, 3, 8, 8]) == []
    assert "8 ÷ 3" in printed["final_solution"]["answer"]


def test_it_exits_1_with_the_error_when_the_search_is_exhausted(here):
    code, printed, err = run("1 1 1 1")
    assert code == 1
    assert printed["final_solution"] is None and printed["stats"]["total_nodes"] > 1
    assert printed["error"]["code"] == "SEARCH_EXHAUSTED"
    assert "SEARCH_EXHAUSTED: no terminal node meets the success criterion" in err
    assert ThoughtSearch.objects.get().error == printed["error"]


def test_it_passes_the_strategy_k_and_breadth_to_the_search(here):
    code, printed, _ = run("4", "9", "10", "13", "--strategy", "dfs", "--k", "7", "--breadth", "2")
    assert code == 0
    execution = Execution.objects.get(execution_id=printed["execution_id"])
    assert execution.input == {"numbers": [4, 9, 10, 13],
                               "search_config": {"strategy": "DFS", "branching_factor": 7, "breadth": 2}}
    config = execution.thought_searches.get().tree["search_config"]
    assert (config["strategy"], config["branching_factor"], config["breadth"]) == ("DFS", 7, 2)


def test_it_uses_the_workflow_as_it_is_when_it_exists(here):
    call_command("load_demo", stdout=StringIO())
    Workflow.objects.filter(workflow_id="game24").update(name="Our own 24")
    code, _, err = run("4 9 10 13")
    assert code == 0 and "loaded" not in err
    assert Workflow.objects.get(workflow_id="game24").name == "Our own 24"


@pytest.mark.parametrize("args, message", [
    (["4 9 10"], "four whole numbers like \"4 9 10 13\"; got 3"),
    (["4 9 10 13 2"], "got 5"),
    (["4 nine 10 13"], "'nine' is not"),
    (["4 -9 10 1.5"], "'-9', '1.5' are not"),
    (["4 9 10 13", "--strategy", "A*"], "--strategy is BFS or DFS"),
    (["4 9 10 13", "--breadth", "0"], "--breadth is a whole number of at least 1"),
    (["4 9 10 13", "--k", "five"], "--k is a whole number of at least 1"),
    (["4 9 10 13", "--timeout", "soon"], "--timeout is a number of seconds"),
])
def test_it_exits_2_on_bad_input_saying_what_is_wrong(here, args, message):
    code, printed, err = run(*args)
    assert (code, printed) == (2, None)
    assert message in err
    assert not Execution.objects.exists()


def command_line(*args, queue):
    """The command in a process of its own, on the test database."""
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="project.settings", DATABASE_URL=database_url(connection),
               CELERY_QUEUE=queue)
    return subprocess.run([sys.executable, "manage.py", "solve24", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def test_it_sets_the_exit_status_from_the_command_line():
    from project.celery import app

    queue = f"switchyard-test-{uuid.uuid4().hex[:10]}"
    try:
        bad = command_line("4 9", queue=queue)
        assert (bad.returncode, bad.stdout) == (2, "")
        assert "four whole numbers" in bad.stderr
        exhausted = command_line("1 1 1 1", queue=queue)
        assert exhausted.returncode == 1, exhausted.stderr
        assert json.loads(exhausted.stdout)["error"]["code"] == "SEARCH_EXHAUSTED"
        solved = command_line("4 9 10 13", queue=queue)
        assert solved.returncode == 0, solved.stderr
        assert json.loads(solved.stdout)["final_solution"]["verification"]["is_valid"] is True
    finally:
        with app.connection_for_write() as broker:  # the messages no worker took
            broker.default_channel.queue_delete(queue)


def test_it_runs_on_a_real_worker_when_one_answers(workers):
    workers.start(1)
    out, err = StringIO(), StringIO()
    call_command("solve24", "4 9 10 13", "--timeout", "60", stdout=out, stderr=err)
    printed = json.loads(out.getvalue())
    assert "running on the Celery worker(s) w" in err.getvalue()
    assert verify(printed["final_solution"]["answer"], [4, 9, 10, 13]) == []
    run = Execution.objects.get(execution_id=printed["execution_id"]).node_runs.get()
    assert run.status == "success" and run.worker.startswith("w") and "@switchyard" in run.worker
    assert run.thought_search.final_solution == printed["final_solution"]
