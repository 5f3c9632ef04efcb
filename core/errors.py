"""The errors a request can cause, each with a stable code.

They extend the one family rooted in `engine.errors.EngineError` (code, message,
details); the API and the pages turn these into responses in one place.
"""
from __future__ import annotations

from typing import Any

from engine.errors import EngineError

ECHO_LIMIT = 60  # characters of a value someone sent that a message quotes back


def echo(text: str) -> str:
    """What a message quotes of a value someone sent: all of it when short, else its first
    ECHO_LIMIT characters and its length, so that an answer never grows with the request."""
    if len(text) <= ECHO_LIMIT:
        return text
    return f"{text[:ECHO_LIMIT]}… ({len(text)} characters)"


class SwitchyardError(EngineError):
    """An error the API's one handler answers with its code and an HTTP status; the
    engine's own errors are not, so one that escapes a request stays a server error."""

    code = "SWITCHYARD_ERROR"


class DocumentError(SwitchyardError):
    """A document (JSON) has the wrong shape or refers to something that does not exist."""

    code = "INVALID_DOCUMENT"

    def __init__(self, problem: str, *, where: str = "", details: Any = None):
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}" if where else problem, details=details)

    @classmethod
    def at_fields(cls, problems: list[tuple[str, str]]) -> DocumentError:
        """The refusal of a value that breaks a schema at these fields, each (where, what): at
        the first, with every one in its details as `{where, message}`."""
        at, message = problems[0]
        return cls(message, where=at, details=[{"where": field, "message": text} for field, text in problems])

    def located(self, prefix: str) -> DocumentError:
        """The same error with its location prefixed, e.g. by the document's place in a list."""
        where = f"{prefix}.{self.where}" if self.where else prefix
        return DocumentError(self.problem, where=where, details=self.details)


class NotFound(SwitchyardError):
    code = "NOT_FOUND"


class IllegalTransition(SwitchyardError):
    code = "ILLEGAL_TRANSITION"


class WorkflowInvalid(SwitchyardError):
    """Validation found problems; `details` lists each with the node or transition it concerns."""

    code = "WORKFLOW_INVALID"

    def __init__(self, problems: list[dict[str, Any]], *, workflow_id: str = ""):
        self.problems = problems
        lines = "; ".join(f"{p['where']}: {p['message']}" for p in problems)
        prefix = f"workflow '{workflow_id}' is invalid" if workflow_id else "workflow is invalid"
        super().__init__(f"{prefix}: {lines}", details=problems)


class DetailsRemoved(SwitchyardError):
    """An operation that reads a run's node runs (a re-run, a comparison, a node tried from
    it) asked of a run whose details retention removed, or is deleting: refused, naming the
    run, when and why, rather than answered from the few node runs that are left (409)."""

    code = "DETAILS_REMOVED"

    def __init__(self, execution_id: str, *, operation: str, removed_at: str, why: str):
        super().__init__(f"execution '{execution_id}' cannot be {operation}: {why} on {removed_at}",
                         details={"execution_id": execution_id, "removed_at": removed_at, "why": why})
