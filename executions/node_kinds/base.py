"""What every node kind gives back: `Performed`, the output and the fields of the run to store."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Performed:
    output: Any
    record: dict = field(default_factory=dict)  # fields of the node run to store
