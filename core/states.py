"""Explicit state machines for status fields.

Every status change in the project goes through `StatusField.change`, which refuses
transitions the machine does not allow and claims the row with a conditional
UPDATE ... WHERE status=<current> that must touch exactly one row, so two workers
(or two clicks) can never both make the same move.
"""
from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone

from core.errors import IllegalTransition


class StateMachine:
    def __init__(self, name: str, transitions: dict[str, set[str]]):
        self.name = name
        self.transitions = transitions
        self.states = set(transitions) | {s for targets in transitions.values() for s in targets}

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


def change_status(instance: models.Model, machine: StateMachine, new: str, **fields: Any) -> None:
    """Move `instance` to `new`, claiming the row; extra `fields` are written in the same UPDATE."""
    current = instance.status
    machine.check(current, new)
    if "updated_at" in {f.name for f in instance._meta.fields}:
        fields.setdefault("updated_at", timezone.now())
    touched = type(instance).objects.filter(pk=instance.pk, status=current).update(status=new, **fields)
    if touched != 1:
        raise IllegalTransition(
            f"{machine.name}: {instance} is no longer '{current}' (changed by someone else)",
            code="CONFLICT",
        )
    instance.status = new
    for name, value in fields.items():
        setattr(instance, name, value)
