"""What started a run, when something other than a person or the API did: a schedule's fire,
say. The runs list and a run's page show it beside the run.

The apps that start runs this way sit above executions and keep the link themselves (a
schedule's fire row points at its run); each registers a reader here from its `ready()`,
the way executions hands agents its run readers, and executions never imports them.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class RunOrigin:
    kind: str  # e.g. "schedule"
    label: str  # e.g. the schedule's name
    url: str  # its page; "" when it is gone
    detail: str = ""  # e.g. the fire time it ran for


# execution pks → the origin of those of them it started (one query, whatever their number)
OriginReader = Callable[[list[int]], dict[int, RunOrigin]]

_readers: list[OriginReader] = []


def register_origin_reader(reader: OriginReader) -> None:
    if reader not in _readers:
        _readers.append(reader)


def run_origins(execution_pks: Iterable[int]) -> dict[int, RunOrigin]:
    """The origin of each of these runs that some registered app started."""
    pks = list(execution_pks)
    found: dict[int, RunOrigin] = {}
    if not pks:
        return found
    for reader in _readers:
        found.update(reader(pks))
    return found
