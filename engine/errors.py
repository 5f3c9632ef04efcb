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
