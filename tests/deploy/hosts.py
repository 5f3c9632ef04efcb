"""Test machines made of network namespaces, for the scale-out tests.

Each host is a namespace of its own, joined to others by veth pairs whose ends carry
loopback addresses (127.77.N.1 and 127.77.N.2 on link N): traffic stays on this machine
and never reaches the root namespace, where the shared PostgreSQL and Redis listen.
In each namespace `lo` holds 127.0.0.1/32 only (not the /8 the kernel gives it, which
would make every 127.x address local) and `route_localnet` lets 127.77.x.x travel over a
veth. Processes run in a host with `ip netns exec`, each in a session of its own so that
it is stopped with everything it started.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SUBNET = "127.77"


class Unavailable(Exception):
    """Namespaces cannot be made here (not root, no CAP_NET_ADMIN, no `ip`)."""


def ip(*args: str, namespace: str | None = None) -> None:
    _setup(["ip", "netns", "exec", namespace, "ip", *args] if namespace else ["ip", *args])


def sysctl(namespace: str, name: str, value: str) -> None:
    _setup(["ip", "netns", "exec", namespace, "sysctl", "-qw", f"{name}={value}"])


def _setup(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"`{' '.join(command)}` failed: {done.stderr.strip()}")


@dataclass
class Process:
    name: str
    popen: subprocess.Popen
    log_path: Path

    def log(self, tail: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-tail:]

    def alive(self) -> bool:
        return self.popen.poll() is None

    def wait_for_output(self, text: str, *, timeout: float) -> None:
        """Until the process has written `text` (e.g. that it is ready); an error if it exits first."""
        wait_until(lambda: text in self.log_path.read_text(errors="replace") or not self.alive(),
                   timeout=timeout, what=f"{self.name} to write {text!r}", logs=self.log)
        assert self.alive(), f"{self.name} exited with {self.popen.returncode}:\n{self.log()}"

    def kill(self) -> None:
        """SIGKILL, as a machine that loses power: nothing gets to clean up."""
        _signal_group(self.popen, signal.SIGKILL)
        self.popen.wait(timeout=10)

    def stop(self, timeout: float = 15) -> None:
        """SIGTERM to the process and all it started, then SIGKILL after `timeout`."""
        self.terminate()
        self.reap(timeout)

    def terminate(self) -> None:
        if self.alive():
            _signal_group(self.popen, signal.SIGTERM)

    def reap(self, timeout: float) -> None:
        try:
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        _signal_group(self.popen, signal.SIGKILL)  # whatever it left behind in its session
        if self.alive():
            self.popen.wait(timeout=10)


def _signal_group(popen: subprocess.Popen, number: int) -> None:
    try:
        os.killpg(popen.pid, number)  # its session's group: start_new_session made pid the group id
    except ProcessLookupError:
        pass


@dataclass
class Host:
    name: str
    namespace: str
    addresses: dict[str, str] = field(default_factory=dict)  # the peer's name → this host's address on their link


class Network:
    """Namespaces, the links between them, and the processes started in them; `close`
    removes all of it, whatever state a test left it in."""

    def __init__(self, workdir: Path, prefix: str):
        self.workdir = workdir
        self.prefix = prefix  # unique per test run (it carries the pid), so runs never collide
        self.hosts: dict[str, Host] = {}
        self.processes: list[Process] = []
        self.links = 0

    def host(self, name: str) -> Host:
        namespace = f"{self.prefix}-{name}"
        made = subprocess.run(["ip", "netns", "add", namespace], capture_output=True, text=True)
        if made.returncode != 0:
            raise Unavailable(f"`ip netns add` failed: {made.stderr.strip() or made.returncode}")
        host = self.hosts[name] = Host(name, namespace)
        ip("link", "set", "lo", "up", namespace=namespace)
        ip("addr", "del", "127.0.0.1/8", "dev", "lo", namespace=namespace)
        ip("addr", "add", "127.0.0.1/32", "dev", "lo", namespace=namespace)
        sysctl(namespace, "net.ipv4.conf.all.route_localnet", "1")
        return host

    def link(self, a: Host, b: Host) -> None:
        """A veth pair between `a` (127.77.N.1) and `b` (127.77.N.2), N counting links.
        Both ends are created inside the namespaces: nothing appears in the root one."""
        self.links += 1
        number = self.links
        end_a, end_b = f"to-{b.name}", f"to-{a.name}"
        ip("link", "add", end_a, "netns", a.namespace, "type", "veth", "peer", "name", end_b, "netns", b.namespace)
        for host, end, address in ((a, end_a, f"{SUBNET}.{number}.1"), (b, end_b, f"{SUBNET}.{number}.2")):
            sysctl(host.namespace, f"net.ipv4.conf.{end}.route_localnet", "1")
            ip("addr", "add", f"{address}/24", "dev", end, namespace=host.namespace)
            ip("link", "set", end, "up", namespace=host.namespace)
        a.addresses[b.name] = f"{SUBNET}.{number}.1"
        b.addresses[a.name] = f"{SUBNET}.{number}.2"

    def start(self, host: Host, name: str, argv: list[str], *, env: dict, cwd: Path | None = None,
              user: str | None = None) -> Process:
        """Run `argv` on `host` (as `user`, through runuser, when given), its output in a log."""
        log_path = self.workdir / f"{name}.log"
        command = ["ip", "netns", "exec", host.namespace]
        if user:
            command += ["runuser", "-u", user, "--"]
        with open(log_path, "ab") as log:
            popen = subprocess.Popen(command + argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        process = Process(name, popen, log_path)
        self.processes.append(process)
        return process

    def run(self, host: Host, argv: list[str], *, env: dict, cwd: Path | None = None, user: str | None = None,
            input: str | None = None, timeout: float = 120) -> str:
        """Run `argv` on `host` to its end; its standard output, or an error with its output."""
        command = ["ip", "netns", "exec", host.namespace] + (["runuser", "-u", user, "--"] if user else []) + argv
        done = subprocess.run(command, cwd=cwd, env=env, input=input, capture_output=True, text=True,
                              timeout=timeout)
        if done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} on {host.name} exited {done.returncode}:\n"
                                 f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return done.stdout

    def logs(self) -> str:
        return "\n".join(f"--- {process.name} ---\n{process.log()}" for process in self.processes)

    def close(self) -> None:
        for process in self.processes:  # all at once: each takes a second or two to shut down
            process.terminate()
        for process in self.processes:
            process.reap(timeout=15)
        for host in self.hosts.values():  # deleting a namespace deletes the veth ends inside it
            subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True)


def wait_until(predicate, *, timeout: float, what: str, logs=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}\n{logs()}")
        time.sleep(0.2)
