"""envs/proofmatch.yaml, the conda environment of every rule (``snakemake --sdm conda``), agrees
with pyproject.toml: the same packages, compatible pins, torch pinned, a Python the package allows,
and nothing that breaks once Snakemake copies the file away.

Why a lint and not a solve: CI has no conda and no network to solve against, and Snakemake builds
the environment from this file alone (hashed by its content), so a pin changed in pyproject.toml
and not here would silently give the rules other libraries than the tests ran with.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
ENV = REPO / "envs" / "proofmatch.yaml"
# pyproject dependencies that build native code, and the conda packages their build needs
NATIVE_BUILDS = {"pyicu": ("icu", "pkg-config", "cxx-compiler"), "pycld2": ("cxx-compiler",)}


def pyproject() -> dict[str, Any]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def environment(text: str | None = None) -> tuple[dict[str, str], list[str]]:
    """(conda package -> its version spec or "", pip lines) of the environment file."""
    env = yaml.safe_load(ENV.read_text() if text is None else text)
    conda: dict[str, str] = {}
    pip: list[str] = []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            pip += [str(line) for line in dep.get("pip", [])]
        else:
            name, _, spec = re.match(r"([A-Za-z0-9_.\-]+)\s*(=*)\s*(.*)", str(dep)).groups()
            conda[name] = spec
    return conda, pip


def disagreements(project: dict[str, Any], conda: dict[str, str], pip: list[str]) -> list[str]:
    """Every way the environment departs from the project's dependencies (empty: it agrees)."""
    problems = []
    wanted = {canonicalize_name(r.name): r for r in map(Requirement, project["dependencies"])}
    local = [line for line in pip if line.startswith("-") or "/" in line or line in (".", "..")]
    problems += [
        f"pip line {line!r}: a local path or option; Snakemake copies this file to "
        ".snakemake/conda/, where no relative path leads to the checkout"
        for line in local
    ]
    given = {
        canonicalize_name(r.name): r for r in map(Requirement, [p for p in pip if p not in local])
    }
    problems += [
        f"{n}: in pyproject.toml, not in the environment" for n in sorted(set(wanted) - set(given))
    ]
    problems += [
        f"{n}: in the environment, not in pyproject.toml" for n in sorted(set(given) - set(wanted))
    ]
    for name in sorted(set(wanted) & set(given)):
        want, have = wanted[name].specifier, given[name].specifier
        exact = [s.version for s in have if s.operator == "=="]
        if str(have) != str(want) and not (exact and Version(exact[0]) in want):
            problems.append(
                f"{name}: environment {have or 'unpinned'} vs pyproject.toml {want or 'unpinned'}"
            )
        if str(given[name].marker) != str(wanted[name].marker):  # e.g. pyicu-wheels or pyicu
            problems.append(
                f"{name}: environment marker {given[name].marker} vs pyproject.toml "
                f"{wanted[name].marker}"
            )
    torch = wanted.get("torch")
    if torch is None or [s.operator for s in torch.specifier] != ["=="]:
        problems.append(
            "torch: pyproject.toml must pin one version (a bare torch pulls another build)"
        )
    python = conda.get("python", "")
    if not python or Version(python.rstrip(".*")) not in SpecifierSet(project["requires-python"]):
        problems.append(
            f"python {python or 'unpinned'}: not within requires-python {project['requires-python']}"
        )
    for package, needs in NATIVE_BUILDS.items():
        if package in wanted:
            problems += [
                f"{package} builds against {n}: add it to the conda dependencies"
                for n in needs
                if n not in conda
            ]
    return problems


def test_environment_agrees_with_pyproject():
    conda, pip = environment()
    assert disagreements(pyproject(), conda, pip) == []


def test_every_rule_uses_this_environment():
    """The rules' ``conda:`` (workflow/rules/common.smk's CONDA, relative to the rule files) is this file."""
    common = (REPO / "workflow/rules/common.smk").read_text()
    (conda,) = re.findall(r'^CONDA = "(.+)"$', common, flags=re.M)
    assert (REPO / "workflow/rules" / conda).resolve() == ENV
    for rules in (REPO / "workflow/rules").glob("*.smk"):
        assert set(re.findall(r"^ +conda:\n +(\S+)$", rules.read_text(), flags=re.M)) <= {
            "CONDA"
        }, rules.name


@pytest.mark.parametrize(
    "edit, complaint",
    [
        (
            lambda t: t.replace("      - pandas==3.1.1\n", ""),
            "pandas: in pyproject.toml, not in the environment",
        ),
        (
            lambda t: t.replace("pandas==3.1.1", "pandas==3.0.0"),
            "pandas: environment ==3.0.0 vs pyproject.toml ==3.1.1",
        ),
        (
            lambda t: t.replace("numpy>=1.26", "numpy==1.25.0"),
            "numpy: environment ==1.25.0 vs pyproject.toml >=1.26",
        ),
        (
            lambda t: t.replace("      - six>=1.16\n", "      - six>=1.16\n      - requests\n"),
            "requests: in the environment",
        ),
        (
            lambda t: t.replace("  - pip:\n", "  - pip:\n      - -e ..\n"),
            "pip line '-e ..': a local path",
        ),
        (
            lambda t: t.replace("python=3.11", "python=3.10"),
            "python 3.10: not within requires-python",
        ),
        (lambda t: t.replace("  - icu ", "  - zlib "), "pyicu builds against icu"),
        (
            lambda t: t.replace('"pyicu>=2.12; ', "\"pyicu>=2.12; python_version >= '3.11' and "),
            "pyicu: environment marker python_version",
        ),
    ],
)
def test_the_lint_catches_a_drifted_environment(edit, complaint):
    text = ENV.read_text()
    drifted = edit(text)
    assert drifted != text
    conda, pip = environment(drifted)
    problems = disagreements(pyproject(), conda, pip)
    assert any(complaint in p for p in problems), problems


def test_the_lint_wants_torch_pinned():
    project = pyproject()
    loose = dict(
        project,
        dependencies=[d.replace("torch==2.13.0", "torch>=2") for d in project["dependencies"]],
    )
    conda, pip = environment()
    assert any(
        p.startswith("torch: pyproject.toml must pin") for p in disagreements(loose, conda, pip)
    )


def test_the_xdist_groups_take_effect(request):
    """Under pyproject.toml's ``-n 2 --dist loadgroup`` xdist ends each test's id with its group
    (tests/conftest.py). With pytest 9.2, xdist 3.8 silently stopped doing so
    (pytest-dev/pytest-xdist#1386): every test became a group of its own and both workers built
    the demo's smoke run, so pyproject.toml keeps pytest below 9.2."""
    if not hasattr(request.config, "workerinput"):
        pytest.skip("not on an xdist worker (-n 0 or -p no:xdist)")
    assert request.node.nodeid.endswith("@test_environment.py"), request.node.nodeid
