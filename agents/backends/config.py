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

What is refused, so that nothing the file says is taken as something else later:
- a `base_url` that is not an http:// or https:// URL with a host, or that holds a user, a
  password, a query string or a fragment (core/backend_urls.py says why);
- an `api_key_env` or `env` entry that is not the name of an environment variable;
- an `encoding` the token counter cannot count offline (engine/tokens.py's list);
- a price that is not a finite number from 0 to MAX_PRICE dollars per million tokens;
- a context window or maximum output that is not a whole number from 1 to MAX_TOKENS, or a
  maximum output larger than the context window given beside it;
- a file that is not UTF-8 text, not TOML, or nested past what can be read.

The file's `[tools.NAME]` tables, the MCP servers agents' tools are called on, are checked
by tools/config.py, which says what they hold.

This module is read by the settings, so it imports nothing of Django's.
"""
from __future__ import annotations

import re
import tomllib
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from core.backend_urls import base_url_problem
from engine.errors import EngineError
from engine.tokens import OFFLINE_ENCODINGS
from tools.config import SECRET_KEYS, SECRET_MESSAGE, ServerName, ToolServer, tool_servers

Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,49}$")]
# Bounds far above any model served today (the largest context windows hold about ten
# million tokens, the dearest prices are hundreds of dollars per million tokens) and low
# enough that one call's cost, MAX_TOKENS × MAX_PRICE / 10⁶ dollars, stays an exact whole
# number of the meter's 10⁻¹² dollar units in a 64-bit column.
MAX_TOKENS = 100_000_000
MAX_PRICE = Decimal(10_000)
Tokens = Annotated[int, Field(strict=True, gt=0, le=MAX_TOKENS)]
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def _env_name(value: str) -> str:
    if not _ENV_NAME.fullmatch(value):
        raise ValueError("must be the name of an environment variable (letters, digits and _), never a key itself")
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Backend(_Strict):
    kind: Literal["openai_compatible", "command", "builtin"]
    base_url: str | None = None
    api_key_env: str = ""
    model: str = ""
    timeout_seconds: Annotated[float, Field(strict=True, gt=0, le=3600, allow_inf_nan=False)] | None = None
    max_retries: Annotated[int, Field(strict=True, ge=0, le=10)] | None = None
    stream: bool | None = None
    argv: list[Annotated[str, Field(min_length=1)]] | None = None
    env: list[Annotated[str, AfterValidator(_env_name)]] | None = None

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str | None) -> str | None:
        problem = None if value is None else base_url_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("api_key_env")
    @classmethod
    def _api_key_env(cls, value: str) -> str:
        return value and _env_name(value)


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
    if not price.is_finite() or price < 0 or price > MAX_PRICE:
        raise ValueError(f"a price is a number of dollars per million tokens, from 0 to {MAX_PRICE}")
    return price


def _encoding(value: Any) -> Any:
    if isinstance(value, str) and value not in OFFLINE_ENCODINGS:
        shown = value if len(value) <= 50 else value[:50] + "…"
        raise ValueError(f"'{shown}' is not an encoding tokens can be counted in "
                         f"(available: {', '.join(sorted(OFFLINE_ENCODINGS))})")
    return value


class _Model(_Strict):
    context_window: Tokens | None = None
    max_output: Tokens | None = None
    encoding: str | None = None
    input_price: Decimal | None = None
    output_price: Decimal | None = None
    cached_input_price: Decimal | None = None

    _prices = field_validator("input_price", "output_price", "cached_input_price", mode="before")(_price)
    _encodings = field_validator("encoding")(_encoding)


class _File(_Strict):
    backends: dict[Name, _Backend] = Field(default_factory=dict)
    aliases: dict[Name, _Alias] = Field(default_factory=dict)
    models: dict[Annotated[str, Field(min_length=1)], _Model] = Field(default_factory=dict)
    tools: dict[ServerName, ToolServer] = Field(default_factory=dict)  # MCP servers (tools/config.py)


class BackendsFileError(EngineError):
    """The file cannot be used: `str()` names the file, the key and what is wrong."""

    code = "BAD_BACKENDS_FILE"


def read_backends_file(path: str | Path, *, workspace_root: str | Path | None = None) -> dict[str, Any]:
    """The file's backends (as `LLM_BACKENDS` entries), aliases, model overrides and MCP servers
    (as `TOOL_SERVERS` entries); a server's `cwd` is checked to be inside `workspace_root`."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise BackendsFileError(f"{path}: {error.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise BackendsFileError(f"{path}: line {line}: not UTF-8 text (byte {error.start + 1} of the file)") from None
    try:
        raw = tomllib.loads(text)
        parsed = _File.model_validate(raw)
    except tomllib.TOMLDecodeError as error:  # its message names the line, never the text there
        raise BackendsFileError(f"{path}: not TOML: {error}") from None
    except RecursionError:
        raise BackendsFileError(f"{path}: nested too deeply to be read (arrays or tables within one another)") from None
    except ValidationError as error:
        problems = []
        for problem in error.errors():
            where = ".".join(str(part) for part in problem["loc"])
            message = problem["msg"]
            if problem["type"] == "value_error":  # this module's own words, without pydantic's "Value error, "
                message = str(problem["ctx"]["error"])
            if problem["type"] == "extra_forbidden" and problem["loc"][0] == "tools" and problem["loc"][-1] in SECRET_KEYS:
                message = SECRET_MESSAGE
            elif problem["type"] == "extra_forbidden" and problem["loc"][-1] in ("api_key", "key", "token", "password"):
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
    for name, model in parsed.models.items():
        if model.max_output and model.context_window and model.max_output > model.context_window:
            problems.append(f"models.{name}.max_output: larger than its context_window ({model.context_window})")
    servers, server_problems = tool_servers(parsed.tools, workspace_root)
    problems += server_problems
    if problems:
        raise BackendsFileError(f"{path}: " + "; ".join(problems))
    return {"backends": backends, "aliases": {name: alias.model_dump() for name, alias in parsed.aliases.items()},
            "models": {name: model.model_dump(exclude_none=True) for name, model in parsed.models.items()},
            "tools": servers}


KIND_OPTIONS = {
    "openai_compatible": {"base_url", "api_key_env", "model", "timeout_seconds", "max_retries", "stream"},
    "command": {"argv", "timeout_seconds", "env", "model"},
    "builtin": set(),
}
