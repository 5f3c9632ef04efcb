"""What a piece of data looks like in a context window, and how important it is.

Every value is passed to a model as text: strings as they are, anything else as JSON.
Token counts are always counts of that text.
"""
from __future__ import annotations

import json
from typing import Any

# data-transfer-protocol §6.3: default priority by data type (1 critical … 4 optional).
# The seed's "完整引用" row (full citations) covers both a list of them and an atom of the
# type `citation` (knowledge.models.KnowledgeAtom names it in the singular).
DEFAULT_PRIORITIES = {
    "instructions": 1,
    "system_prompt": 1,
    "claim": 1,
    "evidence": 2,
    "methodology": 2,
    "background": 3,
    "metadata": 3,
    "citations": 4,
    "citation": 4,
    "raw_text": 4,
}
# A reference whose data type the table does not name is "important".
FALLBACK_PRIORITY = 2
PRIORITY_NAMES = {1: "critical", 2: "important", 3: "supplementary", 4: "optional"}


def render(value: Any) -> str:
    """The text a value is passed as."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def element_priority(element: Any) -> int | None:
    """The priority an element of a list carries itself: its own `priority` (1–4), or that
    of its `atom_type` / `data_type` per §6.3; None when it says nothing."""
    if not isinstance(element, dict):
        return None
    own = element.get("priority")
    if isinstance(own, int) and not isinstance(own, bool) and 1 <= own <= 4:
        return own
    for key in ("atom_type", "data_type"):
        kind = element.get(key)
        if isinstance(kind, str) and kind in DEFAULT_PRIORITIES:
            return DEFAULT_PRIORITIES[kind]
    return None
