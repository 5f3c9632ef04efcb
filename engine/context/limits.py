"""Context limits per agent (data-transfer-protocol §6.1)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

# §6.1: the data area of each role (tokens), within a 100K input limit.
ROLE_DATA_AREAS = {
    "Orchestrator": 85_000,
    "Scholar": 80_000,
    "Code": 75_000,
    "Validator": 70_000,
    "Knowledge_Vault": 85_000,
    "Strategic_Critic": 60_000,
}


@dataclass(frozen=True)
class ContextLimits:
    max_input_tokens: int = 100_000
    max_output_tokens: int = 16_000
    reserved_for_system_prompt: int = 5_000
    reserved_for_instructions: int = 3_000
    safety_margin: float = 0.9
    data_area: int | None = None  # None: the role's area from §6.1, if the role has one
    role: str = ""

    def __post_init__(self) -> None:
        for name in ("max_input_tokens", "max_output_tokens", "reserved_for_system_prompt", "reserved_for_instructions"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"context_limits.{name} must be a whole number ≥ 0, not {value!r}")
        if not isinstance(self.safety_margin, (int, float)) or not 0 < self.safety_margin <= 1:
            raise ValueError(f"context_limits.safety_margin must be in (0, 1], not {self.safety_margin!r}")
        if self.data_area is not None and (not isinstance(self.data_area, int) or self.data_area < 0):
            raise ValueError(f"context_limits.data_area must be a whole number ≥ 0, not {self.data_area!r}")

    @classmethod
    def from_dict(cls, values: dict[str, Any], *, role: str = "") -> ContextLimits:
        known = {f.name for f in fields(cls)}
        unknown = set(values) - known - {"available_for_data", "effective_data_limit", "data_limit"}
        if unknown:
            raise ValueError(f"context_limits: unknown field(s) {', '.join(sorted(unknown))}")
        return cls(**{key: value for key, value in values.items() if key in known and key != "role"}, role=role)

    @property
    def available_for_data(self) -> int:
        return max(0, self.max_input_tokens - self.reserved_for_system_prompt - self.reserved_for_instructions)

    @property
    def effective_data_limit(self) -> int:
        """available_for_data × safety_margin: 100000 − 5000 − 3000 = 92000 → 82800."""
        return int(round(self.available_for_data * self.safety_margin))

    @property
    def data_limit(self) -> int:
        """What the context builder may fill: the effective limit, capped by the data area."""
        area = self.data_area if self.data_area is not None else ROLE_DATA_AREAS.get(self.role)
        return min(self.effective_data_limit, area) if area is not None else self.effective_data_limit

    def as_dict(self) -> dict[str, Any]:
        values = asdict(self)
        values.pop("role")
        values["data_area"] = self.data_area if self.data_area is not None else ROLE_DATA_AREAS.get(self.role)
        values.update(available_for_data=self.available_for_data, effective_data_limit=self.effective_data_limit,
                      data_limit=self.data_limit)
        return values
