"""Every model call, metered: which backend and model served it, its tokens as the server
reported them (or as counted here when it reported none, marked so) and what it cost.

Whoever makes calls on someone's behalf opens a meter (`metered`): a worker around one node
run, the evaluation around the judge's call. Each backend reports each call it completes to
the open meter (`record_call`); `calling` names what the calls that follow are for (a
summary, a compression, a Tree-of-Thoughts role …). With no meter open, nothing is recorded.

Costs are kept as whole units of 10⁻¹² USD (`UNITS`), so that sums are exact on every
database; prices are dollars per million tokens.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from decimal import Decimal
from typing import Iterator

from agents.catalogue import model_entry

UNITS = Decimal(10) ** 12  # cost units per USD


@dataclass(frozen=True)
class Call:
    purpose: str  # node | batch 2/3 | summary | compression | judge | tot <role>
    backend: str
    model: str
    tokens_in: int
    tokens_out: int
    cached_in: int
    usage: str  # reported (by the server) | counted (here: the server reported none) | builtin
    cost: int | None  # units of 10⁻¹² USD; None: the model has no prices in the catalogue

    def as_dict(self) -> dict:
        return {"purpose": self.purpose, "backend": self.backend, "model": self.model, "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out, "cached_in": self.cached_in, "usage": self.usage,
                "cost": usd(self.cost)}


class Meter:
    def __init__(self) -> None:
        self.calls: list[Call] = []

    @property
    def cost(self) -> int:
        """The priced calls' cost, in units."""
        return sum(call.cost for call in self.calls if call.cost is not None)

    @property
    def complete(self) -> bool:
        """Whether every call was priced."""
        return all(call.cost is not None for call in self.calls)


_meter: ContextVar[Meter | None] = ContextVar("switchyard_meter", default=None)
_purpose: ContextVar[str] = ContextVar("switchyard_call_purpose", default="node")


@contextmanager
def metered() -> Iterator[Meter]:
    """Record the model calls made inside (in this thread or task) on the meter yielded."""
    meter = Meter()
    token = _meter.set(meter)
    try:
        yield meter
    finally:
        _meter.reset(token)


@contextmanager
def calling(purpose: str) -> Iterator[None]:
    """The calls made inside are for `purpose`."""
    token = _purpose.set(purpose)
    try:
        yield
    finally:
        _purpose.reset(token)


def record_call(*, backend: str, model: str, tokens_in: int, tokens_out: int, cached_in: int = 0,
                usage: str = "reported") -> Call:
    """A completed call, priced from the catalogue, on the open meter (if any)."""
    cost = model_entry(backend, model).cost(tokens_in, tokens_out, cached_in)
    call = Call(_purpose.get(), backend, model, tokens_in, tokens_out, cached_in, usage,
                None if cost is None else units(cost))
    meter = _meter.get()
    if meter is not None:
        meter.calls.append(call)
    return call


def units(cost: Decimal) -> int:
    """A cost in whole units of 10⁻¹² USD (a price with more than six decimals rounds here)."""
    return int((cost * UNITS).to_integral_value())


def usd(cost_units: int | None) -> str | None:
    """A cost in units as an exact decimal string of dollars ("0.000048150000"); None stays None."""
    return None if cost_units is None else f"{Decimal(cost_units) / UNITS:.12f}"
