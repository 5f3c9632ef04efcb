"""Every model call, metered: which backend and model served it, its tokens as the server
reported them (or as counted here when it reported none, marked so) and what it cost.

Whoever makes calls on someone's behalf opens a meter (`metered`): a worker around one node
run, the evaluation around the judge's call. Each backend reports each call it completes to
the open meter (`record_call`); `calling` names what the calls that follow are for (a
summary, a compression, a Tree-of-Thoughts role …). With no meter open, nothing is recorded.

Costs are kept as whole units of 10⁻¹² USD (`UNITS`), so that sums are exact on every
database; prices are dollars per million tokens.

A meter held to a budget bounds each call before it is made (`Meter.check`: its input,
counted here with a margin, and the most it may write, priced) and claims that bound from
the run's limit; once the call is made, the usage the server reported replaces the bound
(`Meter.record`). A call whose cost took the run (or the node run) past its limit is
refused after the fact: BudgetExceeded with `crossed`, and so is every call after it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from decimal import Decimal

from agents.backends.base import BackendError
from agents.catalogue import model_entry, token_encoding
from core.cancellation import check_cancelled
from engine.tokens import UnknownEncoding, check_encoding

UNITS = Decimal(10) ** 12  # cost units per USD

# A call's input is bounded at what is counted here, a quarter more, and 32 tokens: a server
# counts in its own encoding (tokenizers differ by a fifth or more on mixed languages) and
# adds its chat template's tokens (a few per message). A server that counts more still is
# caught by what it reports (Meter.record).
INPUT_MARGIN_PERCENT = 25
FRAMING_TOKENS = 32


def input_bound(counted: int) -> int:
    """The most input tokens a server is taken to count for `counted` tokens counted here."""
    return counted + -(-counted * INPUT_MARGIN_PERCENT // 100) + FRAMING_TOKENS


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
    the run's (`run`), whose keeper claims the bound of a call from it atomically
    (`reserve(units)`; False: the run's limit would be crossed), so that parallel nodes never
    claim past it together, then settles the call (`settle(cost, bound)`: its cost is spent,
    its bound no longer claimed). `spent()` and `settle` answer what the run has spent and
    what its calls in flight claim, (spent, claimed)."""

    node: int | None = None
    run: int | None = None
    reserve: Callable[[int], bool] | None = None
    settle: Callable[[int, int], tuple[int, int]] | None = None
    spent: Callable[[], tuple[int, int]] | None = None


class Meter:
    def __init__(self, budget: Budget | None = None) -> None:
        self.calls: list[Call] = []
        self.budget = budget
        self.reserved = 0  # units claimed from the run's limit by this meter's calls, and not settled
        self.settled = 0  # units of this meter's calls' cost spent on the run's record as they were made
        self.crossed: BudgetExceeded | None = None  # the call that took the run or the node past its limit
        self._checked: tuple[int, int] | None = None  # (bound, tokens counted) of the call checked last

    def check(self, backend: str, model: str, tokens_in: int, max_tokens: int | None) -> None:
        """Refuse a call that could cross a limit: its input (with the margin, `input_bound`)
        and the most it may write, priced; and any call once one has crossed a limit."""
        self._checked = None  # a call checked before and never recorded (it failed) keeps its claim
        if self.crossed is not None:
            raise BudgetExceeded(str(self.crossed), details=self.crossed.details)
        budget = self.budget
        if budget is None or (budget.node is None and budget.run is None):
            return
        entry = model_entry(backend, model)
        if not entry.priced:
            raise BudgetExceeded(f"model '{model}' on '{backend}' has no prices in the catalogue, so a call to it "
                                 "could cost anything: a run with a cost limit does not make it",
                                 details={"backend": backend, "model": model})
        most = max_tokens or entry.max_output or entry.context_window or 0
        bounded = input_bound(tokens_in)
        cost = entry.cost(bounded, most)
        assert cost is not None  # priced: checked above
        estimate = units(cost)
        figures = {"backend": backend, "model": model, "tokens_in": tokens_in, "tokens_in_bound": bounded,
                   "max_tokens": most, "estimate": usd(estimate), "node_spent": usd(self.cost)}
        if budget.node is not None and self.cost + estimate > budget.node:
            raise BudgetExceeded(f"the next call (up to ${usd(estimate)}) would take the node past its max_node_cost "
                                 f"${usd(budget.node)} (spent ${usd(self.cost)})",
                                 details={**figures, "limit": "max_node_cost", "max_node_cost": usd(budget.node)})
        if budget.run is not None:
            assert budget.reserve is not None, "a run's limit comes with the keeper that claims from it"
            if not budget.reserve(estimate):
                spent, claimed = budget.spent() if budget.spent else (0, 0)
                also = f", ${usd(claimed)} more claimed by calls in flight" if claimed else ""
                raise BudgetExceeded(f"the next call (up to ${usd(estimate)}) would take the run past its max_cost "
                                     f"${usd(budget.run)} (spent ${usd(spent)}{also})",
                                     details={**figures, "limit": "max_cost", "max_cost": usd(budget.run),
                                              "run_spent": usd(spent), "run_claimed": usd(claimed)})
            self.reserved += estimate
        self._checked = (estimate, tokens_in)

    def record(self, call: Call) -> None:
        """A call made: on the meter; held to a budget, its cost (as the server reported it)
        replaces its bound on the run's record, and a cost that took the run or the node past
        its limit raises BudgetExceeded (`crossed`), as does every call checked after it."""
        self.calls.append(call)
        checked, self._checked = self._checked, None
        budget = self.budget
        if budget is None or call.cost is None:  # a call of unknown cost keeps its bound claimed
            return
        bound, counted = checked or (0, None)
        crossed = None
        if budget.settle is not None and (call.cost or bound):
            spent, claimed = budget.settle(call.cost, bound)
            self.reserved -= bound
            self.settled += call.cost
            if budget.run is not None and spent > budget.run:
                crossed = ("max_cost", "the run", budget.run, spent, {"run_spent": usd(spent),
                                                                       "run_claimed": usd(claimed)})
        if crossed is None and budget.node is not None and self.cost > budget.node:
            crossed = ("max_node_cost", "the node run", budget.node, self.cost, {})
        if crossed is not None and self.crossed is None:
            limit, whose, most, spent, figures = crossed
            counted_text = "" if counted is None else f", {counted} counted here before the call"
            self.crossed = BudgetExceeded(
                f"{whose} has spent ${usd(spent)}, past its {limit} ${usd(most)}: its last call cost ${usd(call.cost)} "
                f"against ${usd(bound)} claimed for it ({call.tokens_in} tokens in, {call.usage}{counted_text}); "
                "no call is made after it",
                details={"limit": limit, limit: usd(most), "node_spent": usd(self.cost), **figures,
                         "crossed": True, "backend": call.backend, "model": call.model, "cost": usd(call.cost),
                         "estimate": usd(bound), "tokens_in": call.tokens_in, "tokens_out": call.tokens_out,
                         "tokens_counted": counted, "usage": call.usage})
        if self.crossed is not None:
            raise BudgetExceeded(str(self.crossed), details=self.crossed.details)

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
    """Before a call: raise Cancelled if the node run it is for was cancelled (no call is
    started for it then), and BudgetExceeded if it could cross a limit of the open meter."""
    check_cancelled()
    meter = _meter.get()
    if meter is not None:
        meter.check(backend, model, tokens_in, max_tokens)


def record_call(*, backend: str, model: str, tokens_in: int, tokens_out: int, cached_in: int = 0,
                usage: str = "reported", encoding: str | None = None) -> Call:
    """A completed call, priced from the catalogue, on the open meter (if any). A call whose
    usage is `unknown` (the server answered something unreadable, and may have billed it)
    has no cost: the run's cost then says it is incomplete. `encoding`: what its tokens were
    counted in, when they were counted here. Raises BudgetExceeded when the call's cost took
    the meter's run or node run past its limit (Meter.record)."""
    cost = None if usage == "unknown" else model_entry(backend, model).cost(tokens_in, tokens_out, cached_in)
    call = Call(_purpose.get(), backend, model, tokens_in, tokens_out, cached_in, usage,
                None if cost is None else units(cost), None if usage == "reported" else encoding)
    meter = _meter.get()
    if meter is not None:
        meter.record(call)
    return call


def units(cost: Decimal) -> int:
    """A cost in whole units of 10⁻¹² USD (a price with more than six decimals rounds here)."""
    return int((cost * UNITS).to_integral_value())


def usd(cost_units: int | None) -> str | None:
    """A cost in units as an exact decimal string of dollars ("0.000048150000"); None stays None."""
    return None if cost_units is None else f"{Decimal(cost_units) / UNITS:.12f}"
