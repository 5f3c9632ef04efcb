"""Shared fixtures."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

# The loopback chat-completions server, a fixture for any test that talks to an
# OpenAI-compatible backend (tests of agents, runs and costs alike).
from tests.agents.backends.chat_server import chat_server  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent


# The fixtures through which a test reaches the test database (pytest-django's), besides
# the django_db mark.
DATABASE_FIXTURES = {"_django_db_helper", "db", "transactional_db", "django_db_reset_sequences",
                     "django_db_serialized_rollback", "live_server"}


def first_pass_only(item) -> str | None:
    """Why bin/test's second pass (SWITCHYARD_REPEAT_PASS=1, on PostgreSQL) leaves `item` out,
    or None when the database may change what it tests. The rule, in order:

    1. marked `own_database`: it brings a database of its own whatever DATABASE_URL says;
    2. no database at all: neither the django_db mark, nor a database fixture, nor a
       Django TestCase class, so pytest-django refuses it the test database (the pure
       engine, bin/ and docs tests);
    3. a page in the browser without real workers: its subject is the page's markup and
       script; the selectors behind the page run on both databases in the pages' client
       tests, and the browser tests that run a workflow on real workers stay.
    """
    if "own_database" in item.keywords:
        return "works on a database of its own"
    from django.test import TransactionTestCase

    fixtures = set(getattr(item, "fixturenames", ()))
    django_case = isinstance(getattr(item, "cls", None), type) and issubclass(item.cls, TransactionTestCase)
    if item.get_closest_marker("django_db") is None and not fixtures & DATABASE_FIXTURES and not django_case:
        return "touches no database"
    if "browser" in fixtures and "workers" not in fixtures:
        return "a page in the browser without workers"
    return None


def last_pass_only(item) -> str | None:
    """Why a test runs once, on the last pass's database (PostgreSQL, as deployed), or None:
    marked `last_pass_only`, or it runs real workers (`workers`) to test what workers do —
    run, wait, retry, stop, record — which the database does not change; the tests of what
    it may change (locks, exactly-once under faults) are marked `both_databases`."""
    if "last_pass_only" in item.keywords:
        return "runs once, in the second pass"
    if "workers" in getattr(item, "fixturenames", ()) and "both_databases" not in item.keywords:
        return "real workers, run once, in the second pass"
    return None


def left_out_of_this_pass(item) -> str | None:
    """Why this pass of bin/test leaves `item` out, or None: the second pass
    (SWITCHYARD_REPEAT_PASS=1) leaves out what the first ran and the database cannot change
    (`first_pass_only`); a first pass that a second follows (SWITCHYARD_REPEAT_PASS_FOLLOWS=1)
    leaves out what runs once, on the second's database (`last_pass_only`)."""
    if os.environ.get("SWITCHYARD_REPEAT_PASS") == "1":
        return first_pass_only(item)
    if os.environ.get("SWITCHYARD_REPEAT_PASS_FOLLOWS") == "1":
        return last_pass_only(item)
    return None


def pytest_collection_modifyitems(config, items):
    """bin/test runs the suite once per database; each pass deselects what it leaves to the
    other (`left_out_of_this_pass`)."""
    kept, left_out, reasons = [], [], {}
    for item in items:
        reason = left_out_of_this_pass(item)
        if reason is None:
            kept.append(item)
        else:
            left_out.append(item)
            reasons[reason] = reasons.get(reason, 0) + 1
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept
        config.stash[REPEAT_PASS_LEFT_OUT] = reasons


REPEAT_PASS_LEFT_OUT = pytest.StashKey[dict]()


def pytest_sessionfinish(session):
    """An xdist process hands its count of what it left out to the controlling process."""
    reasons = session.config.stash.get(REPEAT_PASS_LEFT_OUT, None)
    if reasons and hasattr(session.config, "workeroutput"):
        session.config.workeroutput["left_out"] = reasons


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """Every xdist process collects the same tests: one count serves for all."""
    reasons = getattr(node, "workeroutput", {}).get("left_out")
    if reasons:
        node.config.stash[REPEAT_PASS_LEFT_OUT] = reasons


def pytest_terminal_summary(terminalreporter, config):
    reasons = config.stash.get(REPEAT_PASS_LEFT_OUT, None)
    if reasons:
        said = "; ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
        terminalreporter.write_line(f"left out of this pass, as the other runs them: {said}")


@dataclass
class WorkerProcess:
    queue: str
    hostname: str
    process: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def _redis_answers(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2).ping())
    except redis.RedisError:
        return False


@pytest.fixture(scope="session")
def celery_worker_process():
    """A real `celery -A project worker` subprocess on its own queue and hostname.

    It uses the broker/result backend from the settings (REDIS_URL); bin/test makes sure
    a Redis answers there. The worker sees the environment's DATABASE_URL, not pytest's
    test database (an in-memory SQLite one is invisible to other processes), so only
    enqueue tasks that do not touch the database.
    """
    from django.conf import settings

    from project.celery import app

    if not _redis_answers(settings.CELERY_BROKER_URL):
        pytest.fail(
            "No Redis answers at the Celery broker URL (REDIS_URL). "
            "Run the tests with bin/test, which starts a private Redis when needed."
        )

    token = uuid.uuid4().hex[:12]
    queue = f"switchyard-test-{token}"
    hostname = f"pytest-{token}@switchyard"
    env = dict(os.environ, CELERY_QUEUE=queue, DJANGO_SETTINGS_MODULE="project.settings")
    log_file = tempfile.NamedTemporaryFile(
        prefix="switchyard-worker-", suffix=".log", delete=False
    )
    log_path = Path(log_file.name)
    command = [
        sys.executable, "-m", "celery", "-A", "project", "worker",
        "--pool", "solo", "--queues", queue, "--hostname", hostname,
        "--loglevel", "info", "--without-gossip", "--without-mingle",
    ]
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
        stdout=log_file, stderr=subprocess.STDOUT,
    )
    log_file.close()
    worker = WorkerProcess(queue=queue, hostname=hostname, process=process, log_path=log_path)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                pytest.fail(f"The Celery worker exited with {process.returncode}:\n{worker.log()}")
            if app.control.ping(destination=[hostname], timeout=1.0):
                break
            if time.monotonic() > deadline:
                pytest.fail(f"The Celery worker did not answer a ping within 30s:\n{worker.log()}")
        yield worker
    finally:
        if process.poll() is None:
            process.terminate()  # SIGTERM: warm shutdown
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        try:  # leave nothing behind in a shared Redis
            with app.connection_for_write() as connection:
                connection.default_channel.queue_delete(queue)
        except Exception:  # noqa: BLE001 - best-effort cleanup
            pass
        log_path.unlink(missing_ok=True)


@pytest.fixture
def redis_server(tmp_path):
    """A redis-server of the test's own (tests/private_redis.py), for tests that restart it."""
    from tests.private_redis import PrivateRedis

    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.stop()


UNCONSUMED_QUEUE = f"switchyard-test-unconsumed-{os.getpid()}"


@pytest.fixture(autouse=True)
def unconsumed_queue():
    """Tasks a test sends without a worker for them (a run that ends enqueues its
    evaluation) go to a queue of the test session's own, never the default one that a
    developer's worker reads; tests with workers point the setting at theirs."""
    from django.test import override_settings

    with override_settings(CELERY_TASK_DEFAULT_QUEUE=UNCONSUMED_QUEUE):
        yield


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hashing():
    """Passwords that tests set are hashed with MD5, in microseconds instead of PBKDF2's
    half second of CPU: the suite makes and signs in thousands of users. Hashes of the
    other kinds (made by the product's own processes) still verify. Tests only."""
    from django.conf import settings
    from django.test.utils import override_settings

    hashers = ["django.contrib.auth.hashers.MD5PasswordHasher", *settings.PASSWORD_HASHERS]
    with override_settings(PASSWORD_HASHERS=hashers):
        yield


TRUNCATE_PAST = 16 * 1024 * 1024  # bytes of a table's rows, past which a flush truncates


@pytest.fixture(scope="session", autouse=True)
def _flush_by_delete_on_postgresql():
    """A test that commits (`transaction=True`, a live server, real workers) is cleaned up by
    Django's flush, which on PostgreSQL is one TRUNCATE of every table: it makes every
    table's files anew, some half a second each time on this suite's small tables. Deleting
    their rows, with the foreign keys checked at commit (Django makes them deferrable), leaves
    the same empty tables in a few milliseconds. The sequences are reset when the flush asks,
    as TRUNCATE … RESTART IDENTITY would. A table grown past TRUNCATE_PAST bytes (a test of
    runs of 100,000 node runs) is emptied faster by TRUNCATE: then every table is. Tests only."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncating = DatabaseOperations.sql_flush

    def deleting(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if not tables:
            return []
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT coalesce(max(pg_relation_size(oid)), 0) FROM pg_class "
                           "WHERE relkind = 'r' AND relname = ANY(%s)", [list(tables)])
            if cursor.fetchone()[0] > TRUNCATE_PAST:
                return truncating(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        statements = ["SET CONSTRAINTS ALL DEFERRED;"]
        statements += [f"DELETE FROM {self.quote_name(table)};" for table in tables]
        if reset_sequences:
            with self.connection.cursor() as cursor:
                sequences = [sequence for table in tables
                             for sequence in self.connection.introspection.get_sequences(cursor, table)]
            statements += self.sequence_reset_by_name_sql(style, sequences)
        return statements

    DatabaseOperations.sql_flush = deleting
    yield
    DatabaseOperations.sql_flush = truncating


@pytest.fixture(scope="session", autouse=True)
def _drop_unconsumed_queue():
    yield
    from django.conf import settings

    if not _redis_answers(settings.CELERY_BROKER_URL):
        return
    try:
        from project.celery import app

        with app.connection_for_write() as connection:
            connection.default_channel.queue_delete(UNCONSUMED_QUEUE)
    except Exception:  # noqa: BLE001 - best-effort cleanup of a shared Redis
        pass


class ApiClient:
    """A Django test client that sends one user's API token with every request."""

    def __init__(self, user, token: str | None):
        from django.test import Client

        self.user = user
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {token}") if token else Client()

    def _send(self, method: str, path: str, body=None, **extra):
        import json

        kwargs = {"content_type": "application/json", "data": json.dumps(body)} if body is not None else {}
        return getattr(self.client, method)(path, **kwargs, **extra)

    def get(self, path, **params):
        """A streamed answer (a run's whole record) comes back read, like any other."""
        import json

        from django.http import HttpResponse

        response = self.client.get(path, params)
        if not response.streaming:
            return response
        content = b"".join(response.streaming_content)
        read = HttpResponse(content, status=response.status_code, content_type=response["Content-Type"])
        read.json = lambda: json.loads(content)
        return read

    def post(self, path, body=None):
        return self._send("post", path, {} if body is None else body)

    def record(self, execution_id: str) -> dict:
        """A run's whole record: every node run in full (`?node_runs=all`)."""
        response = self.get(f"/api/executions/{execution_id}", node_runs="all")
        assert response.status_code == 200, response.content
        return response.json()

    def put(self, path, body=None):
        return self._send("put", path, {} if body is None else body)

    def patch(self, path, body=None):
        return self._send("patch", path, {} if body is None else body)

    def delete(self, path):
        return self._send("delete", path)


@pytest.fixture
def api(db, settings):
    """API clients by role: `api.viewer`, `api.author`, `api.approver`, `api.admin` (each a
    user holding that one role, with a token) and `api.anonymous` (no credentials)."""
    from django.contrib.auth.models import Group, User

    from core.models import ApiToken

    class Clients:
        anonymous = ApiClient(None, None)

    for role in ("viewer", "author", "approver", "admin"):
        user = User.objects.create_user(username=f"{role}-user", password="a long password")
        if role != "viewer":  # a migration makes the groups; a transactional test's flush removes them
            user.groups.add(Group.objects.get_or_create(name=role)[0])
        _, token = ApiToken.issue(user, "tests")
        setattr(Clients, role, ApiClient(user, token))
    return Clients
