"""The benchmark_tools command, with a call or two a side."""
import io
import json

import pytest
from django.core.management import CommandError, call_command


def run(*args):
    out = io.StringIO()
    call_command("benchmark_tools", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_it_reports_each_transport_against_the_bare_sdk_and_the_search_cost():
    figures = json.loads(run("--stdio-calls", "1", "--http-calls", "2", "--search-calls", "2", "--json"))
    assert [f["name"] for f in figures] == ["MCP call over stdio", "MCP call over streamable HTTP",
                                            "builtin knowledge_search"]
    for f in figures[:2]:
        assert f["baseline"] == "bare MCP SDK client" and f["target"] == 1.3
        assert f["ours_ms"] > 0 and f["baseline_ms"] > 0
        assert f["ratio"] == pytest.approx(f["ours_ms"] / f["baseline_ms"], rel=1e-2)
    assert figures[2]["ours_ms"] > 0 and "over 0 atoms, 0 found" in figures[2]["detail"]
    with pytest.raises(CommandError, match="at least 1"):
        run("--http-calls", "0")
