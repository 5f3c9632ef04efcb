"""The operators' file of named backends, model aliases and catalogue overrides (TOML), read
once at start and validated whole: a mistake stops the process with the file, the key and
what is wrong, never a run later. Secrets are never in the file: it names the environment
variable that holds each key (`api_key_env`).

    [backends.hosted]                 # any number, each with a name agents use
    kind = "openai_compatible"        # openai_compatible | command | builtin
    base_url = "https://api.example.com/v1"
    api_key_env = "HOSTED_API_KEY"
    model = "gpt-4o-mini"             # when an agent names no model
    timeout_seconds = 60
    max_retries = 3
    stream = false                    # true: the reply as server-sent events

    [backends.local]
    kind = "openai_compatible"
    base_url = "http://127.0.0.1:11434/v1"

    [backends.cli]
    kind = "command"
    argv = ["llm", "-m", "gpt-4o"]
    model = "gpt-4o"                  # what it runs, so that its calls are priced

    [aliases.flash]                   # a compress_model name → a backend and model
    backend = "hosted"
    model = "gpt-4o-mini"

    [models."gpt-4o-mini"]            # the catalogue's entry for a model, overridden or added
    context_window = 128000
    max_output = 16384
    encoding = "o200k_base"
    input_price = "0.15"              # USD per million tokens (text: exact decimals)
    output_price = "0.60"
    cached_input_price = "0.075"

This module is read by the settings, so it imports nothing of Django's.
"""
from __future__ import annotations

import tomllib
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine.errors import EngineError

Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,49}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Backend(_Strict):
    kind: Literal["openai_compatible", "command", "builtin"]
    base_url: str | None = None
    api_key_env: str = ""
    model: str = ""
    timeout_seconds: Annotated[float, Field(gt=0, le=3600)] | None = None
    max_retries: Annotated[int, Field(ge=0, le=10)] | None = None
    stream: bool | None = None
    argv: list[Annotated[str, Field(min_length=1)]] | None = None
    env: list[str] | None = None


class _Alias(_Strict):
    backend: Name
    model: Annotated[str, Field(min_length=1)]


def _price(value: Any) -> Decimal | None:
    if value is None:
        return None
    if isinstance(value, float):  # 0.1 as a float is not 0.1: prices are exact
        raise ValueError("write a price as text (\"0.15\"), so that it is exact")
    try:
        price = Decimal(str(value))
    except InvalidOperation:
        raise ValueError(f"{value!r} is not a number") from None
    if not price.is_finite() or price < 0:
        raise ValueError("a price is a number of dollars per million tokens, 0 or more")
    return price


class _Model(_Strict):
    context_window: Annotated[int, Field(gt=0)] | None = None
    max_output: Annotated[int, Field(gt=0)] | None = None
    encoding: str | None = None
    input_price: Decimal | None = None
    output_price: Decimal | None = None
    cached_input_price: Decimal | None = None

    _prices = field_validator("input_price", "output_price", "cached_input_price", mode="before")(_price)


class _File(_Strict):
    backends: dict[Name, _Backend] = Field(default_factory=dict)
    aliases: dict[Name, _Alias] = Field(default_factory=dict)
    models: dict[Annotated[str, Field(min_length=1)], _Model] = Field(default_factory=dict)


class BackendsFileError(EngineError):
    """The file cannot be used: `str()` names the file, the key and what is wrong."""

    code = "BAD_BACKENDS_FILE"


def read_backends_file(path: str | Path) -> dict[str, Any]:
    """The file's backends (as `LLM_BACKENDS` entries), aliases and model overrides."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise BackendsFileError(f"{path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise BackendsFileError(f"{path}: not TOML: {error}") from None
    try:
        parsed = _File.model_validate(raw)
    except ValidationError as error:
        problems = []
        for problem in error.errors():
            where = ".".join(str(part) for part in problem["loc"])
            message = problem["msg"]
            if problem["type"] == "extra_forbidden" and problem["loc"][-1] in ("api_key", "key", "token", "password"):
                message = "a secret is never written here: name the environment variable that holds it (api_key_env)"
            problems.append(f"{where}: {message}")
        raise BackendsFileError(f"{path}: " + "; ".join(problems)) from None
    backends, problems = {}, []
    for name, backend in parsed.backends.items():
        given = backend.model_fields_set - {"kind"}
        options = KIND_OPTIONS[backend.kind]
        needed = {"openai_compatible": "base_url", "command": "argv"}.get(backend.kind)
        if needed and not getattr(backend, needed):
            problems.append(f"backends.{name}.{needed}: required for a {backend.kind} backend")
        if given - options:
            problems.append(f"backends.{name}: {', '.join(sorted(given - options))} do not apply to a "
                            f"{backend.kind} backend")
        backends[name] = {"kind": backend.kind, **{key: getattr(backend, key) for key in sorted(given & options)}}
    for name, alias in parsed.aliases.items():
        if alias.backend not in backends and alias.backend != "builtin":
            problems.append(f"aliases.{name}.backend: '{alias.backend}' is not a backend of this file "
                            f"(its backends: {', '.join(sorted(backends)) or 'none'})")
    if problems:
        raise BackendsFileError(f"{path}: " + "; ".join(problems))
    return {"backends": backends, "aliases": {name: alias.model_dump() for name, alias in parsed.aliases.items()},
            "models": {name: model.model_dump(exclude_none=True) for name, model in parsed.models.items()}}


KIND_OPTIONS = {
    "openai_compatible": {"base_url", "api_key_env", "model", "timeout_seconds", "max_retries", "stream"},
    "command": {"argv", "timeout_seconds", "env", "model"},
    "builtin": set(),
}
