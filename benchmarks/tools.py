"""What a tool call through the catalogue costs over the MCP SDK's own client, and what the
builtin knowledge_search costs.

An MCP call through `tools.catalogue.call` checks the arguments against the tool's schema,
runs the SDK in a thread of its own within the time limit, turns the result into JSON and
measures it against its cap. The baseline is the bare SDK client making the same call to the
same server over the same transport, connecting for the call as the catalogue does. Both
sides run in alternate calls; the figure is each side's median wall time a call (the time is
mostly the server's: starting it over stdio, a round trip over HTTP, so CPU time would not
see it), and their ratio.
"""
from __future__ import annotations

import json
import os
import secrets
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from benchmarks.context import taken_in_turn
from knowledge.models import KnowledgeAtom
from tools import catalogue

TARGET = 1.3
SERVER = str(Path(__file__).with_name("mcp_server.py"))
TOKEN_VARIABLE = "BENCHMARK_MCP_TOKEN"
ARGUMENTS = {"text": "a short line of text, echoed"}
SEARCH = {"query": "attention transformer encoder layers", "limit": 5}


def median_ms(times: list[float]) -> float:
    return round(statistics.median(times) * 1000, 3)


def alternate(calls: int, sides: dict[str, Callable[[], Any]]) -> dict[str, float]:
    """Each side's median wall time a call, in ms, over `calls` rounds of one call each, in turn."""
    return {name: median_ms(taken) for name, taken in taken_in_turn(calls, sides, time.perf_counter).items()}


def bare_call(target: Any, headers: dict[str, str] | None = None) -> Any:
    """One call of `echo` with the SDK's client alone: connect, call, disconnect."""

    async def call() -> Any:
        if headers is None:
            async with Client(target) as client:
                return await client.call_tool("echo", ARGUMENTS)
        async with httpx2.AsyncClient(headers=headers) as http, \
                Client(streamable_http_client(target, http_client=http)) as client:
            return await client.call_tool("echo", ARGUMENTS)

    result = anyio.run(call)
    if result.is_error:
        raise CommandError(f"the bare SDK call failed: {result.content}")
    return result


class Command(BaseCommand):
    help = ("Measure an MCP tool call through the catalogue against the bare MCP SDK client (stdio and "
            "streamable HTTP, a connection per call), and the builtin knowledge_search; print the figures.")

    def add_arguments(self, parser):
        parser.add_argument("--stdio-calls", type=int, default=10, help="calls a side over stdio (each starts the server)")
        parser.add_argument("--http-calls", type=int, default=50, help="calls a side over streamable HTTP")
        parser.add_argument("--search-calls", type=int, default=50, help="knowledge_search calls")
        parser.add_argument("--json", dest="as_json", action="store_true", help="print the figures as JSON")

    def handle(self, *args, stdio_calls, http_calls, search_calls, as_json, **options):
        if min(stdio_calls, http_calls, search_calls) < 1:
            raise CommandError("each count of calls must be at least 1")
        figures = [self.stdio(stdio_calls), self.http(http_calls), self.knowledge_search(search_calls)]
        if as_json:
            self.stdout.write(json.dumps(figures, indent=2))
            return
        for f in figures:
            if "ratio" in f:
                verdict = "ok" if f["ratio"] <= f["target"] else "OVER TARGET"
                self.stdout.write(f"{f['name']}: {f['ours_ms']:.1f} ms a call vs {f['baseline']} "
                                  f"{f['baseline_ms']:.1f} ms → {f['ratio']:.2f}× (target ≤ {f['target']}×, "
                                  f"{verdict}) — {f['detail']}")
            else:
                self.stdout.write(f"{f['name']}: {f['ours_ms']:.2f} ms a call — {f['detail']}")

    def compare(self, name: str, options: dict[str, Any], calls: int, bare: Callable[[], Any]) -> dict[str, Any]:
        """Catalogue and bare calls to the server `options` describe, alternately."""
        saved = settings.TOOL_SERVERS
        settings.TOOL_SERVERS = {"bench": options}
        try:
            catalogue.clear_listings()
            found = [tool for tool in catalogue.server_tools("bench", fresh=True) if tool.tool == "echo"]
            if not found or not found[0].reachable:
                raise CommandError(f"the benchmark's MCP server could not be listed: {found and found[0].problem}")

            def ours() -> None:
                outcome = catalogue.call(found[0], ARGUMENTS)
                if not outcome.ok:
                    raise CommandError(f"the catalogue's call failed: {outcome.status}: {outcome.error}")

            best = alternate(calls, {"bare": bare, "ours": ours})
        finally:
            settings.TOOL_SERVERS = saved
            catalogue.clear_listings()
        return {"name": name, "ours_ms": best["ours"], "baseline": "bare MCP SDK client", "baseline_ms": best["bare"],
                "ratio": round(best["ours"] / best["bare"], 3), "target": TARGET,
                "detail": f"median of {calls} calls a side, a connection per call"}

    def stdio(self, calls: int) -> dict[str, Any]:
        argv = [sys.executable, SERVER, "stdio"]
        options = {"transport": "stdio", "argv": argv, "env": [], "cwd": None, "allow": ["echo"],
                   "timeout_seconds": 60.0, "max_result_bytes": 100_000}
        parameters = StdioServerParameters(command=argv[0], args=argv[1:])
        return self.compare("MCP call over stdio", options, calls, lambda: bare_call(parameters))

    def http(self, calls: int) -> dict[str, Any]:
        token = secrets.token_urlsafe(16)
        process = subprocess.Popen([sys.executable, SERVER, "http"], stdout=subprocess.PIPE, text=True,
                                   env={**os.environ, TOKEN_VARIABLE: token})
        previous = os.environ.get(TOKEN_VARIABLE)
        os.environ[TOKEN_VARIABLE] = f"Bearer {token}"  # what the catalogue's header is read from
        try:
            line = process.stdout.readline() if process.stdout else ""
            if not line.strip().isdigit():
                raise CommandError("the benchmark's MCP server did not start over HTTP")
            url = f"http://127.0.0.1:{int(line)}/mcp"
            options = {"transport": "http", "url": url, "headers": {"Authorization": TOKEN_VARIABLE},
                       "allow": ["echo"], "timeout_seconds": 60.0, "max_result_bytes": 100_000}
            headers = {"Authorization": f"Bearer {token}"}
            return self.compare("MCP call over streamable HTTP", options, calls, lambda: bare_call(url, headers))
        finally:
            if previous is None:
                os.environ.pop(TOKEN_VARIABLE, None)
            else:
                os.environ[TOKEN_VARIABLE] = previous
            process.terminate()
            process.wait(timeout=10)

    def knowledge_search(self, calls: int) -> dict[str, Any]:
        found, missing = catalogue.resolve(["builtin.knowledge_search"])
        if missing:
            raise CommandError("builtin.knowledge_search is not in the catalogue")
        outcomes = []

        def ours() -> None:
            outcomes.append(catalogue.call(found[0], SEARCH))

        taken = alternate(calls, {"ours": ours})["ours"]
        failed = [outcome for outcome in outcomes if not outcome.ok]
        if failed:
            raise CommandError(f"knowledge_search failed: {failed[0].status}: {failed[0].error}")
        atoms = KnowledgeAtom.objects.count()
        return {"name": "builtin knowledge_search", "ours_ms": taken,
                "detail": f"median of {calls} calls over {atoms:,} atoms, {outcomes[-1].result['found']} found "
                          f"for {SEARCH['query']!r}"}
