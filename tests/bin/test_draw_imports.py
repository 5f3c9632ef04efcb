"""bin/draw-imports: the committed docs/imports.svg is the drawing of the imports the code has now."""
from __future__ import annotations

import runpy
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = runpy.run_path(str(ROOT / "bin" / "draw-imports"))


def test_the_committed_drawing_matches_the_imports_of_the_code():
    committed = (ROOT / "docs" / "imports.svg").read_text()
    assert SCRIPT["current_drawing"]() == committed, "the imports changed: run .venv/bin/python bin/draw-imports"


def test_it_draws_every_package_of_every_layer_and_each_import_with_its_count():
    layered = [["project"], ["workflows", "knowledge"], ["engine"]]
    svg = SCRIPT["drawing"](layered, Counter({("project", "workflows"): 3, ("workflows", "engine"): 12}))
    for name in ("project", "workflows", "knowledge", "engine"):
        assert f">{name}</text>" in svg
    assert svg.count('class="import"') == 2 and ">3</text>" in svg and ">12</text>" in svg
    assert svg.count('class="layer"') == 2  # one frame, with its label, around workflows and knowledge


def test_it_reads_the_layers_highest_first_from_the_import_contracts():
    assert SCRIPT["layers"]() == [["project"], ["demo", "benchmarks"], ["retention"], ["experiments", "schedules", "triggers"], ["quality"],
                                  ["executions"], ["workflows", "knowledge"], ["agents"], ["tools"], ["core"], ["engine"]]
