"""bin/test's second pass (SWITCHYARD_REPEAT_PASS=1) leaves out what the database cannot
change, and keeps the rest: tests/conftest.py's first_pass_only; a first pass that a second
follows (SWITCHYARD_REPEAT_PASS_FOLLOWS=1) leaves it the tests marked last_pass_only. Seen
through pytest's own collection of real test files."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = ["tests/engine/test_steps.py", "tests/core/test_rows.py", "tests/pages/test_browser.py",
         "tests/pages/test_csp.py", "tests/bin/test_run.py"]
FUZZ = "tests/api/test_fuzz_openapi.py::test_it_answers_every_generated_request_as_its_schema_says"


def collected(tmp_path, files=FILES, **env) -> tuple[set[str], str]:
    """The node ids pytest collects from `files` (with no xdist), and what it printed."""
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-p", "no:cacheprovider", "-n", "0", *files],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'collect.sqlite3'}", **env},
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return {line for line in completed.stdout.splitlines() if "::" in line}, completed.stdout


def test_it_keeps_in_the_second_pass_only_what_the_database_may_change(tmp_path):
    first, _ = collected(tmp_path, SWITCHYARD_REPEAT_PASS="0")  # the first pass: everything
    second, output = collected(tmp_path, SWITCHYARD_REPEAT_PASS="1")

    kept = {
        # the database's own behaviour (django_db)
        "tests/core/test_rows.py::test_it_prepares_a_statement_the_second_time_a_connection_runs_it_on_postgresql",
        # a page in the browser whose data real workers store
        "tests/pages/test_csp.py::test_it_has_every_page_satisfy_the_content_security_policy",
        # no browser, but the pages' client on the database
        "tests/pages/test_csp.py::test_it_sends_the_policy_with_every_page_and_no_page_holds_inline_code",
    }
    left_out = {
        # pure engine: no database
        "tests/engine/test_steps.py::test_a_run_starts_every_node_without_dependencies_at_once",
        # no database: parses HTML
        "tests/pages/test_csp.py::test_it_finds_inline_code_in_html",
        # a page in the browser without workers: the subject is the page
        "tests/pages/test_browser.py::test_it_lets_a_person_sign_in_through_the_form_and_find_their_way",
    }
    assert kept <= second
    assert not left_out & second
    assert left_out <= first
    assert not any(node.startswith("tests/bin/test_run.py::") for node in second), "own_database"
    assert second < first
    assert "left out of this pass, as the other runs them:" in output
    assert any(node.startswith("tests/bin/test_run.py::") for node in first)


def test_it_runs_the_tests_marked_last_pass_only_once_in_the_second_pass_when_one_follows(tmp_path):
    files = ["tests/api/test_fuzz_openapi.py", "tests/engine/test_steps.py"]
    followed, output = collected(tmp_path, files, SWITCHYARD_REPEAT_PASS_FOLLOWS="1")
    second, _ = collected(tmp_path, files, SWITCHYARD_REPEAT_PASS="1")

    assert not any(node.startswith(FUZZ) for node in followed)
    assert any(node.startswith("tests/engine/test_steps.py::") for node in followed)
    assert "runs once, in the second pass" in output
    assert any(node.startswith(FUZZ) for node in second)  # without a second pass it runs in the first, as all do
