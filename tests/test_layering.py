"""The layers of the house, as import-linter reads them from .importlinter (STYLE habit 1).

import-linter follows every import, relative or absolute, at module level or inside a
function, and reports chains through other modules too: the pure engine imports no app,
no Django, Celery or Redis, and nothing imports a layer above its own.
"""
import configparser
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / ".importlinter"


def lint_imports(*arguments):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [str(Path(sys.executable).parent / "lint-imports"), "--no-cache", "--no-logo", *arguments, str(CONFIG)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)


def test_it_keeps_every_import_contract():
    result = lint_imports()
    assert result.returncode == 0, result.stdout + result.stderr


def test_it_keeps_django_celery_redis_and_the_apps_out_of_the_engine():
    result = lint_imports("--contract", "pure-engine")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "KEPT" in result.stdout


def test_it_lets_no_import_run_up_the_layers():
    config = configparser.ConfigParser()
    config.read(CONFIG)
    ignored = [line for line in config["importlinter:contract:layers"].get("ignore_imports", "").splitlines()
               if line.strip()]
    assert ignored == [], "imports that run up the layers:\n" + "\n".join(ignored)
