"""The engine is pure Python: no Django, Celery or Redis inside it (STYLE habit 1)."""
import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parent.parent / "executions" / "engine"
FORBIDDEN = ("django", "celery", "redis", "kombu", "agents", "workflows.models", "executions.models", "core")


def imported_modules(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def test_it_keeps_django_celery_and_redis_out_of_the_engine():
    files = list(ENGINE.rglob("*.py"))
    assert files, "the engine package exists"
    offending = [
        f"{path.relative_to(ENGINE)} imports {module}"
        for path in files
        for module in imported_modules(path)
        if module.split(".")[0] in {f.split(".")[0] for f in FORBIDDEN} and module.startswith(FORBIDDEN)
    ]
    assert offending == []


def test_it_keeps_the_condition_language_free_of_django():
    modules = set(imported_modules(ENGINE.parent.parent / "workflows" / "conditions.py"))
    assert not {m for m in modules if m.startswith(("django", "celery", "redis"))}
