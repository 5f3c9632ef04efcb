"""The dispatch a model call is made for, so that a call made again after a fault can be told
from a new one, and a backend process left running by a dead worker can be ended.

A worker opens a dispatch (`dispatched`) around each node run it performs: the node run, and
how many times it has been sent to a worker (1, then one more each time the sweep sends it
again after its worker went silent). Inside it, backends

- tell the backend which dispatch this is (`dispatch_number`: the command backend's
  `SWITCHYARD_DISPATCH`, the OpenAI-compatible backend's `X-Switchyard-Dispatch`);
- name each call with an idempotency key (`idempotency_key`): the node run, a digest of the
  request and how many times that same request was made before in the dispatch. The key
  is the same in every dispatch of the node run, so that a provider that honours keys
  answers a call made again after a fault from the first one instead of charging it twice,
  and differs for every other call (another batch, a retry of the node: a new node run);
- report a local process they start for the call (`process_started`), which the worker
  records on the node run's claim. When the node run is sent again, that process, if it
  still runs, is ended (`end_process`) — only from the machine it runs on.

With no dispatch open (the judge, a preview), calls carry no key and no number.
"""
from __future__ import annotations

import hashlib
import logging
import os
import signal
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from engine.errors import reraise_interrupt

logger = logging.getLogger(__name__)


@dataclass
class Dispatch:
    node_run: int
    number: int
    on_process: Callable[[dict], None] | None = None
    made: Counter = field(default_factory=Counter)  # request digest → calls made with it so far


_dispatch: ContextVar[Dispatch | None] = ContextVar("switchyard_dispatch", default=None)


@contextmanager
def dispatched(node_run: int, number: int, *, on_process: Callable[[dict], None] | None = None) -> Iterator[Dispatch]:
    """The calls made inside (in this thread or task) are for dispatch `number` of the node
    run `node_run`; `on_process(record)` is told of each local process a backend starts."""
    current = Dispatch(node_run, max(1, number), on_process)
    token = _dispatch.set(current)
    try:
        yield current
    finally:
        _dispatch.reset(token)


def dispatch_number() -> int | None:
    """The open dispatch's number (None: no dispatch is open)."""
    current = _dispatch.get()
    return None if current is None else current.number


def idempotency_key(request: bytes) -> str | None:
    """The key of the call about to send `request` (its whole body, as sent), or None with
    no dispatch open. Ask once per call: retries of the same call reuse the key."""
    current = _dispatch.get()
    if current is None:
        return None
    digest = hashlib.sha256(request).hexdigest()[:24]
    current.made[digest] += 1
    return f"switchyard-{current.node_run}-{digest}-{current.made[digest]}"


# -- local processes ------------------------------------------------------------------------


def process_started(pid: int) -> None:
    """A backend started the process `pid` (leading a process group of its own) for the call
    in hand: hand its record to the open dispatch, if any. Never fails the call."""
    current = _dispatch.get()
    if current is None or current.on_process is None:
        return
    record = {"pid": pid, "machine": machine(), "started": start_time(pid)}
    try:
        current.on_process(record)
    except Exception as error:  # noqa: BLE001 - a record not kept only means the process cannot be ended later
        reraise_interrupt(error)  # a time limit stops the call here as anywhere
        logger.warning("could not record the backend process %s of node run %s", pid, current.node_run,
                       exc_info=True)


def end_process(record: dict | None) -> bool:
    """End (SIGKILL) the process group of a backend process recorded by `process_started`, if
    it runs on this machine and is still the process recorded. True: it was ended.

    A pid means something only on the machine, and in the PID namespace, that gave it: the
    record names both (`machine`), and a process elsewhere is left alone: the sweep, or the
    worker that takes the node run again, ends it when either runs on its machine;
    otherwise it runs until it finishes. The pid must still belong to the process recorded
    (the same start time), so a pid the system has since given to another process is never
    signalled."""
    if not record or not record.get("machine") or record.get("machine") != machine():
        return False
    pid = record.get("pid")
    if not isinstance(pid, int) or pid <= 1 or start_time(pid) != record.get("started"):
        return False
    try:
        if os.getpgid(pid) == pid:  # it leads its group: end what it started too
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    logger.warning("ended backend process %s, left running by a worker that went silent", pid)
    return True


@lru_cache(maxsize=1)
def machine() -> str | None:
    """This machine as far as pids go: its boot and the PID namespace of this process
    (Linux); None where they cannot be read, and then no process is ever ended."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None
    return f"{boot}/{namespace}"


def start_time(pid: int) -> int | None:
    """When the process `pid` started, in clock ticks since boot (/proc/<pid>/stat's 22nd
    field); None: no such process (or no /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # after the command name, which may hold spaces
    return int(fields[19])
