"""What an experiment knows of one dataset item once its run is over: the plain records the
Django side fills from an execution and its node runs, and that aggregates and comparisons read.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.experiments.scorers import NotScored, Score

SUCCESS = "success"
FAILED = "failed"
CANCELLED = "cancelled"
STATUSES = (SUCCESS, FAILED, CANCELLED)


@dataclass(frozen=True)
class NodeRecord:
    """One node run of an item's run: its tokens (in + out), its context record (the
    data-transfer-protocol §7.2 `context_management` object, NodeRun.context_record) and its
    resolution failures (NodeRun.resolution_failures, each with an `error_code`)."""

    node_id: str
    tokens: int = 0
    context_record: Mapping[str, Any] | None = None
    resolution_failures: Sequence[Mapping[str, Any]] = ()

    def actions(self) -> list[Mapping[str, Any]]:
        resolution = (self.context_record or {}).get("resolution")
        actions = resolution.get("actions") if isinstance(resolution, Mapping) else None
        return [action for action in actions or [] if isinstance(action, Mapping)]

    @property
    def trimmed(self) -> bool:
        """Its inputs together exceeded the agent's limit and were trimmed by priority (§6.3)."""
        resolution = (self.context_record or {}).get("resolution")
        strategy = resolution.get("strategy") if isinstance(resolution, Mapping) else None
        return strategy == "priority_based_trimming" or any(a.get("stage") == "trimming" for a in self.actions())

    @property
    def summarised(self) -> bool:
        """An input was summarised: a summary transfer (§4.2) or a summary made while trimming."""
        return any(action.get("action") == "summarize" for action in self.actions())


@dataclass(frozen=True)
class ItemRecord:
    """One item of one experiment. `scores` by scorer name; `cost` in the caller's unit (the
    house counts 10⁻¹² USD); `latency_seconds` None when the run never started; `metadata`
    the dataset item's, which comparison filters read."""

    item_id: str
    status: str
    output: Any = None
    error_code: str = ""
    scores: Mapping[str, Score | NotScored] = field(default_factory=dict)
    tokens: int = 0
    cost: float = 0.0
    latency_seconds: float | None = None
    nodes: Sequence[NodeRecord] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"item {self.item_id!r}: status is one of {', '.join(STATUSES)}, not {self.status!r}")

    @property
    def has_output(self) -> bool:
        return self.status == SUCCESS

    def value(self, scorer: str) -> float | None:
        """The item's score of `scorer`, None when it was not scored."""
        found = self.scores.get(scorer)
        return found.value if isinstance(found, Score) else None
