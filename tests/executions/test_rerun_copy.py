"""A re-run that reuses more node runs than RERUN_COPY_INLINE_MAX: answered at once, pending,
while `rerun_copy` (a worker's task; called here in this process) copies them a chunk at a
time, then starts it. The real worker's proof is in test_rerun_worker.py."""
from collections import Counter
from datetime import timedelta
from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from benchmarks.large_runs import (
    LOOP,
    large_run_create,
    loop_workflow_create,
)
from executions.models import Execution
from executions.services import (
    execution_cancel,
    execution_rerun,
    node_runs_sweep,
    rerun_copy,
)
from executions.services import rerun as rerun_module

pytestmark = pytest.mark.django_db(transaction=True)

SIZE, CHUNK = 600, 100
EDITED = {"plan": "a plan a person wrote"}


@pytest.fixture
def sent():
    """The copies sent to workers: the mocked `apply_async` of the task."""
    with mock.patch("executions.tasks.rerun_copy.apply_async") as apply_async:
        yield apply_async


@pytest.fixture
def source(settings):
    settings.RERUN_COPY_INLINE_MAX, settings.RERUN_COPY_CHUNK = 50, CHUNK
    return large_run_create(workflow=loop_workflow_create(workflow_id="copy_loop"), node_runs=SIZE)


def last_node(source):
    return source.node_runs.order_by("-sequence", "-id").values_list("node_id", flat=True)[0]


def expected_originals(source):
    """The past run's node runs a re-run from its last step reuses, in order: each step
    before it, a failed attempt (which a retry follows) left out."""
    runs = list(source.node_runs.order_by("sequence", "id"))[:-1]
    return [run for run in runs if run.status == "success"]


def assert_copied_once(rerun, source):
    copies = list(rerun.node_runs.filter(reused_from__isnull=False).order_by("sequence").select_related("reused_from"))
    originals = expected_originals(source)
    assert Counter(copy.reused_from_id for copy in copies) == Counter(run.pk for run in originals)  # each once
    assert [copy.reused_from_id for copy in copies] == [run.pk for run in originals]  # in the past run's order
    assert [copy.sequence for copy in copies] == list(range(1, len(originals) + 1))
    assert [copy.step for copy in copies] == list(range(1, len(originals) + 1))
    for copy in copies:
        original = copy.reused_from
        output = EDITED.get(copy.node_id, original.output)
        assert (copy.kind, copy.output) == ("edited" if copy.node_id in EDITED else "reused", output)
        assert (copy.node_id, copy.prompt, copy.context_record, copy.resolved_inputs, copy.decision, copy.status) == (
            original.node_id, original.prompt, original.context_record, original.resolved_inputs, original.decision,
            original.status)
        assert (copy.tokens_in, copy.tokens_out, copy.cost, copy.worker) == (0, 0, 0, "")
    return copies


def test_it_answers_a_large_rerun_pending_before_any_copy_is_made(source, sent):
    with CaptureQueriesContext(connection) as queries:
        rerun = execution_rerun(source=source, from_node=last_node(source), outputs=EDITED)

    assert rerun.status == "pending" and rerun.started_at is None
    assert not rerun.node_runs.exists()  # nothing copied yet, nothing sent to run
    copies = len(expected_originals(source))
    assert rerun.copy_progress == {"copied": 0, "of": copies}
    assert rerun.rerun["copies"] == copies and rerun.rerun["reused"] == list(LOOP)  # each node once
    assert not [q for q in queries.captured_queries if (q["sql"] or "").startswith("INSERT INTO \"executions_noderun\"")]
    sent.assert_called_once()
    assert sent.call_args.args[0] == (rerun.pk,)


def test_a_worker_copies_a_chunk_at_a_time_then_starts_the_run(source, sent):
    rerun = execution_rerun(source=source, from_node=last_node(source), outputs=EDITED)
    with CaptureQueriesContext(connection) as queries:
        assert rerun_copy(execution_pk=rerun.pk).startswith("copied")

    rerun.refresh_from_db()
    assert rerun.status == "running" and rerun.started_at and rerun.copying is None and rerun.copy_progress is None
    copies = assert_copied_once(rerun, source)
    inserts = [q for q in queries.captured_queries if (q["sql"] or "").startswith("INSERT INTO \"executions_noderun\"")
               and "SELECT" in q["sql"]]
    assert len(inserts) == -(-SIZE // CHUNK)  # one statement per chunk of the past run read
    started = rerun.node_runs.get(kind="first")
    assert started.node_id == last_node(source) and started.step == len(copies) + 1 and started.status == "pending"
    assert rerun_copy(execution_pk=rerun.pk) == "not copying: running"  # delivered again: nothing more
    assert rerun.node_runs.count() == len(copies) + 1


def test_a_copy_interrupted_mid_way_goes_on_where_it_stopped_and_copies_each_run_once(source, sent):
    rerun = interrupted(execution_rerun(source=source, from_node=last_node(source), outputs=EDITED), at_chunk=3)
    assert rerun.status == "pending" and rerun.copy_progress["copied"] == rerun.node_runs.count() > 0
    assert rerun.node_runs.count() < rerun.copy_progress["of"]  # two chunks in, the third rolled back

    rerun_copy(execution_pk=rerun.pk)  # sent again (the sweep's)
    rerun.refresh_from_db()
    assert rerun.status == "running"
    assert_copied_once(rerun, source)


def interrupted(rerun, *, at_chunk):
    """Run the copy until the worker dies in the chunk `at_chunk` (after its INSERT, before
    its commit): the chunks before it are copied, that one is not."""
    real = rerun_module.copy_rows
    calls = []

    def dies(*args, **kwargs):
        calls.append(1)
        copied = real(*args, **kwargs)
        if len(calls) == at_chunk:
            raise SystemExit("the worker was killed")
        return copied

    with mock.patch.object(rerun_module, "copy_rows", dies), pytest.raises(SystemExit):
        rerun_copy(execution_pk=rerun.pk)
    rerun.refresh_from_db()
    return rerun


def test_cancelling_a_run_while_it_copies_stops_the_copy(source, sent):
    rerun = interrupted(execution_rerun(source=source, from_node=last_node(source)), at_chunk=2)
    copied = rerun.node_runs.count()
    assert 0 < copied <= CHUNK  # the first chunk: its node runs that are reused

    execution_cancel(execution=rerun)
    assert rerun_copy(execution_pk=rerun.pk) == "not copying: cancelled"

    rerun.refresh_from_db()
    assert rerun.status == "cancelled" and rerun.copying is None and rerun.copy_progress is None
    assert rerun.node_runs.count() == copied  # the copies made stay, none is added, nothing runs
    assert not rerun.node_runs.exclude(kind="reused").exists()


def test_the_sweep_sends_again_a_copy_that_has_not_moved_once(source, sent, settings):
    rerun = execution_rerun(source=source, from_node=last_node(source))
    sent.reset_mock()
    assert node_runs_sweep()["copies_resent"] == []  # it has just been sent
    Execution.objects.filter(pk=rerun.pk).update(
        updated_at=timezone.now() - timedelta(seconds=settings.NODE_STALE_SECONDS + 1))

    assert node_runs_sweep()["copies_resent"] == [rerun.pk]
    assert node_runs_sweep()["copies_resent"] == []  # claimed: sent once
    assert [call.args[0] for call in sent.call_args_list] == [(rerun.pk,)]


def test_a_small_rerun_is_copied_while_it_is_answered(source, sent, settings):
    settings.RERUN_COPY_INLINE_MAX = SIZE

    rerun = execution_rerun(source=source, from_node=last_node(source), outputs=EDITED)

    assert rerun.status == "running" and rerun.copying is None
    assert_copied_once(rerun, source)
    sent.assert_not_called()


def test_the_api_and_the_run_page_say_how_far_the_copy_has_got(source, sent, api):
    rerun = interrupted(execution_rerun(source=source, from_node=last_node(source)), at_chunk=3)
    copied, of = rerun.node_runs.count(), len(expected_originals(source))
    assert CHUNK < copied <= 2 * CHUNK  # two chunks in

    record = api.viewer.get(f"/api/executions/{rerun.execution_id}").json()
    assert (record["status"], record["copying"]) == ("pending", {"copied": copied, "of": of})
    api.viewer.client.force_login(api.viewer.user)
    page = api.viewer.client.get(f"/executions/{rerun.execution_id}/").content.decode()
    assert f"copying reused node runs: {copied:,} of {of:,}" in page


def test_rerun_execution_prints_the_id_of_a_large_rerun_without_waiting_for_its_copies(source, sent):
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command("rerun_execution", source.execution_id, "--from-node", last_node(source), stdout=out)

    rerun = Execution.objects.get(execution_id=out.getvalue().strip())
    assert rerun.status == "pending" and not rerun.node_runs.exists()
    assert sent.call_args.args[0] == (rerun.pk,)
