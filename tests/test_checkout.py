"""A checkout runs its own package: the Snakefile and every job it starts import ``proofmatch``
from the checkout's ``src/``, not from whichever copy is installed (else a second clone would run
the first clone's code)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # it runs a job (the probe), so it is a workflow run
def test_jobs_import_the_checkouts_own_package(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    clone.mkdir()
    shutil.copy(REPO / "Snakefile", clone)
    for name in ("config", "workflow", "src"):
        shutil.copytree(REPO / name, clone / name, ignore=shutil.ignore_patterns("__pycache__"))
    # a marker only this copy of the package has
    (clone / "src" / "proofmatch" / "_clone_marker.py").write_text("CLONE = True\n")
    (clone / "probe.smk").write_text(
        'include: "Snakefile"\n\n\n'
        "rule probe:\n"
        '    output:\n        "probe.txt",\n'
        "    shell:\n"
        f"        \"{sys.executable} -c 'import proofmatch._clone_marker, proofmatch; "
        "print(proofmatch.__file__)' > {output}\"\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", "probe.smk", "-c1", "probe.txt"],
        cwd=clone,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    imported = Path((clone / "probe.txt").read_text().strip()).resolve()
    assert imported.is_relative_to((clone / "src").resolve())
