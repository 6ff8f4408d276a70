"""docs/architecture.md names every module of src/proofmatch, and its artifacts table is the one
scripts/artifacts_table.py generates from the workflow's rules; the README stays short."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "proofmatch"
ARCHITECTURE = REPO / "docs" / "architecture.md"


def _modules_rows() -> dict[str, str]:
    """The Modules table of docs/architecture.md: package (``data`` …, ``""`` for the top level)
    -> its modules cell."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("\n## Modules\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and (m := re.match(r"`(\w+)/`|top level", cells[0])):
            rows[m.group(1) or ""] = cells[1]
    return rows


def test_architecture_names_every_module():
    rows = _modules_rows()
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if path.name == "__init__.py" or len(rel.parts) > 2:
            continue
        package = rel.parts[0] if len(rel.parts) == 2 else ""
        if f"`{path.name}`" not in rows.get(package, ""):
            missing.append(str(rel))
    assert not missing, f"docs/architecture.md's Modules table does not name {missing}"


def _artifacts_script():
    spec = importlib.util.spec_from_file_location(
        "artifacts_table", REPO / "scripts/artifacts_table.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_artifacts_table_is_generated_from_the_rules():
    script = _artifacts_script()
    page = ARCHITECTURE.read_text(encoding="utf-8")
    assert script.replaced(page, script.table()) == page, (
        "docs/architecture.md's artifacts table is stale: python3 scripts/artifacts_table.py --write"
    )


def test_constraints_are_left_out_of_the_patterns():
    script = _artifacts_script()
    assert (
        script.without_constraints(r"results/{corpus,(?:)}extract/shard-{shard,\d{3}}.json")
        == "results/{corpus}extract/shard-{shard}.json"
    )


def test_the_readme_is_short():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 160, f"README.md has {len(lines)} lines (at most 160)"
