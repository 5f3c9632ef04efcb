"""Calls that one caller can stop together (tools/catalogue.py's `call`, tools/mcp.py)."""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable


class CallGroup:
    """The calls made for one caller, which it can stop together: a node stopped by its time
    limit while it waits on calls stops them, and the servers they started. A call registers
    how it is stopped (`on_stop`) once it is under way; one that starts after `stop` is
    stopped at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stops: list[Callable[[], None]] = []
        self.stopped = False

    def on_stop(self, stop: Callable[[], None]) -> None:
        with self._lock:
            if not self.stopped:
                self._stops.append(stop)
                return
        stop()

    def stop(self) -> None:
        with self._lock:
            self.stopped, stops, self._stops = True, self._stops, []
        for stop in stops:
            with contextlib.suppress(Exception):  # a call that ended meanwhile has nothing to stop
                stop()
