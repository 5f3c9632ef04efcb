"""Inline continuation: the first node that a node run makes ready (the next node of a
chain) is run by the same worker instead of being sent through Redis; any others are sent
as usual. It is created already claimed by that worker (services/run.py, `LockedRun.advance`,
given the worker's `Chain`), in the transaction that stored the previous result, and comes
back from it as a value (`Claimed`) to the task that is still going (services/node_run.py),
which runs it next. A worker that dies before running it leaves a running node run without
a heartbeat, which the sweep sends again."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, NamedTuple

MAX_INLINE = 100
# A task continues a chain inline only while it is this young: the time limits are the
# task's (NODE_SOFT_TIME_LIMIT_SECONDS), so each node still gets all but a second of them.
INLINE_SECONDS = 1.0


@dataclass(frozen=True)
class Chain:
    """A worker's task that may run the next node of a chain itself: the worker's name,
    which the claims it makes carry, and until when (time.monotonic()) it may."""

    worker: str
    until: float

    def open(self) -> bool:
        return time.monotonic() < self.until


class Claimed(NamedTuple):
    """A node run created already claimed (`claim`) for the worker whose chain it continues."""

    run: Any  # executions.models.NodeRun
    claim: str
