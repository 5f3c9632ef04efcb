"""The MCP servers of the operators' backends file (SWITCHYARD_BACKENDS_FILE): one `[tools.NAME]`
table a server, checked whole with the rest of the file when a process starts
(agents/backends/config.py reads the file; this module says what a table may hold).

    [tools.files]                      # a server started for each call, over its stdin/stdout
    transport = "stdio"
    argv = ["mcp-files", "--read-only"]   # run as given, never through a shell
    env = ["FILES_TOKEN"]              # environment variables passed through, by name
    cwd = "shared"                     # relative to the workspace, and inside it
    allow = ["search", "read"]         # the only tools agents may call on it
    timeout_seconds = 30               # per call (default 30, at most 600)
    max_result_bytes = 100000          # a result's cap, as JSON (default 100000)

    [tools.issues]                     # a server reached over streamable HTTP
    transport = "http"
    url = "https://mcp.example.com/mcp"
    headers = { Authorization = "ISSUES_AUTHORIZATION" }   # header → the variable holding its value
    allow = ["search_issues"]

What is refused, so that nothing the file says is taken as something else later:
- a server named `builtin` (the product's own tools) or with a dot in its name (tools are
  named `server.tool`);
- options of the other transport, a stdio server without `argv`, an http one without `url`;
- a `url` that is not http(s) with a host, or that holds a user, a password, a query or a
  fragment (core/backend_urls.py says why: it is shown to admins and in errors);
- an `env` entry or a header's variable that is not the name of an environment variable, and
  any key that looks like a secret (`token`, `api_key`…): the file names where a secret is,
  never holds one;
- a `cwd` that is absolute or leaves the workspace;
- an empty `allow`, or a name in it that no MCP tool can have.

A stdio server sees only the variables `env` names and a minimal environment besides (PATH,
HOME, LANG, and the few the SDK adds: LOGNAME, SHELL, TERM, USER).

This module is read by the settings, so it imports nothing of Django's.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from core.backend_urls import base_url_problem

RESERVED = "builtin"
DEFAULT_TIMEOUT_SECONDS = 30.0
MAX_TIMEOUT_SECONDS = 600
DEFAULT_MAX_RESULT_BYTES = 100_000
MAX_RESULT_BYTES = 10_000_000
# Keys an operator might write a secret under; each is answered by where a secret goes instead.
SECRET_KEYS = frozenset({"api_key", "key", "token", "password", "secret", "authorization", "bearer", "api_token"})
SECRET_MESSAGE = ("a secret is never written here: name the environment variable that holds it "
                  "(env = [\"NAME\"] for a stdio server, headers = { Header = \"NAME\" } for an http one)")

ServerName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,49}$")]
# What MCP allows a tool's name to be (letters, digits, _ - and .), never `*`.
ToolName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")]
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}")  # an HTTP token


def env_name(value: str) -> str:
    if not _ENV_NAME.fullmatch(value):
        raise ValueError("must be the name of an environment variable (letters, digits and _), never a key itself")
    return value


EnvName = Annotated[str, AfterValidator(env_name)]


class ToolServer(BaseModel):
    """One `[tools.NAME]` table, as written; `tool_servers` checks what depends on the transport."""

    model_config = ConfigDict(extra="forbid")

    transport: Literal["stdio", "http"]
    argv: list[Annotated[str, Field(min_length=1)]] | None = None
    env: list[EnvName] | None = None
    cwd: Annotated[str, Field(min_length=1)] | None = None
    url: str | None = None
    headers: dict[str, EnvName] | None = None
    allow: list[ToolName] = Field(min_length=1)
    timeout_seconds: Annotated[float, Field(strict=True, gt=0, le=MAX_TIMEOUT_SECONDS, allow_inf_nan=False)] = \
        DEFAULT_TIMEOUT_SECONDS
    max_result_bytes: Annotated[int, Field(strict=True, gt=0, le=MAX_RESULT_BYTES)] = DEFAULT_MAX_RESULT_BYTES

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        problem = None if value is None else base_url_problem(value)
        if problem:
            raise ValueError(problem.replace("api_key_env names", "a header names"))
        return value

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for header in value or {}:
            if not _HEADER_NAME.fullmatch(header):
                raise ValueError("a header's name is letters, digits and -_.!#$%&'*+^`|~ (at most 100)")
        return value

    @field_validator("allow")
    @classmethod
    def _allow(cls, value: list[str]) -> list[str]:
        twice = sorted({tool for tool in value if value.count(tool) > 1})
        if twice:
            raise ValueError(f"names {', '.join(twice)} more than once")
        return value


TRANSPORT_OPTIONS = {
    "stdio": {"argv", "env", "cwd"},
    "http": {"url", "headers"},
}
COMMON_OPTIONS = {"transport", "allow", "timeout_seconds", "max_result_bytes"}
REQUIRED = {"stdio": "argv", "http": "url"}


def cwd_problem(cwd: str, workspace_root: str | Path | None) -> tuple[str | None, str]:
    """(what is wrong with `cwd`, or None; the directory it names, absolute)."""
    if workspace_root is None:
        return "cannot be checked: no workspace is known to this file's reader", ""
    if Path(cwd).is_absolute():
        return "must be a path relative to the workspace (WORKSPACE_ROOT), e.g. \"servers/files\"", ""
    root = Path(workspace_root).resolve()
    directory = (root / cwd).resolve()
    if directory != root and root not in directory.parents:
        return "leaves the workspace (WORKSPACE_ROOT): a server runs in a directory inside it", ""
    return None, str(directory)


def tool_servers(tables: dict[str, ToolServer],
                 workspace_root: str | Path | None) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """(the servers as `TOOL_SERVERS` entries, the problems, each `tools.NAME…: what`). An
    entry holds every option, defaults included, and `cwd` as an absolute directory."""
    servers, problems = {}, []
    for name, table in tables.items():
        where = f"tools.{name}"
        if name == RESERVED:
            problems.append(f"{where}: the name {RESERVED!r} is the product's own tools; name the server otherwise")
            continue
        given = table.model_fields_set - COMMON_OPTIONS
        options = TRANSPORT_OPTIONS[table.transport]
        if given - options:
            problems.append(f"{where}: {', '.join(sorted(given - options))} do not apply to a {table.transport} server")
        needed = REQUIRED[table.transport]
        if not getattr(table, needed):
            problems.append(f"{where}.{needed}: required for a {table.transport} server")
        entry: dict[str, Any] = {"transport": table.transport, "allow": list(table.allow),
                                 "timeout_seconds": float(table.timeout_seconds),
                                 "max_result_bytes": table.max_result_bytes}
        if table.transport == "stdio":
            entry.update(argv=list(table.argv or []), env=list(table.env or []), cwd=None)
            if table.cwd is not None:
                problem, directory = cwd_problem(table.cwd, workspace_root)
                if problem:
                    problems.append(f"{where}.cwd: {problem}")
                entry["cwd"] = directory or None
        else:
            entry.update(url=table.url, headers=dict(table.headers or {}))
        servers[name] = entry
    return servers, problems
