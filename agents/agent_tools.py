"""An agent's tools as the catalogue knows them (tools/catalogue.py): which names the
catalogue does not hold, which approvals name a tool the agent does not have, and what the
agent page and the editor show of each.

An agent names its tools in `capabilities.tools` as `server.tool`, or `server.*` for every
tool of a server. Who authors an agent (the editor, the API's create and update) may name
only tools of the catalogue; an imported document may name any text (the seed allows it),
which is kept and shown as a missing tool, the one a run would find missing.
"""
from __future__ import annotations

import json
from typing import Any

from core.errors import echo
from tools import catalogue
from tools.catalogue import Tool

ALL_TOOLS = "*"  # `server.*`: every tool of the server
MOST_PROBLEMS = 20  # a refusal names this many at most, so that it never grows with the document


def _known_list(known: list[str], limit: int = 8) -> str:
    shown = ", ".join(known[:limit])
    return shown + (f", … ({len(known)} in all)" if len(known) > limit else "") if known else "none"


def unknown_tool_problems(tools: list[str]) -> list[tuple[str, str]]:
    """(where, what) for each entry of `capabilities.tools` the catalogue does not hold."""
    missing = set(catalogue.unknown(tools))
    if not missing:
        return []
    known = _known_list(catalogue.names())
    return [(f"capabilities.tools[{index}]", f"'{echo(name)}' is not a tool of the catalogue (known: {known})")
            for index, name in enumerate(tools) if name in missing][:MOST_PROBLEMS]


def covers(tools: list[str], name: str) -> bool:
    """Whether the agent's `tools` give it `name`: named itself, or by its server's `server.*`."""
    server, _, _ = name.partition(".")
    return name in tools or f"{server}.{ALL_TOOLS}" in tools


def approval_problems(tools: list[str], approval: list[str]) -> list[tuple[str, str]]:
    """(where, what) for each name of `runtime.tools_needing_approval` that is not one of the
    agent's tools: a call it never makes cannot wait for a decision."""
    return [(f"runtime.tools_needing_approval[{index}]",
             f"'{echo(name)}' is not one of the agent's tools (capabilities.tools: {_known_list([echo(t) for t in tools])})")
            for index, name in enumerate(approval) if not covers(tools, name)][:MOST_PROBLEMS]


def needs_approval(approval: list[str], name: str) -> bool:
    server, _, _ = name.partition(".")
    return name in approval or f"{server}.{ALL_TOOLS}" in approval


def _shown(tool: Tool, approval: list[str]) -> dict[str, Any]:
    """One tool as a page shows it: its schema as indented JSON text (the template escapes it)."""
    return {**tool.as_dict(), "schema_json": json.dumps(tool.input_schema, indent=2, ensure_ascii=False, sort_keys=True),
            "needs_approval": needs_approval(approval, tool.name)}


def tool_listing(tools: list[str], approval: list[str]) -> list[dict[str, Any]]:
    """Each entry of an agent's `capabilities.tools`, in its order, as its page lists it:
    `name`, its `server`, `known` (False: not in the catalogue, a missing tool at run time), `every`
    (True for `server.*`), and `tools`, the catalogue's tools it names (a `server.*` expanded)."""
    listing = []
    for name in tools:
        server, _, tool = str(name).partition(".")
        entry: dict[str, Any] = {"name": name, "server": server, "known": not catalogue.unknown([name]),
                                 "every": tool == ALL_TOOLS, "tools": []}
        if entry["known"]:
            entry["tools"] = [_shown(found, approval) for found in catalogue.server_tools(server)
                              if tool in (ALL_TOOLS, found.tool)]
        listing.append(entry)
    return listing


def missing_tools(tools: list[str]) -> list[str]:
    """The agent's tools the catalogue does not hold (an imported document may name them)."""
    return catalogue.unknown(tools)


def catalogue_choices(current: list[str]) -> list[dict[str, Any]]:
    """What the editor offers, by server: `server.*` and each tool with its description; then
    the agent's `current` tools the catalogue does not hold (server "" — saving refuses them)."""
    groups = []
    servers = [catalogue.BUILTIN, *sorted(catalogue.servers())]
    for server in servers:
        groups.append({"server": server, "every": f"{server}.{ALL_TOOLS}",
                       "tools": [tool.as_dict() for tool in catalogue.server_tools(server)]})
    missing = catalogue.unknown(current)
    if missing:
        groups.append({"server": "", "every": "", "tools": [{"name": name, "description": "", "reachable": False}
                                                           for name in missing]})
    return groups
