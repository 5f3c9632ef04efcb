"""The state machines of status fields: which moves each allows, and which rows a move must
also write.

Each model with a status declares its machine as `STATES`; core/status_writes.py, the one
place that changes a status, asks it before every move."""
from __future__ import annotations

from typing import NamedTuple

from core.errors import IllegalTransition


class Guard(NamedTuple):
    """Rows of a machine whose moves into or out of `statuses` must also write the row their
    foreign key `key` points to, in the same statement and before them (the order every
    lock of the two is taken in). A question asked under that row's lock, whether any of
    its rows is still in `statuses` (status_writes.transition_under's `others`), is sure of
    its answer only if every change of that answer writes that row, which it can tell from
    the row's version: an execution's node runs still to end."""

    key: str
    statuses: frozenset[str]


class StateMachine:
    def __init__(self, name: str, transitions: dict[str, set[str]], *, guard: Guard | None = None):
        self.name = name
        self.transitions = transitions
        self.states = set(transitions) | {s for targets in transitions.values() for s in targets}
        self.guard = guard

    def allows(self, current: str, new: str) -> bool:
        return new in self.transitions.get(current, set())

    def check(self, current: str, new: str) -> None:
        if new not in self.states:
            raise IllegalTransition(f"{self.name}: unknown status '{new}'")
        if not self.allows(current, new):
            allowed = ", ".join(sorted(self.transitions.get(current, set()))) or "none (final)"
            raise IllegalTransition(
                f"{self.name}: cannot go from '{current}' to '{new}' (allowed from '{current}': {allowed})"
            )

    def guarded(self, from_statuses: tuple[str, ...], new: str) -> Guard | None:
        """The guard a move from any of `from_statuses` to `new` must write: one that enters
        or leaves its statuses (None: the move keeps every row on its side of them)."""
        guard = self.guard
        if guard is None or all((current in guard.statuses) == (new in guard.statuses) for current in from_statuses):
            return None
        return guard
