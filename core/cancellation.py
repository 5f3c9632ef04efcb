"""Work in flight stopped from another thread: a cancelled run's node on a worker.

A worker opens a `Cancellation` around each node run it performs (`cancellable`), and its
heartbeat thread, which learns that the node run was cancelled, calls `cancel(reason)` on
it. Whatever blocks the node's thread meanwhile registers how it is stopped with
`stoppable(stop)`: a command backend kills its process group, the OpenAI-compatible backend
shuts the socket of its open stream, an MCP call cancels its task. `stop` is called from
the heartbeat thread (at once, if the cancellation came first), and when the block ends the
node's thread raises `Cancelled`, which goes up through code that records failures (it is
registered as an interrupt, engine/errors.py) to the worker, which stores nothing more: the
node run was ended by the cancel itself. `check_cancelled()`, before a call is made, keeps
a cancelled node from starting another.

With no cancellation open (a preview, the judge, a command), all of this does nothing.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from engine.errors import EngineError

logger = logging.getLogger(__name__)

Stop = Callable[[], None]


class Cancelled(EngineError):
    """The work in hand was cancelled (its run was): it stops, and nothing of it is stored."""

    code = "CANCELLED"


class Cancellation:
    """The cancellation of one piece of work (a node run on a worker): whether and why it was
    cancelled, and how to stop what it is doing now."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stops: list[Stop] = []
        self.reason = ""

    @property
    def cancelled(self) -> bool:
        return bool(self.reason)

    def cancel(self, reason: str) -> None:
        """Cancel the work (once: a second call does nothing) and stop what it is blocked on."""
        with self._lock:
            if self.reason:
                return
            self.reason = reason or "cancelled"
            stops, self._stops = self._stops, []
        for stop in stops:
            _stopped(stop)

    def check(self) -> None:
        """Raise Cancelled if the work was cancelled."""
        if self.reason:
            raise Cancelled(self.reason)

    def add(self, stop: Stop) -> None:
        with self._lock:
            if not self.reason:
                self._stops.append(stop)
                return
        _stopped(stop)  # cancelled already: stop it at once

    def remove(self, stop: Stop) -> None:
        with self._lock:
            if stop in self._stops:
                self._stops.remove(stop)


def _stopped(stop: Stop) -> None:
    """Call `stop`; a stop that fails (what it stops has ended meanwhile) is logged, never raised
    in the thread that cancels."""
    try:
        stop()
    except Exception:  # noqa: BLE001 - the cancelling thread goes on with the others
        logger.warning("could not stop work in flight on cancel", exc_info=True)


_current: ContextVar[Cancellation | None] = ContextVar("switchyard_cancellation", default=None)


@contextmanager
def cancellable(cancellation: Cancellation | None = None) -> Iterator[Cancellation]:
    """The work done inside (in this thread or task) is cancelled by `cancellation` (a new one
    by default), which is yielded for another thread to cancel."""
    current = cancellation or Cancellation()
    token = _current.set(current)
    try:
        yield current
    finally:
        _current.reset(token)


def current() -> Cancellation | None:
    """The cancellation open here, if any (for work handed to another thread)."""
    return _current.get()


def check_cancelled() -> None:
    """Before starting a call: raise Cancelled if the work in hand was cancelled."""
    opened = _current.get()
    if opened is not None:
        opened.check()


@contextmanager
def stoppable(stop: Stop) -> Iterator[None]:
    """While inside, a cancel of the open cancellation calls `stop()` (from the cancelling
    thread). When the block ends, however it ends, a cancelled work raises Cancelled here:
    whatever the block returned or raised (a killed process's exit status, a closed
    socket's error) is the cancel's doing, not the call's outcome."""
    opened = _current.get()
    if opened is None:
        yield
        return
    opened.add(stop)
    try:
        yield
    except Exception as error:
        opened.remove(stop)
        if opened.cancelled:
            raise Cancelled(opened.reason) from error
        raise
    opened.remove(stop)
    opened.check()
