"""bin/check runs ruff and mypy as pyproject.toml configures them, and bin/test stops before
pytest when either fails. Both scripts run for real on a small project of their own, beside
the real .venv; bin/test's setup, browser and Redis steps are stood in for, since what is
tested here is the order of its steps and their exit codes."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PYPROJECT = """\
[tool.ruff]
target-version = "py311"
[tool.ruff.lint]
select = ["E", "F", "W", "I", "B", "UP"]

[tool.mypy]
files = ["pkg"]
strict = true
"""
PYTEST_INI = "[pytest]\ntestpaths = tests\naddopts = -q -p no:django -p no:cacheprovider\n"
CLEAN = 'def greeting(name: str) -> str:\n    return f"hello {name}"\n'
A_TEST = "def test_it_runs():\n    assert True\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A checkout in miniature: the real bin/test and bin/check, stand-ins for the steps
    that prepare the machine, a package that passes both checks and a test that passes."""
    (tmp_path / "bin").mkdir()
    for script in ("test", "check"):
        shutil.copy(ROOT / "bin" / script, tmp_path / "bin" / script)
    (tmp_path / "bin" / "setup").write_text("exit 0\n")
    (tmp_path / "bin" / "chromium-ensure").write_text("exit 0\n")
    (tmp_path / "bin" / "redis-ensure").write_text("redis_ensure_stop() { :; }\n")
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "pytest.ini").write_text(PYTEST_INI)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "greet.py").write_text(CLEAN)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ok.py").write_text(A_TEST)
    return tmp_path


def run(project: Path, script: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "PYTEST_ADDOPTS")}
    env["SWITCHYARD_DATA_DIR"] = str(project / "data")
    return subprocess.run(["bash", str(project / "bin" / script)], cwd=project, env=env, capture_output=True,
                          text=True, timeout=300)


def test_it_passes_a_clean_project_on_to_pytest(project):
    result = run(project, "test")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout and "bin/test: all runs passed." in result.stdout


def test_it_fails_bin_test_on_a_lint_error_before_pytest_runs(project):
    (project / "pkg" / "unused.py").write_text("import os\n")  # F401
    result = run(project, "test")
    assert result.returncode != 0
    assert "F401" in result.stdout
    assert "bin/check: FAILED: ruff" in result.stderr
    assert "bin/test: FAILED: the static checks (bin/check) failed" in result.stderr
    assert "1 passed" not in result.stdout  # pytest never started


def test_it_fails_bin_test_on_a_type_error_before_pytest_runs(project):
    (project / "pkg" / "greet.py").write_text(CLEAN + "\n\ndef count() -> int:\n    return greeting(1)\n")
    result = run(project, "test")
    assert result.returncode != 0
    assert 'Argument 1 to "greeting" has incompatible type "int"' in result.stdout
    assert "bin/check: FAILED: mypy" in result.stderr and "ruff" not in result.stderr
    assert "1 passed" not in result.stdout

