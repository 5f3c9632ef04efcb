"""The evidence a derive request's decision names: an experiment pair, parent vs child.

Experiments sit above quality (an experiment may be scored by quality's evaluation), so this
package cannot import them to find the pair a decision names. Instead experiments register
the one function that does (`register_evidence_reader`, from `ExperimentsConfig.ready()`),
as demo registers answer verifiers with quality/evaluations.py. A decision that names
evidence while no reader is registered is refused rather than stored unchecked.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents.models import DeriveRequest
from core.errors import DocumentError

# (request, experiment id) → the evidence to record: raises DocumentError naming what is wrong.
EvidenceReader = Callable[[DeriveRequest, str], dict[str, Any]]
_reader: list[EvidenceReader] = []


def register_evidence_reader(reader: EvidenceReader) -> None:
    """Register the function that turns an experiment id into a decision's evidence (the last
    registered wins, so a second ready() does not stack them)."""
    _reader[:] = [reader]


def decision_evidence(request: DeriveRequest, experiment_id: Any) -> dict[str, Any]:
    """The evidence to record with the request's decision: the pair whose child experiment is
    `experiment_id`, with each scorer's delta and verdict now."""
    if not isinstance(experiment_id, str) or not experiment_id:
        raise DocumentError("is the id of the request's child experiment", where="evidence")
    if not _reader:
        raise DocumentError("no experiments app is installed to read evidence from", where="evidence")
    return _reader[0](request, experiment_id)
