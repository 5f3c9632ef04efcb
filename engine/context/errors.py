"""The six reference error codes of data-transfer-protocol §3.2, raised as one exception."""
from __future__ import annotations

from engine.errors import EngineError

REF_NOT_FOUND = "REF_NOT_FOUND"
REF_TIMEOUT = "REF_TIMEOUT"
REF_PERMISSION_DENIED = "REF_PERMISSION_DENIED"
REF_FORMAT_ERROR = "REF_FORMAT_ERROR"
REF_PATH_INVALID = "REF_PATH_INVALID"
REF_FILTER_ERROR = "REF_FILTER_ERROR"

ERROR_CODES = (REF_NOT_FOUND, REF_TIMEOUT, REF_PERMISSION_DENIED, REF_FORMAT_ERROR, REF_PATH_INVALID, REF_FILTER_ERROR)


class RefError(EngineError):
    """A data reference that could not be resolved.

    `convertible` carries what a REF_FORMAT_ERROR could still be read as (e.g. the text
    of a file that claimed to be a PDF), so the default handling "try converting" has
    something to use.
    """

    code = "REF_ERROR"  # the family's name: every instance carries one of ERROR_CODES

    def __init__(self, code: str, message: str, *, convertible: str | None = None) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown reference error code {code!r}")
        super().__init__(message, code=code)
        self.convertible = convertible

    def __repr__(self) -> str:
        return f"RefError({self.code}, {self.message!r})"
