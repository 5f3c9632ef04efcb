"""bin/test's passes, seen through pytest's own collection of real test files: the second
(SWITCHYARD_REPEAT_PASS=1) leaves out what the database cannot change (tests/conftest.py's
first_pass_only) and keeps the rest; a first pass that a second follows
(SWITCHYARD_REPEAT_PASS_FOLLOWS=1) leaves it what runs once (last_pass_only: the tests so
marked, and real workers' tests unless marked both_databases); a first pass alone runs all."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT

FILES = ["tests/engine/test_steps.py", "tests/core/test_rows.py", "tests/pages/test_browser.py",
         "tests/pages/test_csp.py", "tests/bin/test_run.py", "tests/api/test_fuzz_openapi.py",
         "tests/executions/test_gates_worker.py", "tests/executions/test_crash_safety.py"]
FUZZ = "tests/api/test_fuzz_openapi.py::test_it_answers_every_generated_request_as_its_schema_says"
WORKERS = "tests/executions/test_gates_worker.py::test_the_release_review_gate_approved_through_the_api_goes_on_to_publish"
DRILL = "tests/executions/test_crash_safety.py::test_it_finishes_a_run_whose_worker_was_killed_mid_node"
PASSES = ("SWITCHYARD_REPEAT_PASS", "SWITCHYARD_REPEAT_PASS_FOLLOWS")  # what tells a pass which it is


def collected(tmp_path, **env) -> tuple[set[str], str]:
    """The node ids pytest collects from FILES (with no xdist), and what it printed."""
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-p", "no:cacheprovider", "-n", "0", *FILES],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**{key: value for key, value in os.environ.items() if key not in PASSES},  # bin/test sets them
             "DATABASE_URL": f"sqlite:///{tmp_path / 'collect.sqlite3'}", **env},
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return {line for line in completed.stdout.splitlines() if "::" in line}, completed.stdout


def starting(nodes: set[str], prefix: str) -> bool:
    return any(node.startswith(prefix) for node in nodes)


def test_each_pass_keeps_what_it_should_and_every_test_runs_in_one(tmp_path):
    alone, _ = collected(tmp_path)  # no second pass follows: everything
    first, first_output = collected(tmp_path, SWITCHYARD_REPEAT_PASS_FOLLOWS="1")
    second, second_output = collected(tmp_path, SWITCHYARD_REPEAT_PASS="1")

    # The second pass keeps what the database may change…
    kept = {
        # the database's own behaviour (django_db)
        "tests/core/test_rows.py::test_it_prepares_a_statement_the_second_time_a_connection_runs_it_on_postgresql",
        # no browser, but the pages' client on the database
        "tests/pages/test_csp.py::test_it_sends_the_policy_with_every_page_and_no_page_holds_inline_code",
        # a page in the browser whose data real workers store
        "tests/pages/test_csp.py::test_it_has_every_page_satisfy_the_content_security_policy",
        WORKERS, DRILL,
    }
    assert kept <= second
    assert starting(second, FUZZ)
    # …and leaves out what it cannot.
    left_out = {
        # pure engine: no database
        "tests/engine/test_steps.py::test_a_run_starts_every_node_without_dependencies_at_once",
        # no database: parses HTML
        "tests/pages/test_csp.py::test_it_finds_inline_code_in_html",
        # a page in the browser without workers: the subject is the page
        "tests/pages/test_browser.py::test_it_lets_a_person_sign_in_through_the_form_and_find_their_way",
    }
    assert not left_out & second and left_out <= first
    assert not starting(second, "tests/bin/test_run.py::") and starting(first, "tests/bin/test_run.py::"), "own_database"
    assert "left out of this pass, as the other runs them:" in second_output

    # The first pass leaves the second what runs once: the fuzz test, and real workers
    # unless the database may change their outcome (a fault drill).
    assert not starting(first, FUZZ) and WORKERS not in first
    assert DRILL in first and "tests/core/test_rows.py::test_it_prepares_a_statement_the_second_time_a_connection_runs_it_on_postgresql" in first
    assert "runs once, in the second pass" in first_output and "real workers, run once, in the second pass" in first_output

    # Every test runs in one pass or the other, and a first pass alone runs them all.
    assert first | second == alone
    assert starting(alone, FUZZ) and WORKERS in alone
