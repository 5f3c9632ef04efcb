"""The model catalogue: for a backend and model, its context window, maximum output, tokenizer
encoding and prices per million input, output and cached input tokens, each with where it
came from.

Prices and windows come from genai-prices (a maintained snapshot of the providers' public
prices, shipped in the package and read offline), looked up by the model's name; the
operators' file (`SWITCHYARD_BACKENDS_FILE`, `[models."<id>"]`) overrides or adds any field.
The builtin backend calls no model and costs nothing. A model found nowhere has no prices:
its calls are recorded with their tokens and no cost, never a cost of 0 that was not true.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from functools import lru_cache
from importlib.metadata import version

from django.conf import settings

from engine.tokens import DEFAULT_ENCODING

MILLION = Decimal(1_000_000)
PRICES = ("input_price", "output_price", "cached_input_price")
FIELDS = ("context_window", "max_output", "encoding", *PRICES)
BUILTIN = "builtin: calls no model and costs nothing"
OPERATOR = "the operators' file"


@dataclass(frozen=True)
class ModelEntry:
    backend: str
    model: str
    context_window: int | None = None
    max_output: int | None = None
    encoding: str | None = None
    input_price: Decimal | None = None  # USD per million tokens
    output_price: Decimal | None = None
    cached_input_price: Decimal | None = None
    sources: dict = field(default_factory=dict, compare=False)  # field → where its value came from

    @property
    def priced(self) -> bool:
        return self.input_price is not None and self.output_price is not None

    def cost(self, tokens_in: int, tokens_out: int, cached_in: int = 0) -> Decimal | None:
        """What a call with these tokens costs, exactly (None: this model has no prices).
        Cached input tokens are part of `tokens_in`, priced at the cached price where there is one."""
        input_price, output_price = self.input_price, self.output_price
        if input_price is None or output_price is None:  # not priced
            return None
        cached_in = min(cached_in, tokens_in)
        cached_price = input_price if self.cached_input_price is None else self.cached_input_price
        return ((tokens_in - cached_in) * input_price + cached_in * cached_price
                + tokens_out * output_price) / MILLION

    def as_dict(self) -> dict:
        return {"backend": self.backend, "model": self.model,
                **{name: (str(value) if isinstance(value, Decimal) else value)
                   for name in FIELDS if (value := getattr(self, name)) is not None},
                "sources": dict(self.sources)}


def model_entry(backend: str, model: str) -> ModelEntry:
    """The catalogue's entry for `model` on the backend named `backend` (a command backend's or
    an OpenAI-compatible one's; the builtin's model is no model)."""
    kind = (settings.LLM_BACKENDS.get(backend) or {}).get("kind")
    if kind == "builtin":
        return ModelEntry(backend, model or "", input_price=Decimal(0), output_price=Decimal(0),
                          cached_input_price=Decimal(0), sources={name: BUILTIN for name in PRICES})
    model = model or (settings.LLM_BACKENDS.get(backend) or {}).get("model", "")
    found = dict(_published(model)) if model else {}
    overrides = settings.MODEL_OVERRIDES.get(model, {}) if model else {}
    values = {**{name: value for name, (value, _) in found.items()}, **overrides}
    sources = {**{name: source for name, (_, source) in found.items()}, **{name: OPERATOR for name in overrides}}
    return ModelEntry(backend, model, **{name: values[name] for name in FIELDS if name in values}, sources=sources)


def token_encoding(backend: str, model: str, stated: str = "") -> str:
    """The encoding `model`'s tokens are counted in on the backend named `backend`: the one its
    catalogue entry names; for a model it names none for (the builtin, a model the catalogue
    does not know), `stated` (an agent's `runtime.encoding`), else cl100k_base. The name is
    not checked here: counting in one Switchyard cannot count is refused (engine.tokens)."""
    return model_entry(backend, model).encoding or stated or DEFAULT_ENCODING


@lru_cache(maxsize=512)
def _published(model: str) -> tuple:
    """(field, (value, source)) pairs published for `model`: its encoding from tiktoken's model
    table (which knows fine-tuned and dated names too), the rest from genai-prices; () when
    neither knows it."""
    from genai_prices import data_snapshot

    encoding = _encoding(model)
    tokenizer = (("encoding", (encoding, "tiktoken's model table")),) if encoding else ()
    try:
        provider, info = data_snapshot.get_snapshot().find_provider_model(model, None, None, None)
    except LookupError:
        return tokenizer
    source = f"genai-prices {version('genai-prices')} ({provider.id}: {info.id})"
    prices = info.get_prices(datetime.now(UTC))
    found = {"context_window": info.context_window,
             "input_price": _flat(prices, "input_mtok"), "output_price": _flat(prices, "output_mtok"),
             "cached_input_price": _flat(prices, "cache_read_mtok")}
    return tuple((name, (value, source)) for name, value in found.items() if value is not None) + tokenizer


def _flat(prices, name: str) -> Decimal | None:
    """A price that is one number (tiered prices, which depend on the call's size, are left
    out rather than guessed: the operators' file can give one)."""
    value = getattr(prices, name, None)
    return value if isinstance(value, Decimal) else None


def _encoding(model: str) -> str | None:
    import tiktoken

    try:
        return tiktoken.encoding_name_for_model(model)
    except KeyError:
        return None
