"""Switchyard on several machines, each a network namespace of this one.

  client ── web (gunicorn, beat) ── db (PostgreSQL, Redis) ── w1 (worker)
                                                          └── w2 (worker)

Every host reaches the database and the broker over its own veth link (loopback
addresses 127.77.N.x, see hosts.py); the client reaches only the web host, through the
API, as a program would. Each host has its own data folder; the workspace is one folder
shared by all, as an NFS mount would be. Nothing talks to the PostgreSQL and Redis of the
root namespace.
"""
from __future__ import annotations

import glob
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from tests.deploy.hosts import SUBNET, Network, Unavailable, wait_until
from tests.slow_chain import SLOW_CHAIN_DOCUMENTS, slow_argv

pytestmark = [pytest.mark.integration, pytest.mark.own_database]

ROOT = Path(__file__).resolve().parents[2]
SLOW_ARGV = slow_argv(2)
BRIEF = {"ref_type": "file", "path": "/workspace/shared/brief.md", "format": "md",
         "fallback_config": {"strategy": "abort"}}  # a node that cannot read it fails, rather than skip it
DOCUMENTS = [
    *SLOW_CHAIN_DOCUMENTS,
    {"workflow_id": "wide_scan", "name": "Wide scan", "topology": "par",
     "nodes": [{"id": f"scan_{i:02d}", "agent_ref": "Code_Analyzer",
                "input_mapping": {"repository": "$.input.repository", "data_references": [BRIEF]}}
               for i in range(12)],
     "error_handling": {"retry_count": 0}},
    {"workflow_id": "read_brief", "name": "Read the brief", "topology": "seq",
     "nodes": [{"id": "read", "agent_ref": "Code_Analyzer", "input_mapping": {"data_references": [BRIEF]}}],
     "error_handling": {"retry_count": 0}},
]
TOKEN = """
from django.contrib.auth.models import Group, User
from core.models import ApiToken
user = User.objects.create_user("operator")
user.groups.add(Group.objects.get(name="author"))
print(ApiToken.issue(user, "scale-out test")[1])
"""
# Runs on the client host: one API request, its answer as JSON on stdout.
CLIENT = """
import json, sys, urllib.error, urllib.request
method, url, token, body = sys.argv[1:5]
request = urllib.request.Request(url, method=method, data=body.encode() if body else None,
                                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
try:
    with urllib.request.urlopen(request, timeout=10) as answer:
        status, text = answer.status, answer.read().decode()
except urllib.error.HTTPError as error:
    status, text = error.code, error.read().decode()
print(json.dumps({"status": status, "body": text}))
"""


def postgres_bindir() -> Path | None:
    try:
        bindir = Path(subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True).stdout.strip())
        if (bindir / "initdb").exists():
            return bindir
    except OSError:
        pass
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


class Deployment:
    """The five hosts, their services, and an API client on the client host."""

    def __init__(self, network: Network, workdir: Path):
        self.network = network
        self.workdir = workdir
        self.workspace = workdir / "shared-workspace"
        self.secret_key = uuid.uuid4().hex * 2  # the same on every host, as web hosts behind one proxy need
        self.workers: dict[str, tuple] = {}  # host name → (process, workspace)
        self.starts = 0

    def build(self, bindir: Path) -> None:
        network = self.network
        self.db, self.web, self.client = network.host("db"), network.host("web"), network.host("client")
        self.hosts = {name: network.host(name) for name in ("w1", "w2")}
        for host in (self.web, *self.hosts.values()):
            network.link(self.db, host)
        network.link(self.web, self.client)
        self.url = f"http://{self.web.addresses['client']}:8000"
        (self.workspace / "shared").mkdir(parents=True)
        (self.workspace / "shared" / "brief.md").write_text("# Brief\n\nScan the repository for risky changes.\n")
        self.start_database(bindir)
        self.start_redis()
        self.prepare_web()

    # -- the db host ---------------------------------------------------------------------

    def start_database(self, bindir: Path) -> None:
        # PostgreSQL refuses to run as root: its cluster belongs to the postgres user, in a
        # folder that user can reach (pytest's own temporary folders are private to root).
        self.pgdir = Path(tempfile.mkdtemp(prefix="switchyard-scale-out-pg-"))
        shutil.chown(self.pgdir, "postgres", "postgres")
        env = {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"}
        data = self.pgdir / "data"
        initdb = [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                  "--locale", "C", "--no-sync"]
        self.network.run(self.db, initdb, env=env, cwd=self.pgdir, user="postgres")
        with open(data / "pg_hba.conf", "a") as hba:
            hba.write(f"host all all {SUBNET}.0.0/16 trust\n")  # the test hosts' links, and nothing else
        addresses = ",".join(self.db.addresses.values())
        self.network.start(self.db, "postgres", [
            str(bindir / "postgres"), "-D", str(data), "-c", f"listen_addresses={addresses}", "-c", "port=5432",
            "-c", f"unix_socket_directories={self.pgdir}", "-c", "fsync=off", "-c", "synchronous_commit=off",
            "-c", "full_page_writes=off"], env=env, cwd=self.pgdir, user="postgres")
        ready = [str(bindir / "pg_isready"), "-q", "-h", self.db.addresses["web"], "-p", "5432", "-U", "postgres"]
        wait_until(lambda: subprocess.run(["ip", "netns", "exec", self.db.namespace, *ready]).returncode == 0,
                   timeout=30, what="PostgreSQL on the db host", logs=self.network.logs)
        self.network.run(self.db, [str(bindir / "createdb"), "-h", self.db.addresses["web"], "-U", "postgres",
                                   "switchyard"], env=env, cwd=self.pgdir, user="postgres")

    def start_redis(self) -> None:
        self.network.start(self.db, "redis", [
            "redis-server", "--bind", *self.db.addresses.values(), "--port", "6379", "--save", "",
            "--appendonly", "no", "--protected-mode", "no", "--dir", str(self.workdir)],
            env={"PATH": os.environ.get("PATH", "")})

    # -- the web host --------------------------------------------------------------------

    def env(self, host, **extra) -> dict:
        """A host's settings: everything by the environment, nothing inherited from this one."""
        db = self.db.addresses[host.name]
        return {
            "PATH": os.environ.get("PATH", ""), "HOME": str(self.workdir), "LANG": "C.UTF-8",
            "DJANGO_SETTINGS_MODULE": "project.settings",
            "DATABASE_URL": f"postgres://postgres@{db}:5432/switchyard", "REDIS_URL": f"redis://{db}:6379/0",
            "SECRET_KEY": self.secret_key, "DEBUG": "0", "ALLOWED_HOSTS": self.web.addresses["client"],
            "SWITCHYARD_DATA_DIR": str(self.workdir / f"data-{host.name}"), "WORKSPACE_ROOT": str(self.workspace),
            "NODE_HEARTBEAT_SECONDS": "0.5", "NODE_STALE_SECONDS": "3", "SWEEP_EVERY_SECONDS": "1",
            "NODE_RETRY_BACKOFF_SECONDS": "0.1", "COMMAND_BACKEND_ARGV": json.dumps(SLOW_ARGV), **extra,
        }

    def prepare_web(self) -> None:
        """Migrate, load the demo and this test's workflows, issue a token; then serve."""
        env, manage = self.env(self.web), [sys.executable, "manage.py"]
        self.network.run(self.web, [*manage, "migrate", "--noinput"], env=env, cwd=ROOT)
        self.network.run(self.web, [*manage, "load_demo"], env=env, cwd=ROOT)
        self.network.run(self.web, [*manage, "import_document", "-"], env=env, cwd=ROOT, input=json.dumps(DOCUMENTS))
        token = self.network.run(self.web, [*manage, "shell", "--verbosity", "0", "-c", TOKEN], env=env, cwd=ROOT)
        self.token = token.strip()
        self.network.start(self.web, "gunicorn", [
            sys.executable, "-m", "gunicorn", "project.wsgi", "--bind", f"{self.web.addresses['client']}:8000",
            "--workers", "2"], env=env, cwd=ROOT)
        # Exactly one beat in the whole deployment, as deployed (its schedule in the
        # database): it sends the sweep that re-dispatches node runs whose worker went silent.
        self.network.start(self.web, "beat", [
            sys.executable, "-m", "celery", "-A", "project", "beat", "--loglevel", "info",
            "--scheduler", "django_celery_beat.schedulers:DatabaseScheduler"], env=env, cwd=ROOT)
        wait_until(self.api_answers, timeout=30, what="the web host to answer", logs=self.network.logs)

    # -- the worker hosts ----------------------------------------------------------------

    def ensure_workers(self, **workspaces: Path) -> None:
        """Exactly these workers running (host name → its WORKSPACE_ROOT); others are stopped."""
        for name, (process, workspace) in list(self.workers.items()):
            if workspaces.get(name) != workspace or not process.alive():
                process.stop()
                del self.workers[name]
        started = []
        for name, workspace in workspaces.items():
            if name in self.workers:
                continue
            host = self.hosts[name]
            self.starts += 1
            process = self.network.start(host, f"worker-{name}-{self.starts}", [
                sys.executable, "-m", "celery", "-A", "project", "worker", "--pool", "solo",
                "--hostname", f"worker@{name}", "--loglevel", "info", "--without-gossip", "--without-mingle"],
                env=self.env(host, WORKSPACE_ROOT=str(workspace)), cwd=ROOT)
            self.workers[name] = (process, workspace)
            started.append((name, process))
        for name, process in started:
            process.wait_for_output(f"worker@{name} ready.", timeout=45)

    # -- the client ----------------------------------------------------------------------

    def api(self, method: str, path: str, body=None) -> tuple[int, dict]:
        out = self.network.run(self.client, [sys.executable, "-c", CLIENT, method, self.url + path, self.token,
                                             json.dumps(body) if body is not None else ""],
                               env={"PATH": os.environ.get("PATH", "")}, timeout=30)
        answer = json.loads(out)
        return answer["status"], json.loads(answer["body"]) if answer["body"] else {}

    def api_answers(self) -> bool:
        try:
            return self.api("GET", "/api/executions?limit=1")[0] == 200
        except (AssertionError, json.JSONDecodeError):
            return False

    def start_run(self, workflow_id: str, input: dict | None = None) -> str:
        status, body = self.api("POST", "/api/executions", {"workflow_id": workflow_id, "input": input or {}})
        assert status == 201, body
        return body["execution_id"]

    def run_detail(self, execution_id: str) -> dict:
        status, body = self.api("GET", f"/api/executions/{execution_id}?node_runs=all")  # every node run
        assert status == 200, body
        return body

    def wait_for_end(self, execution_id: str, timeout: float = 60) -> dict:
        ended = {}

        def has_ended():
            ended.update(self.run_detail(execution_id))
            return ended["status"] in ("success", "failed", "cancelled", "escalated")

        wait_until(has_ended, timeout=timeout, what=f"run {execution_id} to end", logs=self.network.logs)
        return ended


def worker_host(node_run: dict) -> str:
    """The worker's name (`worker@w1`) of a node run's claim (`worker@w1/<nonce>`)."""
    return node_run["worker"].rsplit("/", 1)[0]


@pytest.fixture(scope="module")
def deployment():
    bindir = postgres_bindir()
    for tool in ("ip", "runuser", "redis-server"):
        if not shutil.which(tool):
            pytest.skip(f"the scale-out test needs `{tool}`")
    if bindir is None:
        pytest.skip("the scale-out test needs PostgreSQL's initdb (pg_config --bindir)")
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("the scale-out test needs a `postgres` user to run its PostgreSQL as (it refuses root)")
    workdir = Path(tempfile.mkdtemp(prefix="switchyard-scale-out-"))
    network = Network(workdir, prefix=f"sy{os.getpid()}")
    made = Deployment(network, workdir)
    try:
        try:
            made.build(bindir)
        except Unavailable as why:
            pytest.skip(f"network namespaces cannot be made here ({why}); "
                        "the scale-out test needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN)")
        yield made
    finally:
        network.close()
        if hasattr(made, "pgdir"):
            shutil.rmtree(made.pgdir, ignore_errors=True)
        shutil.rmtree(workdir, ignore_errors=True)


def test_it_runs_a_wide_workflows_nodes_on_the_workers_of_both_hosts(deployment):
    deployment.ensure_workers(w1=deployment.workspace, w2=deployment.workspace)
    run = deployment.wait_for_end(deployment.start_run("wide_scan", {"repository": "acme"}))
    assert run["status"] == "success", run["ended_reason"]
    runs = run["node_runs"]
    assert sorted(r["node_id"] for r in runs if r["status"] == "success") == [f"scan_{i:02d}" for i in range(12)]
    assert {worker_host(r) for r in runs} == {"worker@w1", "worker@w2"}
    # Every node read the brief from the shared workspace, on whichever host it ran.
    assert all(r["resolution_failures"] == [] for r in runs)
    assert all(r["resolved_inputs"] and "risky changes" in json.dumps(r["resolved_inputs"]) for r in runs)


def test_it_finishes_a_run_when_one_hosts_worker_is_killed_mid_node(deployment):
    deployment.ensure_workers(w1=deployment.workspace, w2=deployment.workspace)
    execution_id = deployment.start_run("slow_chain")
    running = {}

    def step_1_runs():
        running.update(next((r for r in deployment.run_detail(execution_id)["node_runs"]
                             if r["node_id"] == "step_1" and r["status"] == "running"), {}))
        return bool(running)

    wait_until(step_1_runs, timeout=30, what="step_1 to run", logs=deployment.network.logs)
    victim = worker_host(running).split("@")[1]
    deployment.workers[victim][0].kill()  # SIGKILL on that host, in the middle of step_1
    survivor = "worker@" + ({"w1", "w2"} - {victim}).pop()

    run = deployment.wait_for_end(execution_id, timeout=60)
    assert run["status"] == "success", run["ended_reason"]
    for node_id in ("step_0", "step_1", "step_2"):
        assert [r["status"] for r in run["node_runs"] if r["node_id"] == node_id].count("success") == 1, node_id
    step_1 = next(r for r in run["node_runs"] if r["node_id"] == "step_1" and r["status"] == "success")
    assert worker_host(step_1) == survivor and step_1["dispatches"] >= 2, step_1


def test_it_fails_a_file_reference_naming_the_worker_host_that_cannot_see_it(deployment):
    # The only worker left runs on a host whose share is not mounted.
    deployment.ensure_workers(w1=deployment.workdir / "share-not-mounted")
    run = deployment.wait_for_end(deployment.start_run("read_brief"))
    assert run["status"] == "failed"
    (node_run,) = run["node_runs"]
    assert node_run["error_code"] == "REF_NOT_FOUND"
    (failure,) = node_run["resolution_failures"]
    assert failure["error_code"] == "REF_NOT_FOUND"
    assert "the workspace folder does not exist on host worker@w1" in failure["error_message"]
    assert "shared by every worker" in failure["error_message"]
