"""`manage.py run_experiment` and `cancel_experiment`, in this process (the run with --wait
on a real worker is in test_worker_core.py)."""
from __future__ import annotations

import io
import json
from unittest import mock

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from experiments.management.commands.run_experiment import progress_line
from experiments.models import Experiment
from tests.executions.conftest import in_process  # noqa: F401 - fixture
from tests.experiments.core_support import load

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def loaded(in_process):  # noqa: F811 - the fixture imported above
    with mock.patch("experiments.tasks.run_ended.apply_async"):
        load()
        yield


def test_it_starts_an_experiment_and_prints_its_id(loaded):
    out = io.StringIO()
    call_command("run_experiment", "Echo", "capitals", "--concurrency", "1", "--pin-agent", "Echo=current",
                 "--model", "say=builtin:other", "--scorer", "contains", "--scorer",
                 '{"type": "regex", "pattern": "capital"}', "--max-cost", "0.5", stdout=out)
    experiment = Experiment.objects.get(experiment_id=json.loads(out.getvalue())["experiment_id"])
    assert experiment.status == "running" and experiment.concurrency == 1
    assert set(experiment.agent_versions) == {"say"} and experiment.agent_overrides["say"]["runtime"]["model"] == "other"
    assert [s["type"] for s in experiment.scorers] == ["contains", "regex"] and experiment.max_cost == 500_000_000_000
    out = io.StringIO()
    call_command("cancel_experiment", experiment.experiment_id, stdout=out)
    assert out.getvalue().strip() == f"{experiment.experiment_id} cancelled"
    with pytest.raises(CommandError, match="cancelled"):
        call_command("cancel_experiment", experiment.experiment_id)


@pytest.mark.parametrize("arguments, message", [
    (["nope", "capitals"], "no workflow"),
    (["echo", "nope"], "dataset: no dataset 'nope'"),
    (["echo", "capitals", "--pin", "say"], "--pin 'say': give KEY=VALUE"),
    (["echo", "capitals", "--model", "say=builtin"], "AGENT=BACKEND:MODEL"),
    (["echo", "capitals", "--model", "say=elsewhere:m"], "agent_overrides.say.runtime.backend"),
    (["echo", "capitals", "--scorer", "{bad"], "not JSON"),
    (["echo", "capitals", "--scorer", "sorcery"], "scorers[0].type"),
])
def test_a_refusal_exits_2_naming_what_is_wrong(loaded, arguments, message):
    with pytest.raises(CommandError) as refused:
        call_command("run_experiment", *arguments)
    assert refused.value.returncode == 2 and message in str(refused.value)
    assert not Experiment.objects.exists()


def test_the_progress_line():
    line = progress_line({"total": 40, "ended": 12, "counts": {"failed": 1, "running": 4}, "elapsed_seconds": 35.2,
                          "estimate_seconds": 110.0})
    assert line == "[#########.....................] 12/40 done, 1 failed, 4 running, 35 s elapsed, ~110 s left"
