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
from typing import Callable, Iterator

from agents.backends.base import BackendError
from agents.catalogue import model_entry, token_encoding
from engine.tokens import UnknownEncoding, check_encoding

UNITS = Decimal(10) ** 12  # cost units per USD


@dataclass(frozen=True)
class Call:
    purpose: str  # node | batch 2/3 | summary | compression | judge | tot <role>
    backend: str
    model: str
    tokens_in: int
    tokens_out: int
    cached_in: int
    usage: str  # reported (by the server) | counted (here: the server reported none) | builtin | unknown
    cost: int | None  # units of 10⁻¹² USD; None: the model has no prices in the catalogue
    encoding: str | None = None  # what tokens counted here were counted in; None: the server reported them

    def as_dict(self) -> dict:
        return {"purpose": self.purpose, "backend": self.backend, "model": self.model, "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out, "cached_in": self.cached_in, "usage": self.usage,
                "encoding": self.encoding, "cost": usd(self.cost)}


class BudgetExceeded(BackendError):
    """A call that could cross a cost limit, refused before it was made. Not retryable: the
    same call would cost as much again. `details` has the figures (USD)."""

    code = "BUDGET_EXCEEDED"

    def __init__(self, message: str, *, details: dict):
        super().__init__(message, code=self.code, retryable=False, details=details)


@dataclass
class Budget:
    """The cost limits a meter's calls are held to, in units: `node` for its own calls, and
    the run's (`run`), which `reserve(units)` claims from atomically (False: the run's limit
    would be crossed), so that parallel nodes never spend past it together."""

    node: int | None = None
    run: int | None = None
    reserve: Callable[[int], bool] | None = None
    spent: Callable[[], int] | None = None  # what the run has spent, for the message


class Meter:
    def __init__(self, budget: Budget | None = None) -> None:
        self.calls: list[Call] = []
        self.budget = budget
        self.reserved = 0  # units claimed from the run's limit by this meter's calls

    def check(self, backend: str, model: str, tokens_in: int, max_tokens: int | None) -> None:
        """Refuse a call that could cross a limit: its input and the most it may write, priced."""
        budget = self.budget
        if budget is None or (budget.node is None and budget.run is None):
            return
        entry = model_entry(backend, model)
        if not entry.priced:
            raise BudgetExceeded(f"model '{model}' on '{backend}' has no prices in the catalogue, so a call to it "
                                 "could cost anything: a run with a cost limit does not make it",
                                 details={"backend": backend, "model": model})
        most = max_tokens or entry.max_output or entry.context_window or 0
        estimate = units(entry.cost(tokens_in, most))
        figures = {"backend": backend, "model": model, "tokens_in": tokens_in, "max_tokens": most,
                   "estimate": usd(estimate), "node_spent": usd(self.cost)}
        if budget.node is not None and self.cost + estimate > budget.node:
            raise BudgetExceeded(f"the next call (up to ${usd(estimate)}) would take the node past its max_node_cost "
                                 f"${usd(budget.node)} (spent ${usd(self.cost)})",
                                 details={**figures, "limit": "max_node_cost", "max_node_cost": usd(budget.node)})
        if budget.run is not None:
            if not budget.reserve(estimate):
                spent = budget.spent() if budget.spent else 0
                raise BudgetExceeded(f"the next call (up to ${usd(estimate)}) would take the run past its max_cost "
                                     f"${usd(budget.run)} (spent ${usd(spent)})",
                                     details={**figures, "limit": "max_cost", "max_cost": usd(budget.run),
                                              "run_spent": usd(spent)})
            self.reserved += estimate

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
def metered(budget: Budget | None = None) -> Iterator[Meter]:
    """Record the model calls made inside (in this thread or task) on the meter yielded, and
    hold them to `budget`."""
    meter = Meter(budget)
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


def counting_encoding(backend: str, model: str, stated: str = "") -> str:
    """The encoding a call to `model` on `backend` is counted in, before it is made and where
    the server reports no usage: the model's, as the catalogue names it (else `stated`, the
    agent's). One Switchyard cannot count fails the call (not retryable), never counted in
    another encoding."""
    try:
        return check_encoding(token_encoding(backend, model, stated))
    except UnknownEncoding as error:
        raise BackendError(f"model '{model}' on '{backend}': {error}", code=error.code, retryable=False) from None


def check_call(*, backend: str, model: str, tokens_in: int, max_tokens: int | None) -> None:
    """Before a call: raise BudgetExceeded if it could cross a limit of the open meter."""
    meter = _meter.get()
    if meter is not None:
        meter.check(backend, model, tokens_in, max_tokens)


def record_call(*, backend: str, model: str, tokens_in: int, tokens_out: int, cached_in: int = 0,
                usage: str = "reported", encoding: str | None = None) -> Call:
    """A completed call, priced from the catalogue, on the open meter (if any). A call whose
    usage is `unknown` (the server answered something unreadable, and may have billed it)
    has no cost: the run's cost then says it is incomplete. `encoding`: what its tokens were
    counted in, when they were counted here."""
    cost = None if usage == "unknown" else model_entry(backend, model).cost(tokens_in, tokens_out, cached_in)
    call = Call(_purpose.get(), backend, model, tokens_in, tokens_out, cached_in, usage,
                None if cost is None else units(cost), None if usage == "reported" else encoding)
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
