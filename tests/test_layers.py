"""The package's imports run only downward, and no modules import each other in a circle.

``src/proofmatch`` is built in floors (docs/architecture.md, "Floors"): the registries
(``registry/``, which import nothing of proofmatch), the ground floor's top-level modules (atomic
writes, logs, config, the experiment spec, the table writer), then the libraries (the TeX
converter, the data stages, decoding), scoring, models, evaluation, the applications
(search, the demo generator) and the command line. A module may import a module of its own unit
(a subpackage, or the ground floor's top-level modules) or of a unit on a lower floor; units that
share a floor do not import each other. :data:`FLOORS` is that order, written here once;
docs/architecture.md's table is checked against it.

Imports are read with ``ast`` from every ``.py`` file of the package, at module level and inside
functions (a function-level import is a dependency all the same, only a later one); a dynamic
import (``importlib.import_module`` with a computed name, as ``proofmatch.cli`` does) is not seen.
The checker itself is tried on a small planted package, so a broken checker fails too.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "proofmatch"

GROUND = "proofmatch"  # the unit of the package's top-level modules (and of its __init__)

#: Floors from the ground up: (name, units). A unit is a subpackage or a top-level module of the
#: package; every top-level module not named here belongs to the ground unit.
Floors = tuple[tuple[str, tuple[str, ...]], ...]
FLOORS: Floors = (
    ("registry", ("proofmatch.registry",)),
    ("ground", (GROUND,)),
    ("libraries", ("proofmatch.texmath", "proofmatch.data", "proofmatch.decoding")),
    ("scoring", ("proofmatch.scoring",)),
    ("models", ("proofmatch.models",)),
    ("evaluation", ("proofmatch.evaluation",)),
    ("applications", ("proofmatch.search", "proofmatch.demo")),
    ("command line", ("proofmatch.cli",)),
)


@dataclass(frozen=True)
class Edge:
    """One import: ``source`` (a module) imports ``target`` (a module), at ``path:line``."""

    source: str
    target: str
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.source} imports {self.target}"


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package at ``root`` (its folder) by dotted name; a package's
    ``__init__.py`` is the package itself."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = (root.name, *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The package module that ``name`` (a module, or a name inside one) refers to."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(root: Path) -> list[Edge]:
    """Every import from one module of the package at ``root`` to another, wherever it stands
    in the file (module level, functions, ``if TYPE_CHECKING``)."""
    known = modules(root)
    top = root.name
    edges = []
    for module, path in known.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        rel = str(path.relative_to(root.parent))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=rel)):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                # ``from pkg import name``: name is a submodule or a name defined in pkg
                names = [f"{stem}.{a.name}" for a in node.names if a.name != "*"] or [stem]
            for name in names:
                if name != top and not name.startswith(top + "."):
                    continue
                target = _resolve(name, known)
                if target and target != module:
                    edges.append(Edge(module, target, rel, node.lineno))
    return list(dict.fromkeys(edges))  # one edge for ``from m import a, b``


def unit(module: str, root: Path, floors: Floors = FLOORS) -> str:
    """The unit of ``module``: its subpackage, a top-level module named in ``floors``, or the
    ground unit. A subpackage that no floor names raises: a new one must be given a floor."""
    listed = {u for _, units in floors for u in units}
    parts = module.split(".")
    if len(parts) == 1:
        return GROUND
    first = ".".join(parts[:2])
    if (root / parts[1]).is_dir():
        if first not in listed:
            raise LookupError(
                f"{first} is on no floor: add it to FLOORS (tests/test_layers.py) "
                f"and to docs/architecture.md"
            )
        return first
    return first if first in listed else GROUND


def floor_of(unit_name: str, floors: Floors = FLOORS) -> int:
    """The index in ``floors`` (0 = ground) of the floor that holds ``unit_name``."""
    return next(i for i, (_, units) in enumerate(floors) if unit_name in units)


def upward_imports(root: Path, floors: Floors = FLOORS) -> list[str]:
    """Each import that leaves its unit for a unit on the same floor or a higher one (a
    subpackage on no floor raises, imported or not)."""
    units = {m: unit(m, root, floors) for m in modules(root)}
    bad = []
    for e in imports(root):
        a, b = units[e.source], units[e.target]
        if a == b:
            continue
        fa, fb = floor_of(a, floors), floor_of(b, floors)
        if fb >= fa:
            there = "the same floor as" if fa == fb else f"floor {fb + 1} ({floors[fb][0]}), above"
            bad.append(
                f"{e}: {b} is on {there} {a} (floor {fa + 1}, {floors[fa][0]}); "
                "an import may only go down"
            )
    return bad


def imports_between(root: Path, source: str, target: str) -> list[str]:
    """Each import from a module of unit ``source`` to one of unit ``target`` (a rule the floors do
    not say: two units of which one may import the other, and does not)."""

    def within(module: str, name: str) -> bool:
        return module == name or module.startswith(name + ".")

    return [str(e) for e in imports(root) if within(e.source, source) and within(e.target, target)]


def circles(root: Path) -> list[list[str]]:
    """The import circles between modules: each strongly connected set of two or more modules
    (Tarjan's algorithm), sorted."""
    graph: dict[str, set[str]] = {m: set() for m in modules(root)}
    for e in imports(root):
        graph[e.source].add(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


# ----------------------------------------------------------------------------- the package


def test_imports_only_go_down():
    bad = upward_imports(PACKAGE)
    assert not bad, "imports against the floors (docs/architecture.md, Floors):\n" + "\n".join(bad)


def test_search_imports_nothing_from_evaluation():
    """Search scores with the scoring library, as evaluation does, and does not reach into
    evaluation for it: the floors alone would allow the import."""
    found = imports_between(PACKAGE, "proofmatch.search", "proofmatch.evaluation")
    assert found == [], "search imports evaluation:\n" + "\n".join(found)


def test_no_import_circles():
    found = circles(PACKAGE)
    assert not found, "modules that import each other in a circle:\n" + "\n".join(
        " <-> ".join(c) for c in found
    )


def test_every_unit_is_on_one_floor_and_exists():
    """A new subpackage must be given a floor; a floor may not name a unit that is gone."""
    listed = [u for _, units in FLOORS for u in units]
    assert len(listed) == len(set(listed))
    for module in modules(PACKAGE):
        unit(module, PACKAGE)  # raises for a subpackage on no floor
    for name in listed:
        if name != GROUND:
            sub = PACKAGE / name.split(".", 1)[1]
            assert sub.is_dir() or sub.with_suffix(".py").is_file(), (
                f"{name} is on a floor but does not exist"
            )


def test_the_architecture_doc_shows_these_floors():
    """docs/architecture.md's Floors table shows :data:`FLOORS`, top floor first: a subpackage as
    ``name/``, a top-level module as ``name.py``, and every module of the ground floor by name."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("\n## Floors\n", 1)[1].split("\n## ", 1)[0]
    shown = []
    for row in re.findall(r"^\| *\d+ *\|.*$", section, flags=re.M):
        number, name, units = [cell.strip() for cell in row.strip("|").split("|")[:3]]
        shown.append((int(number), name, sorted(re.findall(r"`([^`]+)`", units))))

    def files(u: str) -> list[str]:
        if u == GROUND:
            return sorted(
                f"{m.split('.')[1]}.py"
                for m in modules(PACKAGE)
                if m.count(".") == 1 and unit(m, PACKAGE) == GROUND
            )
        name = u.split(".", 1)[1]
        return [f"{name}/" if (PACKAGE / name).is_dir() else f"{name}.py"]

    expected = [
        (i + 1, name, sorted(f for u in units for f in files(u)))
        for i, (name, units) in enumerate(FLOORS)
    ]
    assert shown == expected[::-1]


# ----------------------------------------------------------------------------- the checker


def _plant(root: Path, files: dict[str, str]) -> Path:
    pkg = root / "proofmatch"
    for rel, code in {"__init__.py": "", **files}.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(code, encoding="utf-8")
    return pkg


PLANTED = {
    "artifacts.py": "import json\n",
    "cli.py": "import importlib\n",
    "data/__init__.py": "",
    "data/stats.py": "from proofmatch.artifacts import *\n",
    "texmath/__init__.py": "",
    "texmath/lexer.py": "",
    "decoding/__init__.py": "",
    "models/__init__.py": "",
    "evaluation/__init__.py": "",
    "evaluation/tables.py": "from proofmatch.data.stats import x\n",
    "search/__init__.py": "",
    "demo/__init__.py": "",
}


def test_the_checker_passes_a_clean_package(tmp_path):
    pkg = _plant(tmp_path, PLANTED)
    assert upward_imports(pkg) == [] and circles(pkg) == []


@pytest.mark.parametrize(
    "rel, code, culprit",
    [
        # the four this test was written for, planted again
        (
            "data/stats.py",
            "def main():\n    from proofmatch.evaluation.tables import write_table1\n",
            "proofmatch/data/stats.py:2: proofmatch.data.stats imports proofmatch.evaluation.tables",
        ),
        (
            "data/latex.py",
            "from proofmatch.evaluation import render\n",
            "proofmatch.data.latex imports proofmatch.evaluation",
        ),
        (
            "models/train.py",
            "from ..evaluation.tables import x\n",
            "proofmatch.models.train imports proofmatch.evaluation.tables",
        ),
        (
            "search/query.py",
            "import proofmatch.demo\n",
            "proofmatch.search.query imports proofmatch.demo",
        ),
        # the ground floor importing a library; a library importing a sibling on its floor
        (
            "config.py",
            "from proofmatch.data import stats\n",
            "proofmatch.config imports proofmatch.data.stats",
        ),
        (
            "data/views.py",
            "from proofmatch.texmath.lexer import X\n",
            "proofmatch.data.views imports proofmatch.texmath.lexer",
        ),
    ],
)
def test_the_checker_finds_an_upward_import(tmp_path, rel, code, culprit):
    pkg = _plant(tmp_path, {**PLANTED, rel: code})
    bad = upward_imports(pkg)
    assert len(bad) == 1 and culprit in bad[0], bad


def test_the_checker_finds_an_import_between_two_units(tmp_path):
    code = "def f():\n    from proofmatch.evaluation.tables import x\n"
    pkg = _plant(tmp_path, {**PLANTED, "search/query.py": code})
    assert upward_imports(pkg) == []  # the floors allow it
    assert imports_between(pkg, "proofmatch.search", "proofmatch.evaluation") == [
        "proofmatch/search/query.py:2: proofmatch.search.query imports proofmatch.evaluation.tables"
    ]


def test_the_checker_finds_a_circle_and_an_unplaced_package(tmp_path):
    pkg = _plant(
        tmp_path,
        {
            **PLANTED,
            "data/stats.py": "from . import filters\n",
            "data/filters.py": "def f():\n    import proofmatch.data.stats\n",
        },
    )
    assert circles(pkg) == [["proofmatch.data.filters", "proofmatch.data.stats"]]
    pkg = _plant(tmp_path, {**PLANTED, "extra/__init__.py": "", "extra/mod.py": ""})
    with pytest.raises(LookupError, match="proofmatch.extra is on no floor"):
        upward_imports(pkg)
