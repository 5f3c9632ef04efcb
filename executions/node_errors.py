"""How a node run fails: `NodeFailure`, its code, whether a retry may help, what to store.

Every node kind (executions/node_kinds/) and the services around them (a crossed cost
bound, a time limit, a worker gone silent) raise or build this one shape; the services
in `executions/services/node_run.py` record it on the run and decide on a retry.
"""
from __future__ import annotations

from engine.errors import EngineError


class NodeFailure(EngineError):
    """A node run that failed: its code, whether a retry may help, and the fields of the
    run to store. Recorded on the run, never answered to a request."""

    code = "NODE_FAILED"

    def __init__(self, message: str, *, code: str, retryable: bool, record: dict | None = None,
                 details: dict | None = None):
        super().__init__(message, code=code, details=details or None)
        self.retryable = retryable
        self.record = record or {}


class NodeWaits(EngineError):
    """A node run that stops for a person's decision on tool calls its model asked for: the
    gate it opens (the calls shown, who decides), the conversation it goes on from after the
    decision, and the fields of the run to store meanwhile (its turns and calls so far)."""

    code = "WAITING_FOR_DECISION"

    def __init__(self, message: str, *, gate: dict, conversation: dict, record: dict):
        super().__init__(message)
        self.gate = gate
        self.conversation = conversation
        self.record = record
