"""The retention benchmark at toy size: a real worker, purge_runs in a process of its own, in
the test's database (`--in-place`: it is a scratch database already, and migrating another
costs seconds), with no rest between the deletion's transactions; the figures are printed as
JSON (timings are not judged here). One worker serves both orchestration measurements: its
start is most of what the test takes."""
import io
import json

import pytest
from django.core.management import call_command
from django.db import connection

from executions.models import Execution
from tests.executions.conftest import database_url

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_it_deletes_the_share_asked_while_it_measures_and_prints_the_ratios(monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", database_url(connection))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    out = io.StringIO()
    call_command("benchmark_retention", "--node-runs", "1000", "--per-run", "50", "--kept-run", "200", "--chain", "3",
                 "--wide", "4", "--repeat", "1", "--batch", "100", "--pause", "0", "--in-place", "--json", stdout=out)
    report = json.loads(out.getvalue())
    print(json.dumps({key: report[key] for key in ("ratios", "purge", "disk_before", "disk_after_vacuum")}, default=str))
    assert report["to_delete"] == {"runs": 18, "node_runs": 900}
    assert report["purge"]["node_runs"] == 900 and report["purge"]["runs_deleted"] == 18
    assert report["purge"]["batches"] >= 9  # 100 node runs a transaction at most
    assert set(report["ratios"]) == {"chain", "wide"} and all(ratio > 0 for ratio in report["ratios"].values())
    assert set(report["with"]["pages"]) == {"run_page", "api_detail", "list_page", "api_list"}
    if connection.vendor == "postgresql":
        assert report["disk_before"]["executions_noderun"] > 0
    # The runs past the line are gone, the rest of the light runs and the large kept run stay.
    left = Execution.objects.filter(workflow__workflow_id="bench_retention")
    assert left.count() == 20 - 18 + 1 and left.filter(execution_id="bench_retention_kept").exists()
