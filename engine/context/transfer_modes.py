"""Choosing how each input is passed (data-transfer-protocol §5).

`choose_mode` walks the §5.4 decision tree with the tables of §5.1–§5.3 and returns the
mode with the reason, which goes into the record.
"""
from __future__ import annotations

from dataclasses import dataclass

FULL, SUMMARY, REFERENCE = "full", "summary", "reference"
SMALL, LARGE, HUGE = 2_000, 10_000, 50_000

# §5.2: what the downstream task needs, by the agent's role.
ROLE_NEEDS = {
    "Scholar": (FULL, "Scholar analyses literature and needs the original detail"),
    "Code": (FULL, "Code analysis needs the code whole"),
    "Validator": (SUMMARY, "Validator looks at conclusions and evidence"),
    "Knowledge_Vault": (REFERENCE, "Knowledge_Vault fetches the parts it integrates on demand"),
    "Strategic_Critic": (SUMMARY, "Strategic_Critic judges overall quality"),
    "Orchestrator": (SUMMARY, "Orchestrator follows task status"),
}
# §5.3: data types that are never summarised, and the other rows of the table.
INCOMPRESSIBLE = {"code", "formula"}
DATA_TYPE_MODES = {
    "text": SUMMARY,
    "table": SUMMARY,
    "chart": SUMMARY,
    "metadata": FULL,
    "relations": REFERENCE,
}


@dataclass(frozen=True)
class Choice:
    mode: str
    reason: str
    batched: bool = False  # > 50K tokens: a reference fetched in batches


def choose_mode(*, tokens: int, data_type: str, role: str = "", explicit: str | None = None,
                node_mode: str | None = None) -> Choice:
    """§5.4, with explicit settings first:

    1. a mode set on the reference wins;
    2. under 2K tokens the data is passed whole;
    3. code and formulas are never summarised: whole up to 50K, a reference above;
    4. the node's `transfer_config.mode` applies to everything else;
    5. over 50K tokens: a reference fetched in batches;
    6. between 2K and 50K the downstream task decides (§5.2), then the data type (§5.3),
       then the size (§5.1: summary up to 10K, reference with a preview above).
    """
    if explicit and explicit != "auto":
        return Choice(explicit, "set on the reference")
    if tokens < SMALL:
        return Choice(FULL, f"{tokens} tokens < 2K: passed whole (§5.1)")
    if data_type in INCOMPRESSIBLE:
        if tokens <= HUGE:
            return Choice(FULL, f"{data_type} is never summarised (§5.3)")
        return Choice(REFERENCE, f"{data_type} is never summarised and {tokens} tokens > 50K: batched reference",
                      batched=True)
    if node_mode and node_mode != "auto":
        return Choice(node_mode, "transfer_config.mode of the node")
    if tokens > HUGE:
        return Choice(REFERENCE, f"{tokens} tokens > 50K: batched reference (§5.1)", batched=True)
    if role in ROLE_NEEDS:
        mode, why = ROLE_NEEDS[role]
        return Choice(mode, f"{why} (§5.2)")
    if data_type in DATA_TYPE_MODES:
        return Choice(DATA_TYPE_MODES[data_type], f"{data_type} data is passed as {DATA_TYPE_MODES[data_type]} (§5.3)")
    if tokens <= LARGE:
        return Choice(SUMMARY, f"{tokens} tokens in 2K–10K: summary (§5.1)")
    return Choice(REFERENCE, f"{tokens} tokens in 10K–50K: reference with a preview (§5.1)")
