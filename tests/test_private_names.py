"""A module's public names are its doors (STYLE habit 11): no production module imports a
name another module keeps to itself (one that starts with `_`)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIPPED = {".venv", "node_modules", "tests", "migrations"}


def private_imports(source: str) -> list[tuple[int, str]]:
    """Each import in `source` of another module's private name, as (line, what): `from m
    import _name` (relative too), or `import m._module`. Dunder names (`__version__`) are
    public by convention."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            found += [(node.lineno, f"from {module} import {alias.name}") for alias in node.names
                      if _private(alias.name)]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, f"import {alias.name}") for alias in node.names
                      if any(_private(part) for part in alias.name.split("."))]
    return sorted(found)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_it_imports_no_private_name_of_another_module():
    found = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in sorted(ROOT.rglob("*.py"))
        if not SKIPPED.intersection(path.relative_to(ROOT).parts)
        for line, what in private_imports(path.read_text())
    ]
    assert found == [], "production modules importing another module's private names:\n" + "\n".join(found)


def test_it_finds_every_kind_of_private_import():
    """The scan above passes only if it would have seen one: here, one of each kind."""
    sample = (
        "from executions.services.run import LockedRun, _Reads\n"
        "from . import _helpers\n"
        "from .graph import _GRAPHS as graphs\n"
        "import core._internal.rows\n"
        "from __future__ import annotations\n"  # a dunder module, not a private name
        "from project import __version__\n"
        "import operator as _op\n"  # a public module under a private alias of this module's own
        "def later():\n"
        "    from core.status_writes import _lock_sql\n"
    )
    assert private_imports(sample) == [
        (1, "from executions.services.run import _Reads"), (2, "from . import _helpers"),
        (3, "from .graph import _GRAPHS"), (4, "import core._internal.rows"),
        (9, "from core.status_writes import _lock_sql")]
