"""The one root of every error of the house: a stable `code` and a message.

The engine's errors derive from `EngineError` directly; the apps' from it too, most
through `core.errors.SwitchyardError`, the errors a request can cause, which the API's one
handler turns into HTTP. An error that is not a `SwitchyardError` (a backend that did not
answer, a node run that failed) is recorded where it happened, not answered to a request.

Codes are the seeds' where they define one (REF_*, INVALID_FORMAT, ...): a class names its
default, and an instance may carry a more precise one.
"""
from __future__ import annotations

from typing import Any


class EngineError(Exception):
    code = "ENGINE_ERROR"

    def __init__(self, message: str, *, code: str | None = None, details: Any = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.details = details

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


# Exceptions that stop the work in hand wherever it is, such as a worker's time limit. Where
# the engine records a failure instead of raising it (a backend that failed, a cache that
# failed, a PDF that does not parse), it lets these through with `reraise_interrupt`, so a
# node past its time limit stops then rather than at the hard limit. The Django side names
# them (executions registers Celery's soft time limit); the engine knows no task queue.
_INTERRUPTS: list[type[BaseException]] = []


def register_interrupt(kind: type[BaseException]) -> None:
    if kind not in _INTERRUPTS:
        _INTERRUPTS.append(kind)


def reraise_interrupt(error: BaseException) -> None:
    """Raise `error` again if it is an interrupt; a caller that records failures calls this first."""
    if isinstance(error, tuple(_INTERRUPTS)):
        raise error
