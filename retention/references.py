"""Why a run must stay: what still needs it.

A run (with its children: one tree) is kept back while any run of the tree

- `running`: has not ended (pending, running, escalated: a person's turn);
- `gate`: waits on a gate for a person's decision (the run `waiting`, or a node run waiting);
- `experiment`: is an experiment's item (its run is what the experiment's scores and
  comparisons read);
- `dataset`: was added to a dataset (the item's metadata names it);
- `evidence`: is named in a derive request's evidence (its trigger's context or decision);
- `rerun`: has re-runs still stored (they copy its node runs and point at them).

`References` reads the named ids once per pass (datasets and derive requests name runs
by `execution_id` in JSON, which no index serves); the rest is asked per chunk of runs."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agents.models import DeriveRequest
from executions.models import Execution, NodeRun
from experiments.models import DatasetItem, ExperimentItem
from quality.derive_requests.selectors import id_strings

REASONS = ("running", "gate", "experiment", "dataset", "evidence", "rerun")
ENDED = (Execution.Status.SUCCESS, Execution.Status.FAILED, Execution.Status.CANCELLED)
EVIDENCE_STRINGS = 10_000  # strings read from one request's evidence at most


class References:
    """The execution ids that datasets and derive requests name, read once."""

    def __init__(self) -> None:
        self.dataset = set(DatasetItem.objects.filter(metadata__has_key="execution_id")
                           .values_list("metadata__execution_id", flat=True))
        self.evidence: set[str] = set()
        for context, evidence in DeriveRequest.objects.values_list("trigger_context", "evidence").iterator():
            self.evidence |= id_strings(context, EVIDENCE_STRINGS) | id_strings(evidence, EVIDENCE_STRINGS)

    def reasons(self, runs: list[dict[str, Any]]) -> dict[int, str]:
        """For a chunk of runs (dicts of pk, execution_id, status, experiment): the pk of
        each one that must stay → why (the first of REASONS that holds)."""
        found: dict[int, str] = {}
        pks = [run["pk"] for run in runs]
        waiting = set(NodeRun.objects.filter(execution_id__in=pks, status=NodeRun.Status.WAITING)
                      .values_list("execution_id", flat=True).distinct())
        items = set(ExperimentItem.objects.filter(execution_id__in=pks).values_list("execution_id", flat=True))
        rerun = set(Execution.objects.filter(rerun_of_id__in=pks).values_list("rerun_of_id", flat=True))
        for run in runs:
            pk = run["pk"]
            if run["status"] == Execution.Status.WAITING or pk in waiting:
                found[pk] = "gate"
            elif run["status"] not in ENDED:
                found[pk] = "running"
            elif run["experiment"] or pk in items:
                found[pk] = "experiment"
            elif run["execution_id"] in self.dataset:
                found[pk] = "dataset"
            elif run["execution_id"] in self.evidence:
                found[pk] = "evidence"
            elif pk in rerun:
                found[pk] = "rerun"
        return found


def tree_reason(reasons: dict[int, str], tree: Iterable[int]) -> str | None:
    """Why a tree stays: the first of REASONS any of its runs has (None: it may go)."""
    held = {reasons[pk] for pk in tree if pk in reasons}
    return next((reason for reason in REASONS if reason in held), None)
