"""What the workflow's versions list shows of each version's experiments.

Experiments sit above workflows (an experiment pins a workflow version), so this package
cannot import them to show a version's latest experiment scores. Experiments register the
function that reads them (`register_version_scores`, from `ExperimentsConfig.ready()`),
as demo registers answer verifiers with quality/evaluations.py; without one, the list
shows no scores. Releasing a version (which checks the workflow's `release_requirement`
against those experiments) is experiments' own service (experiments/releases.py).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from workflows.models import Workflow, WorkflowVersion

# (workflow, versions) → version number → {"experiment_id", "status", "dataset", "scores": {scorer: mean}}
VersionScores = Callable[[Workflow, Sequence[WorkflowVersion]], dict[int, dict[str, Any]]]
_readers: list[VersionScores] = []


def register_version_scores(reader: VersionScores) -> None:
    """Register the reader of each version's latest experiment (the last registered wins)."""
    _readers[:] = [reader]


def version_scores(workflow: Workflow, versions: Sequence[WorkflowVersion]) -> dict[int, dict[str, Any]]:
    """Each version's latest experiment and its scorers' means; {} when no reader is registered."""
    return _readers[0](workflow, versions) if _readers else {}
