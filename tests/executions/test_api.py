"""The executions router: runs, node runs and evaluations over the API.

No worker runs here: the test's transaction never commits, so the messages a start or a
retry sends to workers stay in `django_capture_on_commit_callbacks`, where they can be
counted. The round trip with a real worker is in test_api_round_trip.py.
"""
import json
from datetime import datetime, timedelta
from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.documents import import_documents
from demo.documents import AGENTS, PARALLEL_ANALYSIS, RELEASE_REVIEW
from executions.documents import execution_record
from executions.models import Evaluation, Execution, NodeRun
from executions.services import execution_start
from tests.replay import replayed
from workflows.models import Blueprint, Contract, Workflow

pytestmark = pytest.mark.django_db

ENDED = ("success", "failed", "cancelled")


@pytest.fixture(autouse=True)
def demo(tmp_path, settings):
    """The demo's agents and two of its workflows (enough here, and faster than load_demo)."""
    settings.WORKSPACE_ROOT = tmp_path
    replayed("demo agents and two workflows", lambda: import_documents([*AGENTS, PARALLEL_ANALYSIS, RELEASE_REVIEW]))


def start(workflow_id="parallel_analysis", **input):
    return execution_start(workflow=Workflow.objects.get(workflow_id=workflow_id), input=input or {"repository": "acme"})


def escalate(execution, node_id="compliance"):
    """Put a run where a failing node leaves it after its retries and fallback."""
    execution.node_runs.update(status="failed", error_code="PUBLISH_FAILED")
    Execution.objects.filter(pk=execution.pk).update(status="escalated", escalation={
        "node_id": node_id, "node_run": None, "error_code": "LEGAL_REVIEW", "error": "no one can", "escalate_to": "Orchestrator"})
    execution.refresh_from_db()
    return execution


def snapshot(execution):
    execution.refresh_from_db()
    return (execution.status, execution.ended_reason, execution.escalation,
            sorted(execution.node_runs.values_list("pk", "status")))


# -- starting a run -----------------------------------------------------------------------


def test_it_starts_a_run_for_an_author_and_sends_its_first_nodes_to_workers_on_commit(api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as sent:
        response = api.author.post("/api/executions", {"workflow_id": "parallel_analysis", "input": {"repository": "acme"}})
    assert response.status_code == 201, response.json()
    record = response.json()
    assert (record["workflow_ref"], record["status"], record["input"]) == ("parallel_analysis", "running", {"repository": "acme"})
    nodes = record["node_runs_summary"]["nodes"]
    assert sorted(node["node_id"] for node in nodes) == ["task_a", "task_b", "task_c"]
    assert {node["latest"]["status"] for node in nodes} == {"pending"}
    assert record["node_runs_summary"]["counts"]["pending"] == record["node_runs_summary"]["total"] == 3
    assert [r["node_id"] for r in record["results"]] == [node["node_id"] for node in nodes]
    execution = Execution.objects.get(execution_id=record["execution_id"])
    assert execution.created_by == api.author.user
    assert sorted(execution.node_runs.values_list("pk", flat=True)) == sorted(node["latest"]["node_run_id"] for node in nodes)
    assert len(sent) == 1  # the layer is published after commit, together
    with mock.patch("executions.tasks.run_node.apply_async") as run_node:
        sent[0]()
    assert sorted(call.args[0] for call in run_node.call_args_list) == sorted(
        (node["latest"]["node_run_id"],) for node in nodes)  # one message per ready node


def test_it_lets_no_viewer_or_anonymous_caller_start_a_run(api):
    body = {"workflow_id": "parallel_analysis", "input": {}}
    assert api.anonymous.post("/api/executions", body).status_code == 401
    response = api.viewer.post("/api/executions", body)
    assert response.status_code == 403 and response.json()["code"] == "FORBIDDEN"
    assert not Execution.objects.exists()


@pytest.mark.parametrize("body, where", [
    ({"workflow_id": "no_such_workflow"}, "workflow_id"),
    ({"workflow_id": "parallel_analysis", "input": ["not", "an", "object"]}, "input"),
    ({"workflow_id": "parallel_analysis", "input": "text"}, "input"),
    ({"workflow_id": "parallel_analysis", "input": {"note": "nul \x00 inside"}}, "input.note"),
    ({"workflow_id": "parallel_analysis", "input": {"deep": [{"x": float("inf")}]}}, "input.deep[0].x"),
    ({"workflow_id": "parallel_analysis", "input": {"note": ["fine", "lone \ud800 surrogate"]}}, "input.note[1]: is not valid Unicode"),
    ({"workflow_id": "parallel_analysis", "input": {"ok": {"key \udfff": 1}}}, "input.ok: a key is not valid Unicode"),
    ({"workflow_id": "parallel_analysis", "inputs": {}}, "inputs"),
    ({"workflow_id": "../etc", "input": {}}, "workflow_id"),
    ({"input": {}}, "workflow_id"),
])
def test_it_names_what_is_wrong_with_a_start_and_starts_nothing(api, body, where):
    response = api.author.post("/api/executions", body)
    assert response.status_code == 422, response.json()
    assert where in response.json()["message"]
    assert not Execution.objects.exists()


def test_it_says_which_workflow_does_not_exist(api):
    body = api.author.post("/api/executions", {"workflow_id": "no_such_workflow"}).json()
    assert body == {"code": "INVALID_DOCUMENT", "message": "workflow_id: workflow 'no_such_workflow' does not exist",
                    "details": None}


# -- listing runs ---------------------------------------------------------------------------


def test_it_lists_runs_newest_first_with_their_node_runs_counted_by_status(api):
    first, second = start(), start()
    review = start("release_review", topic="v2")
    second.node_runs.filter(node_id="task_a").update(status="success")
    second.node_runs.filter(node_id="task_b").update(status="failed")
    Execution.objects.filter(pk=second.pk).update(status="failed", ended_reason="node 'task_b' failed: X")

    page = api.viewer.get("/api/executions").json()
    assert page["count"] == 3 and page["limit"] == 50 and page["offset"] == 0
    assert [item["execution_id"] for item in page["items"]] == [review.execution_id, second.execution_id, first.execution_id]
    summary = page["items"][1]
    assert summary == {
        "execution_id": second.execution_id, "workflow_ref": "parallel_analysis", "status": "failed",
        "started_at": summary["started_at"], "completed_at": None, "ended_reason": "node 'task_b' failed: X",
        "created_at": summary["created_at"], "created_by": None, "cost": "0.000000000000", "cost_complete": True,
        "node_runs": {"pending": 1, "running": 0, "waiting": 0, "success": 1, "failed": 1, "skipped": 0, "cancelled": 0},
        "details_removed": False,
    }
    assert summary["started_at"].endswith("Z") and "results" not in summary
    assert page["items"][0]["node_runs"]["pending"] == 1 and page["items"][2]["node_runs"]["pending"] == 3

    assert api.viewer.get("/api/executions", limit=1, offset=1).json()["items"][0]["execution_id"] == second.execution_id
    ids = lambda **params: [i["execution_id"] for i in api.viewer.get("/api/executions", **params).json()["items"]]  # noqa: E731
    assert ids(workflow="release_review") == [review.execution_id]
    assert ids(status="failed") == [second.execution_id]
    assert ids(workflow="parallel_analysis", status="running") == [first.execution_id]
    assert ids(workflow="no_such_workflow") == []


def test_it_filters_runs_by_when_they_started(api):
    old, new = start(), start()
    Execution.objects.filter(pk=old.pk).update(started_at=timezone.now() - timedelta(days=3))
    yesterday = (timezone.now() - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    ids = lambda **params: [i["execution_id"] for i in api.viewer.get("/api/executions", **params).json()["items"]]  # noqa: E731
    assert ids(started_after=yesterday) == [new.execution_id]
    assert ids(started_before=yesterday) == [old.execution_id]
    assert ids(started_after=yesterday.replace("Z", "+00:00"), started_before="2999-01-01T00:00:00") == [new.execution_id]


@pytest.mark.parametrize("params, where", [
    ({"started_after": "yesterday"}, "started_after"),
    ({"started_before": "2026-13-45T99:00:00Z"}, "started_before"),
    ({"started_after": "9999-12-31T23:59:59-23:00"}, "started_after"),  # past year 9999 in UTC
    ({"status": "exploded"}, "status"),
    ({"workflow": "bad id!"}, "workflow"),
    ({"limit": 0}, "limit"),
])
def test_it_names_a_bad_filter(api, params, where):
    response = api.viewer.get("/api/executions", **params)
    assert response.status_code == 422, response.json()
    assert where in response.json()["message"]


def test_it_lists_a_page_of_runs_in_the_same_number_of_queries_however_many_runs_it_holds(api):
    def queries_for_a_page():
        with CaptureQueriesContext(connection) as captured:
            page = api.viewer.get("/api/executions").json()
        return len(captured), page

    start()
    api.viewer.get("/api/me")  # the token's first use of the minute is written down: not part of the list
    few, page = queries_for_a_page()
    assert page["count"] == 1
    for _ in range(25):
        start()
    many, page = queries_for_a_page()
    assert page["count"] == 26 and all(item["node_runs"]["pending"] == 3 for item in page["items"])
    assert many == few <= 5  # authentication, the count, the page, the node run counts


def test_it_asks_for_credentials_to_read_runs(api):
    execution = start()
    for path in ("/api/executions", f"/api/executions/{execution.execution_id}",
                 f"/api/executions/{execution.execution_id}/node-runs", "/api/evaluations"):
        assert api.anonymous.get(path).status_code == 401


# -- one run --------------------------------------------------------------------------------


def many_node_runs(execution, count):
    """`count` finished node runs with full records, as a long state machine leaves them."""
    agent_id = execution.node_runs.first().agent_id
    now = timezone.now()
    NodeRun.objects.bulk_create([
        NodeRun(execution=execution, node_id="task_a", agent_id=agent_id, status="success", sequence=100 + i,
                attempt=1, output={"i": i}, duration_ms=i, started_at=now, completed_at=now,
                context_record={"context_limit": 4050, "resolution": {"within_limit": True}},
                resolution_failures=[{"error_code": "REF_NOT_FOUND", "reference": f"r{i}"}],
                compression={"dependencies": []}, decision={"action": "next", "node_id": "task_d"})
        for i in range(count)
    ])


def test_it_summarises_a_runs_node_runs_per_node_in_a_bounded_number_of_queries(api, django_assert_max_num_queries):
    execution = start()
    many_node_runs(execution, 300)
    NodeRun.objects.filter(execution=execution, sequence=150).update(status="failed", error_code="TIMEOUT")
    with django_assert_max_num_queries(8):  # authentication (≤ 2), the run, the summary (3), its re-runs
        response = api.viewer.get(f"/api/executions/{execution.execution_id}")
    assert response.status_code == 200
    record = response.json()
    summary = record["node_runs_summary"]
    assert summary["total"] == 303 and summary["counts"] == {**dict.fromkeys(NodeRun.Status.values, 0),
                                                             "pending": 3, "success": 299, "failed": 1}
    assert summary["url"] == f"/api/executions/{execution.execution_id}/node-runs"
    task_a = next(node for node in summary["nodes"] if node["node_id"] == "task_a")
    assert (task_a["runs"], task_a["counts"], task_a["next"]) == (301, {"pending": 1, "success": 299, "failed": 1}, ["task_d"])
    assert (task_a["latest"]["sequence"], task_a["latest"]["output"]) == (399, {"i": 299})
    assert "prompt" not in task_a["latest"] and "context_management" not in task_a["latest"]
    assert [r["node_id"] for r in record["results"]] == [node["node_id"] for node in summary["nodes"]]
    assert next(r for r in record["results"] if r["node_id"] == "task_a")["output"] == {"i": 299}
    assert "node_runs" not in record


def test_it_streams_a_runs_whole_record_when_asked_for_every_node_run(api, django_assert_max_num_queries):
    execution = start()
    many_node_runs(execution, 300)
    with django_assert_max_num_queries(8):  # authentication (≤ 2), the run, its re-runs, two chunked passes
        response = api.viewer.client.get(f"/api/executions/{execution.execution_id}", {"node_runs": "all"})
        record = json.loads(b"".join(response.streaming_content))
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert len(record["node_runs"]) == len(record["results"]) == 303
    assert [r["node_id"] for r in record["results"]] == [r["node_id"] for r in record["node_runs"]]
    last = record["node_runs"][-1]
    assert last["context_management"]["context_limit"] == 4050
    assert last["resolution_failures"][0]["error_code"] == "REF_NOT_FOUND"
    assert last["decision"]["node_id"] == "task_d" and last["output"] == {"i": 299}
    assert (record["state"], record["ended_reason"], record["escalation"]) == ({}, "", None)


def test_it_shows_the_same_record_as_execution_record_with_node_run_ids(api):
    execution = escalate(start("release_review", topic="v2"), "draft")
    record = api.viewer.record(execution.execution_id)
    ids = [run.pop("node_run_id") for run in record["node_runs"]]
    assert ids == list(execution.node_runs.values_list("pk", flat=True))
    assert record == json.loads(json.dumps(execution_record(execution)))
    assert record["escalation"]["node_id"] == "draft"


def test_it_says_which_run_does_not_exist(api):
    response = api.viewer.get("/api/executions/exec_missing")
    assert response.status_code == 404
    assert response.json()["message"] == "execution 'exec_missing' does not exist"
    assert api.viewer.get("/api/executions/bad%20id").status_code == 422


def test_it_lists_a_runs_node_runs_light_a_page_at_a_time_and_shows_one_whole(api):
    execution = start()
    many_node_runs(execution, 4)
    page = api.viewer.get(f"/api/executions/{execution.execution_id}/node-runs", limit=2, offset=2).json()
    assert page["count"] == 7 and len(page["items"]) == 2
    stored = list(execution.node_runs.values_list("pk", flat=True))
    assert [run["node_run_id"] for run in page["items"]] == stored[2:4]
    assert "output" not in page["items"][0] and "context_management" not in page["items"][0]
    full = api.viewer.get(f"/api/executions/{execution.execution_id}/node-runs", limit=1, offset=6, full="true").json()
    assert full["items"][0]["output"] == {"i": 3} and full["items"][0]["sequence"] == 103
    one = api.viewer.get(f"/api/executions/{execution.execution_id}/node-runs/{stored[-1]}").json()
    assert (one["node_run_id"], one["agent_ref"], one["status"], one["output"]) == (stored[-1], "Code_Analyzer", "success", {"i": 3})
    assert one["context_management"] == {"context_limit": 4050, "resolution": {"within_limit": True}}
    assert one == full["items"][0]


def test_it_filters_a_runs_node_runs_by_node_status_kind_and_window_newest_first(api):
    execution = start()
    many_node_runs(execution, 6)
    now = timezone.now()
    for index, run in enumerate(execution.node_runs.filter(node_id="task_a", status="success").order_by("sequence")):
        NodeRun.objects.filter(pk=run.pk).update(started_at=now + timedelta(seconds=10 * index),
                                                 completed_at=now + timedelta(seconds=10 * index + 5))
    path = f"/api/executions/{execution.execution_id}/node-runs"
    newest = api.viewer.get(path, node="task_a", status="success", order="-sequence", limit=2).json()
    assert newest["count"] == 6 and [run["sequence"] for run in newest["items"]] == [105, 104]
    assert api.viewer.get(path, node="task_b").json()["count"] == 1
    assert api.viewer.get(path, kind="manual").json()["count"] == 0
    # Going at some moment of [+12 s, +31 s): the runs started at +10 (until +15), +20 and +30.
    window = api.viewer.get(path, since=(now + timedelta(seconds=12)).isoformat(),
                            until=(now + timedelta(seconds=31)).isoformat()).json()
    assert [run["sequence"] for run in window["items"]] == [101, 102, 103]
    backwards = api.viewer.get(path, since=(now + timedelta(seconds=5)).isoformat(), until=now.isoformat())
    assert backwards.status_code == 422 and "until" in backwards.json()["message"]
    for bad in ({"status": "done"}, {"order": "random"}, {"kind": "x"}):
        assert api.viewer.get(path, **bad).status_code == 422, bad


@pytest.mark.parametrize("params, where", [
    ({"node": "\x00"}, "query.node"),
    ({"node": "task_a\x00"}, "query.node"),
    ({"kind": "first\x00"}, "query.kind"),
    ({"limit": "1\x00"}, "query.limit"),
    ({"no\x00de": "task_a"}, "query"),
])
def test_it_refuses_a_node_run_filter_with_a_nul_character(api, params, where):
    execution = start()
    response = api.viewer.get(f"/api/executions/{execution.execution_id}/node-runs", **params)
    assert response.status_code == 422, response.content
    assert response.json()["message"].startswith(f"{where}: ") and "NUL" in response.json()["message"]


def test_it_draws_a_window_of_the_timeline_counted_per_node_or_run_by_run(api, monkeypatch):
    execution = start()
    many_node_runs(execution, 40)
    start_at = timezone.now()
    for index, run in enumerate(execution.node_runs.order_by("sequence")):
        NodeRun.objects.filter(pk=run.pk).update(started_at=start_at + timedelta(seconds=index, milliseconds=250),
                                                 completed_at=start_at + timedelta(seconds=index, milliseconds=750))
    Execution.objects.filter(pk=execution.pk).update(status="success")
    path = f"/api/executions/{execution.execution_id}/timeline"
    whole = api.viewer.get(path, buckets=4).json()
    assert (whole["total"], whole["buckets"], whole["since"], whole["start"]) == (43, 4, whole["start"], whole["start"])
    lanes = {lane["node_id"]: lane for lane in whole["lanes"]}
    assert {node_id: lane["runs"] for node_id, lane in lanes.items()} == {"task_a": 41, "task_b": 1, "task_c": 1}
    assert sum(sum(counts.values()) for _, counts in lanes["task_a"]["buckets"]) == 41
    assert [index for index, _ in lanes["task_a"]["buckets"]] == [0, 1, 2, 3]
    assert len(whole["node_runs"]) == 43  # few enough to draw one by one
    assert whole["node_runs"][-1]["completed_at"] == whole["end"] < whole["until"]
    # The seconds +10 to +12: the runs started at +10.25 and +11.25 (+9.25's ended at +9.75, before).
    since, until = start_at + timedelta(seconds=10), start_at + timedelta(seconds=12)
    part = api.viewer.get(path, since=since.isoformat(), until=until.isoformat(), buckets=2).json()
    assert [run["sequence"] for run in part["node_runs"]] == [100 + 7, 100 + 8]
    assert part["bucket_ms"] == 1000 and part["lanes"] == [{"node_id": "task_a", "runs": 2,
                                                            "buckets": [[0, {"success": 1}], [1, {"success": 1}]]}]
    monkeypatch.setattr("executions.run_summary.TIMELINE_RUNS", 10)  # more runs in the window than it draws
    counted = api.viewer.get(path).json()
    assert counted["node_runs"] is None and counted["total"] == 43
    assert api.viewer.get(path, buckets=0).status_code == 422


def runs_at(execution, *times):
    """The run's first node runs of task_a started and completed at `times`, (start, end) in UTC."""
    runs = execution.node_runs.filter(node_id="task_a", sequence__gte=100).order_by("sequence")
    for run, (started, completed) in zip(runs, times, strict=False):
        NodeRun.objects.filter(pk=run.pk).update(started_at=datetime.fromisoformat(started),
                                                 completed_at=datetime.fromisoformat(completed))
    return [run.sequence for run in runs]


@pytest.mark.parametrize("operation", ["node-runs", "timeline"])
def test_it_reads_a_window_without_an_offset_as_utc_whatever_the_servers_zone(api, settings, operation):
    settings.TIME_ZONE = "Pacific/Auckland"
    execution = start()
    many_node_runs(execution, 2)
    Execution.objects.filter(pk=execution.pk).update(status="success")
    early, late = runs_at(execution, ("2026-11-27T08:00:00+00:00", "2026-11-27T08:30:00+00:00"),
                          ("2026-11-27T10:00:00+00:00", "2026-11-27T10:30:00+00:00"))
    path = f"/api/executions/{execution.execution_id}/{operation}"

    def sequences(**window):
        response = api.viewer.get(path, **window)
        assert response.status_code == 200, response.content
        answer = response.json()
        return [run["sequence"] for run in answer["items" if operation == "node-runs" else "node_runs"]]

    assert sequences(since="2026-11-27T09:00:00") == [late]
    assert sequences(since="2026-11-27T09:00:00", until="2026-11-27T09:59:59") == []
    assert sequences(until="2026-11-27T09:00:00") == [early]
    assert sequences(since="2026-11-27") == [early, late]  # a date alone: its midnight in UTC
    assert sequences(since="2026-11-27T09:00:00", until="2026-11-27T11:00:00Z") == [late]  # naive and aware
    assert sequences(since="2026-11-27T07:00:00-02:00", until="2026-11-27T11:00:00") == [late]
    if operation == "timeline":
        assert api.viewer.get(path, since="2026-11-27T09:00:00").json()["since"] == "2026-11-27T09:00:00Z"


@pytest.mark.parametrize("operation", ["node-runs", "timeline"])
@pytest.mark.parametrize("params, where", [
    ({"since": "0001-01-01T00:00:00+12:00"}, "since"),  # the year 0 in UTC
    ({"until": "0001-01-01T00:00:00+12:00"}, "until"),
    ({"since": "9999-12-31T23:59:59-23:00"}, "since"),  # past the year 9999 in UTC
    ({"since": "2026-11-27T09:00:00", "until": "2026-11-27T08:00:00Z"}, "until"),  # until before since
    ({"since": "2026-11-27T09:00:00Z", "until": "2026-11-27"}, "until"),
    ({"until": "tomorrow"}, "until"),
])
def test_it_names_a_window_that_cannot_be_read(api, operation, params, where):
    execution = start()
    many_node_runs(execution, 2)
    response = api.viewer.get(f"/api/executions/{execution.execution_id}/{operation}", **params)
    assert response.status_code == 422, response.content
    assert response.json()["message"].startswith(f"query.{where}: ") or response.json()["message"].startswith(
        f"{where}: "), response.json()


def test_it_reads_windows_at_the_ends_of_the_calendar(api):
    execution = start()
    many_node_runs(execution, 2)
    path = f"/api/executions/{execution.execution_id}"
    first, last = "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z"
    assert api.viewer.get(f"{path}/node-runs", since=last).json()["count"] == 0
    assert api.viewer.get(f"{path}/node-runs", since=first, until=last).json()["count"] == 2
    assert api.viewer.get(f"{path}/timeline", since=first, until=last).json()["total"] == 2
    assert api.viewer.get(f"{path}/timeline", until=last).json()["until"] == last
    # The timeline's default window ends a millisecond after its start: none fits after the last moment.
    refused = api.viewer.get(f"{path}/timeline", since=last)
    assert refused.status_code == 422 and refused.json()["message"].startswith("since: "), refused.content


def test_a_run_without_a_started_node_run_has_an_empty_timeline(api):
    execution = start()
    timeline = api.viewer.get(f"/api/executions/{execution.execution_id}/timeline").json()
    assert (timeline["start"], timeline["total"], timeline["lanes"], timeline["node_runs"]) == (None, 0, [], [])


def test_it_shows_no_node_run_through_another_run(api):
    mine, other = start(), start()
    theirs = other.node_runs.first().pk
    response = api.viewer.get(f"/api/executions/{mine.execution_id}/node-runs/{theirs}")
    assert response.status_code == 404 and str(theirs) in response.json()["message"]
    assert api.viewer.get(f"/api/executions/exec_missing/node-runs/{theirs}").status_code == 404
    assert api.viewer.get("/api/executions/exec_missing/node-runs").status_code == 404
    for bad in ("0", "-1", "abc", str(2**64)):
        assert api.viewer.get(f"/api/executions/{mine.execution_id}/node-runs/{bad}").status_code == 422


# -- steering a run -------------------------------------------------------------------------


def test_it_cancels_a_run_once(api):
    execution = start()
    response = api.author.post(f"/api/executions/{execution.execution_id}/cancel")
    assert response.status_code == 200
    record = response.json()
    assert (record["status"], record["ended_reason"]) == ("cancelled", "cancelled by author-user")
    assert set(record["node_runs_summary"]["counts"].items()) >= {("cancelled", 3)}
    assert {run["status"] for run in api.viewer.record(execution.execution_id)["node_runs"]} == {"cancelled"}
    before = snapshot(execution)
    again = api.author.post(f"/api/executions/{execution.execution_id}/cancel")
    assert again.status_code == 409 and again.json()["code"] == "ILLEGAL_TRANSITION"
    assert "cancelled" in again.json()["message"]
    assert snapshot(execution) == before


def test_it_lets_no_viewer_steer_a_run(api):
    running, escalated = start(), escalate(start("release_review", topic="v2"))
    before = snapshot(running), snapshot(escalated)
    assert api.viewer.post(f"/api/executions/{running.execution_id}/cancel").status_code == 403
    assert api.anonymous.post(f"/api/executions/{running.execution_id}/cancel").status_code == 401
    for action, body in (("resume", {"output": {}}), ("retry", {}), ("abort", {})):
        response = api.viewer.post(f"/api/executions/{escalated.execution_id}/{action}", body)
        assert response.status_code == 403 and response.json()["code"] == "FORBIDDEN"
    assert (snapshot(running), snapshot(escalated)) == before


@pytest.mark.parametrize("action, body", [("resume", {"output": {"ok": True}}), ("retry", {}), ("abort", {})])
def test_it_resumes_retries_or_aborts_only_an_escalated_run(api, action, body):
    execution = start()
    before = snapshot(execution)
    response = api.author.post(f"/api/executions/{execution.execution_id}/{action}", body)
    assert response.status_code == 409
    assert response.json()["code"] == "CONFLICT" and "running, not escalated" in response.json()["message"]
    assert snapshot(execution) == before
    assert api.author.post(f"/api/executions/exec_missing/{action}", body).status_code == 404


def test_it_resumes_an_escalated_run_with_the_output_a_person_gives(api):
    execution = escalate(start("release_review", topic="v2"))
    response = api.author.post(f"/api/executions/{execution.execution_id}/resume",
                               {"output": {"compliant": True, "by": "a person"}})
    assert response.status_code == 200
    record = response.json()
    assert (record["status"], record["escalation"]) == ("success", None)  # compliance is the last state
    manual = api.viewer.record(execution.execution_id)["node_runs"][-1]
    assert (manual["node_id"], manual["kind"], manual["status"], manual["worker"]) == ("compliance", "manual", "success", "author-user")
    assert manual["output"] == {"compliant": True, "by": "a person"}


def test_it_resumes_with_any_json_output_but_names_a_missing_or_unstorable_one(api):
    execution = escalate(start("release_review", topic="v2"), "draft")
    before = snapshot(execution)
    for body, where in (({}, "output"), ({"output": {"text": "\x00"}}, "output.text"), ({"output": 1, "x": 2}, "x")):
        response = api.author.post(f"/api/executions/{execution.execution_id}/resume", body)
        assert response.status_code == 422 and where in response.json()["message"], response.json()
    assert snapshot(execution) == before
    with_text = api.author.post(f"/api/executions/{execution.execution_id}/resume", {"output": "a plain string"})
    assert with_text.status_code == 200 and with_text.json()["status"] == "running"
    assert api.viewer.record(execution.execution_id)["node_runs"][-1]["node_id"] == "review"  # on to the next state


def test_it_refuses_a_resume_output_that_breaks_the_nodes_contract_naming_the_schema_error(api):
    workflow = Workflow.objects.get(workflow_id="release_review")
    Contract.objects.create(blueprint=Blueprint.objects.create(blueprint_id="release", name="Release"),
                            from_agent=workflow.nodes.get(node_id="draft").agent,
                            to_agent=workflow.nodes.get(node_id="review").agent, key="draft_text",
                            schema={"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}})
    execution = escalate(start("release_review", topic="v2"), "draft")
    before = snapshot(execution)

    response = api.author.post(f"/api/executions/{execution.execution_id}/resume", {"output": {"text": 42}})

    assert response.status_code == 422, response.json()
    assert response.json()["message"] == "output.text: 42 is not of type 'string' (the contract 'draft_text')"
    assert snapshot(execution) == before
    kept = api.author.post(f"/api/executions/{execution.execution_id}/resume", {"output": {"text": "By hand."}})
    assert kept.status_code == 200 and kept.json()["status"] == "running"


def test_it_refuses_a_resume_output_with_a_lone_surrogate_and_keeps_the_run(api):
    execution = escalate(start("release_review", topic="v2"), "draft")
    before = snapshot(execution)
    response = api.author.post(f"/api/executions/{execution.execution_id}/resume",
                               {"output": {"notes": ["fine", "lone \ud800 surrogate"]}})
    assert response.status_code == 422
    assert response.json()["message"] == "output.notes[1]: is not valid Unicode (it contains a lone surrogate)"
    assert snapshot(execution) == before


def test_it_retries_the_escalated_node_from_its_first_attempt(api, django_capture_on_commit_callbacks):
    execution = escalate(start("release_review", topic="v2"), "publish")
    with django_capture_on_commit_callbacks() as sent:
        response = api.author.post(f"/api/executions/{execution.execution_id}/retry")
    assert response.status_code == 200
    record = response.json()
    assert (record["status"], record["escalation"]) == ("running", None)
    last = api.viewer.record(execution.execution_id)["node_runs"][-1]
    assert (last["node_id"], last["kind"], last["status"]) == ("publish", "first", "pending")
    assert len(sent) == 1


def test_it_aborts_an_escalated_run(api):
    execution = escalate(start("release_review", topic="v2"))
    record = api.author.post(f"/api/executions/{execution.execution_id}/abort").json()
    assert record["status"] == "failed"
    assert record["ended_reason"] == "aborted by author-user after escalation at 'compliance'"
    assert api.author.post(f"/api/executions/{execution.execution_id}/abort").status_code == 409


# -- evaluations ----------------------------------------------------------------------------


def evaluation(**changes):
    document = {"evaluation_id": "eval_001", "target_type": "agent", "target_id": "Code_Analyzer",
                "scores": {"accuracy": 0.9, "completeness": 0.8, "efficiency": 1},
                "overall_score": 0.88, "pass": True, "feedback": ["clear"], "action": "approve"}
    document.update(changes)
    return {key: value for key, value in document.items() if value is not None}


def test_it_records_an_evaluation_by_hand_and_reads_it_back(api):
    response = api.author.post("/api/evaluations", evaluation())
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body == {**evaluation(), "scores": {"accuracy": 0.9, "completeness": 0.8, "efficiency": 1.0},
                    "method": "manual", "execution_id": None, "details": {},
                    "created_at": body["created_at"], "updated_at": body["updated_at"], "created_by": "author-user"}
    assert api.viewer.get("/api/evaluations/eval_001").json() == body
    stored = Evaluation.objects.get(evaluation_id="eval_001")
    assert (stored.passed, stored.efficiency, stored.created_by) == (True, 1.0, "author-user")
    combined = Evaluation.objects.get(method="aggregate")  # the target's aggregate takes it in
    assert (combined.target_type, combined.target_id, combined.overall_score) == (stored.target_type, stored.target_id, 0.88)
    assert combined.details["evaluations"] == ["eval_001"]


def test_it_makes_up_an_evaluation_id_when_none_is_given(api):
    execution = start()
    body = api.author.post("/api/evaluations", evaluation(evaluation_id=None, target_type="execution",
                                                          target_id=execution.execution_id)).json()
    assert body["evaluation_id"].startswith("eval_") and body["target_id"] == execution.execution_id
    assert Evaluation.objects.get().evaluation_id == body["evaluation_id"]


def test_it_lets_no_viewer_record_an_evaluation(api):
    assert api.viewer.post("/api/evaluations", evaluation()).status_code == 403
    assert api.anonymous.post("/api/evaluations", evaluation()).status_code == 401
    assert not Evaluation.objects.exists()


@pytest.mark.parametrize("changes, status, where", [
    ({"target_id": "No_Such_Agent"}, 422, "target_id"),
    ({"target_type": "workflow", "target_id": "Code_Analyzer"}, 422, "target_id"),
    ({"target_type": "blueprint"}, 422, "target_type"),
    ({"scores": {"accuracy": 1.5, "completeness": 0.8, "efficiency": 1}}, 422, "scores.accuracy"),
    ({"scores": {"accuracy": "0.5", "completeness": 0.8, "efficiency": 1}}, 422, "scores.accuracy"),
    ({"scores": {"accuracy": 0.5, "completeness": 0.8}}, 422, "scores.efficiency"),
    ({"overall_score": -0.1}, 422, "overall_score"),
    ({"pass": "yes"}, 422, "pass"),
    ({"action": "shrug"}, 422, "action"),
    ({"feedback": ["fine", "nul \x00"]}, 422, "feedback[1]"),
    ({"feedback": ["fine", "lone \ud800 surrogate"]}, 422, "feedback[1]: is not valid Unicode"),
    ({"evaluation_id": "has space"}, 422, "evaluation_id"),
    ({"extra": 1}, 422, "extra"),
])
def test_it_names_what_is_wrong_with_an_evaluation_and_stores_nothing(api, changes, status, where):
    response = api.author.post("/api/evaluations", evaluation(**changes))
    assert response.status_code == status, response.json()
    assert where in response.json()["message"], response.json()
    assert not Evaluation.objects.exists()


def test_it_does_not_rewrite_an_evaluation_recorded_before(api):
    assert api.author.post("/api/evaluations", evaluation()).status_code == 201
    low = {"accuracy": 0.1, "completeness": 0.1, "efficiency": 0.1}
    response = api.author.post("/api/evaluations", evaluation(scores=low, overall_score=0.1, **{"pass": False},
                                                              action="reject"))
    assert response.status_code == 409 and "eval_001" in response.json()["message"]
    stored = Evaluation.objects.get(method="manual")
    assert (stored.overall_score, stored.passed, stored.action) == (0.88, True, "approve")


def test_it_lists_evaluations_by_target_and_verdict(api):
    execution = start()
    api.author.post("/api/evaluations", evaluation(evaluation_id="e1"))
    halves = {"accuracy": 0.5, "completeness": 0.5, "efficiency": 0.5}
    api.author.post("/api/evaluations", evaluation(evaluation_id="e2", scores=halves, overall_score=0.5,
                                                   **{"pass": False}, action="revise"))
    api.author.post("/api/evaluations", evaluation(evaluation_id="e3", target_type="execution", target_id=execution.execution_id))
    ids = lambda **params: [e["evaluation_id"] for e in api.viewer.get("/api/evaluations", **params).json()["items"]  # noqa: E731
                            if e["method"] == "manual"]
    assert ids() == ["e3", "e2", "e1"]
    assert [e["evaluation_id"] for e in api.viewer.get("/api/evaluations", method="aggregate").json()["items"]] == [
        "agg_agent_Code_Analyzer"]
    assert ids(target_type="agent") == ["e2", "e1"]
    assert ids(target_type="execution", target_id=execution.execution_id) == ["e3"]
    assert ids(passed="false") == ["e2"]
    assert ids(passed="true", target_id="Code_Analyzer") == ["e1"]
    assert api.viewer.get("/api/evaluations", limit=1, method="manual").json()["count"] == 3
    assert api.viewer.get("/api/evaluations", target_type="blueprint").status_code == 422
    missing = api.viewer.get("/api/evaluations/e9")
    assert missing.status_code == 404 and missing.json()["message"] == "evaluation 'e9' does not exist"


@pytest.mark.parametrize("changes, where, message", [
    # 0.2, 0.3 and 0.1 give 0.4 × 0.2 + 0.4 × 0.3 + 0.2 × 0.1 = 0.22: a reject, not an approved 0.95
    ({"scores": {"accuracy": 0.2, "completeness": 0.3, "efficiency": 0.1}}, "overall_score",
     "overall_score is 0.88, but the scores give 0.22"),
    ({"pass": False}, "pass", "pass is false, but the scores give true"),
    ({"action": "revise"}, "action", 'action is "revise", but the scores give "approve"'),
])
def test_a_hand_evaluation_that_does_not_follow_from_its_scores_is_refused_naming_the_field(api, changes, where,
                                                                                             message):
    response = api.author.post("/api/evaluations", evaluation(**changes))
    assert response.status_code == 422, response.json()
    assert response.json()["message"].startswith(f"{where}: {message} (overall = 0.4 × accuracy")
    assert not Evaluation.objects.exists()
