"""The experiments benchmark at toy sizes: real workers on a scratch database that is gone
afterwards, and JSON figures that add up (timings are not judged here)."""
import io
import json
import tempfile

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from experiments.models import Experiment

# The command creates and drops a database beside the test database: no transaction around it.
pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def scratch_place(monkeypatch, tmp_path):
    """A SQLite scratch database goes in tmp_path; the test database must be the connection's again afterwards."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return connection.settings_dict["NAME"]


def test_it_prints_json_figures_and_ratios_at_a_small_size(scratch_place):
    out = io.StringIO()
    call_command("benchmark_experiments", "--items", "4", "--page-items", "30", "--workers", "1", "--repeat", "2",
                 "--timeout", "120", stdout=out)
    report = json.loads(out.getvalue())
    assert report["error"] is None, report["error"]
    overhead = report["overhead"]
    assert (overhead["items"], overhead["workers"], overhead["concurrency"]) == (4, 1, 4)
    assert overhead["runs"]["wall_s"] > 0 and overhead["experiment"]["wall_s"] > 0
    assert overhead["runs"]["evaluated_s"] >= overhead["runs"]["wall_s"] and 0 <= overhead["runs"]["evaluations"] <= 4
    assert overhead["per_run_s"] == pytest.approx(overhead["runs"]["wall_s"] / 4)
    assert overhead["per_item_s"] == pytest.approx(overhead["experiment"]["wall_s"] / 4)
    assert overhead["ratio"] == pytest.approx(overhead["per_item_s"] / overhead["per_run_s"])
    assert overhead["target"] == 1.2
    answers = report["answers"]
    assert answers["items"] == 30 and answers["summary_refresh_s"] > 0 and answers["target_ms"] == 1000
    labels = [answer["label"] for answer in answers["timed"]]
    assert labels[:2] == ["detail API", "items API, first page"]
    assert labels[-2:] == ["comparison API, two experiments", "comparison page, two experiments"]
    assert [answer["target_ms"] for answer in answers["timed"][-2:]] == [2000, 2000]
    assert (answers["page"] is None) == ("experiment page" in labels)
    for answer in answers["timed"]:
        assert answer["error"] is None and answer["ms"] > 0 and answer["queries"] > 0 and answer["bytes"] > 0, answer
    assert all(line.startswith("an experiment's item costs") or "(target ≤ 1000 ms)" in line
               or "(target ≤ 2000 ms)" in line for line in report["missed"])
    assert connection.settings_dict["NAME"] == scratch_place
    assert not Experiment.objects.exists(), "nothing was written to the test database"


def test_it_refuses_sizes_that_measure_nothing(scratch_place):
    with pytest.raises(CommandError, match="--items and --workers must be at least 1"):
        call_command("benchmark_experiments", "--items", "0")
