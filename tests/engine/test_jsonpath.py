"""JSONPath is RFC 9535: the whole compliance suite, run the way a data reference runs a
path (`select_path`, with the rule that turns a nodelist into the value passed), and
`match()` / `search()` on RE2.

The suite is jsonpath-standard/jsonpath-compliance-test-suite, BSD-2, in jsonpath_cts/
with its licence."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.context.errors import RefError
from engine.context.resolution import select_path
from engine.jsonpath import compile_path, is_singular
from tests.executions.conftest import ROOT

CASES = json.loads((Path(__file__).parent / "jsonpath_cts" / "cts.json").read_text())["tests"]


def test_the_suite_is_all_there():
    assert len(CASES) == 703


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_rfc_9535_compliance(case):
    selector = case["selector"]
    try:
        value = select_path(case.get("document"), selector)
    except RefError as error:
        if case.get("invalid_selector"):
            assert error.code == "REF_PATH_INVALID"
            return
        assert error.code == "REF_NOT_FOUND", str(error)
        assert [] in (case.get("results") or [case["result"]]), "an empty nodelist is the only 'not found'"
        return
    assert not case.get("invalid_selector"), f"{selector!r} is not RFC 9535 and must be refused"
    nodelist = [value] if is_singular(selector) else value
    assert nodelist in (case.get("results") or [case["result"]])


def test_an_invalid_path_names_the_position():
    with pytest.raises(ValueError, match=r"'\$\.a\[\?@\.b !! 1\]' is not valid: .*column 9"):
        compile_path("$.a[?@.b !! 1]")


def test_match_and_search_run_on_re2_without_backtracking():
    # `(a+)+` against "aaa…a!" backtracks exponentially in a backtracking engine: 2^40 steps.
    # In a child process with a generous timeout, so that a hang fails the test instead of pinning the run.
    script = ("import json; from engine.context.resolution import select_path; "
              "items = [{'t': 'a' * 40 + '!'}, {'t': 'aaa'}, {'t': 'xaaay'}]; "
              "print(json.dumps([select_path(items, '$[?match(@.t, \"(a+)+\")].t'), "
              "select_path(items, '$[?search(@.t, \"(a+)+\")].t')]))")
    try:
        done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("match((a+)+) against 'aaa…a!' did not finish within 60 s")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [["aaa"], ["a" * 40 + "!", "aaa", "xaaay"]]


def test_a_dot_in_an_iregexp_matches_no_line_break():
    assert select_path(["a\nb", "a\rb", "a-b"], "$[?match(@, 'a.b')]") == ["a-b"]
