"""What agents' pages show of runs: the runs an agent took part in, and the evaluations of
it and of those runs.

Runs and evaluations are executions' rows, and executions is built on agents (a node run
points at its agent), so agents never imports it: executions hands over its readers from
`ExecutionsConfig.ready()` (see executions/agent_run_readers.py), the way each app tells core's
document registry its kinds.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from agents.models import Agent

# (agent, limit) → {"rows": the newest `limit` rows, "total": how many there are}
Window = Callable[[Agent, int], dict[str, Any]]


@dataclass(frozen=True)
class RunReaders:
    agent_executions: Window    # the runs the agent ran a node of
    agent_evaluations: Window   # evaluations of the agent, and of those runs


_registered: RunReaders | None = None


def register_run_readers(records: RunReaders) -> None:
    global _registered
    _registered = records


def run_readers() -> RunReaders:
    if _registered is None:
        raise ImproperlyConfigured("agents' pages show runs, which the executions app registers: is it installed?")
    return _registered
