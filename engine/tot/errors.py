"""The error codes of tot-protocol "错误处理", raised as one exception.

The seed lists four common codes (常见错误码); this engine adds BUDGET_EXHAUSTED for a
search stopped by its node budget (`max_nodes`) before it found a solution.
"""
from __future__ import annotations

from typing import Any

from engine.errors import EngineError

INVALID_FORMAT = "INVALID_FORMAT"
GENERATION_FAILED = "GENERATION_FAILED"
EVALUATION_TIMEOUT = "EVALUATION_TIMEOUT"
SEARCH_EXHAUSTED = "SEARCH_EXHAUSTED"
BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"

ERROR_CODES = (INVALID_FORMAT, GENERATION_FAILED, EVALUATION_TIMEOUT, SEARCH_EXHAUSTED, BUDGET_EXHAUSTED)


class ToTError(EngineError):
    """An error of the Tree-of-Thoughts protocol; `as_dict()` is the seed's `error` field.

    `recoverable` says whether the search can go on without what failed (a generator
    call that gave nothing, an evaluation that came too late) or the run is over.
    """

    code = "TOT_ERROR"  # the family's name: every instance carries one of ERROR_CODES

    def __init__(self, code: str, message: str, *, recoverable: bool = False):
        if code not in ERROR_CODES:
            raise ValueError(f"unknown Tree-of-Thoughts error code {code!r} (known: {', '.join(ERROR_CODES)})")
        super().__init__(message, code=code)
        self.recoverable = recoverable

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "recoverable": self.recoverable}

    def __repr__(self) -> str:
        return f"ToTError({self.code}, {self.message!r}, recoverable={self.recoverable})"
