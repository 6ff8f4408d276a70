"""``proofmatch stacks``: the Stacks project's chapters as a LaTeXML XHTML+MathML corpus, from its
public sources, so that ``config/stacks.yaml`` runs without a converted copy at hand
(docs/data.md, "The Stacks corpus from its sources").

The Stacks project is one LaTeX tree (https://github.com/stacks/stacks-project, GFDL 1.2 or
later): a chapter ``CH.tex`` inputs ``preamble.tex`` and ``chapters.tex`` and ends with
``\\bibliography{my}``. Each chapter is converted on its own:

1. the build folder gets every ``*.tex`` and ``my.bib`` of the tree but not ``stacks-project.cls``
   (``preamble.tex`` then falls back to ``\\documentclass{amsart}``, which LaTeXML binds natively),
   and a stub binding ``xr-hyper.sty.ltxml`` (a chapter alone cannot resolve the
   ``\\externaldocument`` lines of the preamble);
2. the bibliography is converted once: ``latexml --preload=amsmath.sty --preload=amssymb.sty
   --dest=my.bib.xml my.bib``;
3. each chapter: ``latexmlc --format=xhtml --pmml --cmml --mathtex --bibliography=my.bib.xml
   --nocomments --timeout=T --log=... --dest=... CH.tex`` under ``nice -n 10`` and a hard limit of
   ``T`` + 20 s, then ``gzip -9 -n`` into ``OUT/xhtml/CH.xhtml.gz``.

The chapters are the ``LIJST`` of the tree's ``Makefile`` (all chapters; not ``fdl``, ``index``,
``book``), smallest first. A chapter over ``--split-above`` bytes of LaTeX (600 KB: ``algebra``,
``more-algebra``, ``more-morphisms``, ``etale-cohomology``, ``chow``) is cut at ``\\section`` into
parts of about ``--part-size`` bytes (300 KB), each the chapter's header (up to
``\\tableofcontents``), a run of whole sections and its footer (from ``\\input{chapters}``),
converted as the article ``stacks-CH-partNN``; ``metadata.csv``'s ``chapter`` column keeps the
parts of one chapter together (the Unmixed split needs it). A chapter that is already in ``OUT``
is not converted again, so an interrupted build goes on where it stopped; a chapter LaTeXML cannot
convert in time is listed in ``OUT/build.json`` and left out.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

REPOSITORY = "https://github.com/stacks/stacks-project"
#: The commit of the converted Stacks corpus that ``config/stacks.yaml`` reads by default.
COMMIT = "4ac4815d5a00dc2eacab7824cf4e4baafe2773ac"
NOT_CHAPTERS = {"fdl", "index", "book"}
SPLIT_ABOVE = 600_000
PART_SIZE = 300_000
TIMEOUT_S = 1200
KILL_GRACE_S = 20
LICENSE = "GFDL-1.2+"
METADATA_COLUMNS = [
    "article_id",
    "file",
    "title",
    "primary_category",
    "categories",
    "language",
    "source",
    "license",
    "bytes",
    "chapter",
]
XR_HYPER_STUB = """package LaTeXML::Package::Pool;
use strict;
use warnings;
use LaTeXML::Package;
DefMacro('\\externaldocument[]{}', '');
DefMacro('\\externalcitedocument[]{}', '');
1;
"""
LATEXMLC_OPTIONS = (
    "--format=xhtml",
    "--pmml",
    "--cmml",
    "--mathtex",
    "--bibliography=my.bib.xml",
    "--nocomments",
)


class StacksError(RuntimeError):
    """A source tree that is not the Stacks project's, or a missing tool."""


@dataclass
class Unit:
    """One article to convert: a whole chapter or one part of a split one."""

    article_id: str
    stem: str  # the .tex file in the build folder
    chapter: str
    title: str


def chapter_list(source: Path) -> list[str]:
    """The chapters of the tree's Makefile ``LIJST`` (without fdl, index, book), else every
    ``*.tex`` that inputs the preamble."""
    makefile = source / "Makefile"
    if makefile.exists():
        text = makefile.read_text(encoding="utf-8", errors="replace").replace("\\\n", " ")
        m = re.search(r"^LIJST\s*=\s*(.*)$", text, re.M)
        if m:
            return [
                c
                for c in m.group(1).split()
                if c not in NOT_CHAPTERS and (source / f"{c}.tex").exists()
            ]
    return sorted(
        p.stem
        for p in source.glob("*.tex")
        if p.stem not in NOT_CHAPTERS
        and "\\input{preamble}" in p.read_text(encoding="utf-8", errors="replace")
    )


def chapter_title(tex: str, fallback: str) -> str:
    m = re.search(r"\\title\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}", tex)
    return re.sub(r"\s+", " ", m.group(1)).strip() if m else fallback


def split_chapter(tex: str, part_size: int = PART_SIZE) -> list[str]:
    """A chapter cut at ``\\section`` into parts of about ``part_size`` bytes, each with the
    chapter's header (through the ``\\tableofcontents`` line) and footer (from ``\\input{chapters}``).
    One part when the chapter has no such header, footer or sections."""
    lines = tex.splitlines(keepends=True)
    head_end = next((i + 1 for i, line in enumerate(lines) if "\\tableofcontents" in line), None)
    foot_start = next(
        (
            i
            for i in range(len(lines) - 1, -1, -1)
            if lines[i].lstrip().startswith("\\input{chapters}")
        ),
        None,
    )
    if head_end is None or foot_start is None or foot_start <= head_end:
        return [tex]
    header, body, footer = (
        "".join(lines[:head_end]),
        lines[head_end:foot_start],
        "".join(lines[foot_start:]),
    )
    sections: list[list[str]] = [[]]
    for line in body:
        if line.startswith("\\section") and sections[-1]:
            sections.append([])
        sections[-1].append(line)
    parts: list[str] = []
    current = ""
    for section in ("".join(s) for s in sections):
        if current and len((current + section).encode()) > part_size:
            parts.append(current)
            current = ""
        current += section
    if current:
        parts.append(current)
    return [header + part + footer for part in parts]


def prepare_build(source: Path, build: Path) -> None:
    """The build folder: the tree's ``*.tex`` and ``my.bib`` (no ``stacks-project.cls``) and the
    ``xr-hyper`` stub."""
    if not (source / "preamble.tex").exists() or not (source / "my.bib").exists():
        raise StacksError(
            f"{source} is not a Stacks project tree (no preamble.tex or my.bib); clone {REPOSITORY}"
        )
    build.mkdir(parents=True, exist_ok=True)
    for path in [*source.glob("*.tex"), source / "my.bib"]:
        shutil.copy2(path, build / path.name)
    (build / "xr-hyper.sty.ltxml").write_text(XR_HYPER_STUB, encoding="utf-8")


def plan_units(
    source: Path,
    build: Path,
    chapters: list[str],
    split_above: int = SPLIT_ABOVE,
    part_size: int = PART_SIZE,
) -> list[Unit]:
    """The articles to convert, smallest chapter first; split chapters' parts are written to the
    build folder as ``CH-partNN.tex``."""
    units: list[Unit] = []
    for ch in sorted(chapters, key=lambda c: ((source / f"{c}.tex").stat().st_size, c)):
        tex = (source / f"{ch}.tex").read_text(encoding="utf-8", errors="replace")
        title = chapter_title(tex, ch)
        parts = split_chapter(tex, part_size) if len(tex.encode()) > split_above else [tex]
        if len(parts) == 1:
            units.append(Unit(f"stacks-{ch}", ch, f"stacks-{ch}", title))
            continue
        for i, part in enumerate(parts, 1):
            stem = f"{ch}-part{i:02d}"
            (build / f"{stem}.tex").write_text(part, encoding="utf-8")
            units.append(
                Unit(f"stacks-{stem}", stem, f"stacks-{ch}", f"{title} (part {i} of {len(parts)})")
            )
    return units


def convert_bibliography(build: Path, latexml: str = "latexml") -> None:
    if (build / "my.bib.xml").exists():
        return
    run = subprocess.run(
        [latexml, "--preload=amsmath.sty", "--preload=amssymb.sty", "--dest=my.bib.xml", "my.bib"],
        cwd=build,
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0 or not (build / "my.bib.xml").exists():
        raise StacksError(
            f"latexml could not convert my.bib (exit {run.returncode}): {run.stderr[-500:]}"
        )


def convert_unit(
    unit: Unit, build: Path, out: Path, timeout_s: int, latexmlc: str = "latexmlc"
) -> dict:
    """One article through ``latexmlc`` into ``out/xhtml/ID.xhtml.gz``; its outcome and seconds."""
    dest = out / "xhtml" / f"{unit.article_id}.xhtml.gz"
    if dest.exists():
        return {"article_id": unit.article_id, "status": "kept", "seconds": 0.0}
    (build / "logs").mkdir(exist_ok=True)
    xhtml = build / "out" / unit.stem / f"{unit.stem}.xhtml"
    xhtml.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        "nice",
        "-n",
        "10",
        latexmlc,
        *LATEXMLC_OPTIONS,
        f"--timeout={timeout_s}",
        f"--log=logs/{unit.stem}.latexml.log",
        f"--dest={xhtml.relative_to(build)}",
        f"{unit.stem}.tex",
    ]
    start = time.monotonic()
    try:
        run = subprocess.run(
            cmd,
            cwd=build,
            capture_output=True,
            text=True,
            timeout=timeout_s + KILL_GRACE_S,
            check=False,
        )
        status = (
            "converted"
            if run.returncode == 0 and xhtml.exists()
            else f"failed (exit {run.returncode})"
        )
    except subprocess.TimeoutExpired:
        status = "timeout"
    seconds = round(time.monotonic() - start, 1)
    if status == "converted":
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_suffix(".tmp")
        with open(xhtml, "rb") as src, open(tmp, "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=raw, mtime=0) as gz:
                shutil.copyfileobj(src, gz)
        os.replace(tmp, dest)
    log.info("%s: %s in %.0f s", unit.article_id, status, seconds)
    return {"article_id": unit.article_id, "status": status, "seconds": seconds}


def write_metadata(units: list[Unit], out: Path, source_note: str) -> int:
    """``out/metadata.csv`` for the converted units (the columns of the converted Stacks corpus's); their count."""
    rows = []
    for u in units:
        path = out / "xhtml" / f"{u.article_id}.xhtml.gz"
        if path.exists():
            rows.append(
                {
                    "article_id": u.article_id,
                    "file": f"xhtml/{path.name}",
                    "title": u.title,
                    "primary_category": "math.AG",
                    "categories": "math.AG",
                    "language": "en",
                    "source": source_note,
                    "license": LICENSE,
                    "bytes": path.stat().st_size,
                    "chapter": u.chapter,
                }
            )
    with open(out / "metadata.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=METADATA_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


def source_commit(source: Path) -> str | None:
    try:
        run = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return run.stdout.strip() or None if run.returncode == 0 else None


def build_corpus(
    source: Path,
    out: Path,
    chapters: list[str] | None = None,
    jobs: int = 2,
    timeout_s: int = TIMEOUT_S,
    split_above: int = SPLIT_ABOVE,
    part_size: int = PART_SIZE,
    deadline_s: float | None = None,
) -> dict:
    """Convert the chapters of the tree ``source`` into ``out`` (module docstring); the report."""
    for tool in ("latexml", "latexmlc"):
        if shutil.which(tool) is None:
            raise StacksError(
                f"no `{tool}` on PATH: install LaTeXML (`bash scripts/install.sh --latex`, or "
                "`sudo apt-get install latexml texlive-pictures`)"
            )
    known = chapter_list(source)
    wanted = known if not chapters else chapters
    unknown = sorted(set(wanted) - set(known))
    if unknown:
        raise StacksError(f"not chapters of {source}: {', '.join(unknown)}")
    build = out / "build"
    prepare_build(source, build)
    units = plan_units(source, build, wanted, split_above, part_size)
    start = time.monotonic()
    convert_bibliography(build)
    results: list[dict] = []

    def one(unit: Unit) -> dict:
        left = None if deadline_s is None else deadline_s - (time.monotonic() - start)
        if left is not None and left < 60:
            return {
                "article_id": unit.article_id,
                "status": "not started (deadline)",
                "seconds": 0.0,
            }
        limit = timeout_s if left is None else int(min(timeout_s, left))
        return convert_unit(unit, build, out, limit)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(one, units))
    commit = source_commit(source)
    note = f"Stacks project, commit {commit}" if commit else "Stacks project"
    n = write_metadata(units, out, note)
    if (source / "COPYING").exists():
        shutil.copy2(source / "COPYING", out / "COPYING")
    report = {
        "source": str(source),
        "commit": commit,
        "chapters": len(wanted),
        "units": len(units),
        "articles": n,
        "seconds": round(time.monotonic() - start, 1),
        "jobs": jobs,
        "timeout_s": timeout_s,
        "results": results,
    }
    (out / "build.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--source",
        required=True,
        type=Path,
        help=f"a checkout of {REPOSITORY} (the default Stacks corpus: commit {COMMIT[:12]})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("corpora/stacks"),
        help="corpus folder written: xhtml/, metadata.csv, COPYING, build.json (build/ is scratch)",
    )
    parser.add_argument(
        "--chapters", nargs="+", help="only these chapter stems, e.g. sets schemes (default: all)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="chapters converted at once")
    parser.add_argument(
        "--timeout", type=int, default=TIMEOUT_S, help="seconds one chapter may take"
    )
    parser.add_argument(
        "--deadline",
        type=float,
        help="seconds for the whole build; later chapters are left out (default: none)",
    )
    parser.add_argument(
        "--split-above",
        type=int,
        default=SPLIT_ABOVE,
        help="bytes of LaTeX above which a chapter is cut into parts",
    )
    parser.add_argument(
        "--part-size", type=int, default=PART_SIZE, help="bytes of LaTeX in one part"
    )


def main(args: argparse.Namespace) -> int:
    from proofmatch.logs import setup_logging

    setup_logging(None)
    try:
        report = build_corpus(
            args.source,
            args.out,
            args.chapters,
            args.jobs,
            args.timeout,
            args.split_above,
            args.part_size,
            args.deadline,
        )
    except StacksError as err:
        print(f"proofmatch stacks: {err}", file=sys.stderr)
        return 2
    bad = [r for r in report["results"] if r["status"] not in ("converted", "kept")]
    print(
        f"{report['articles']} articles from {report['chapters']} chapters in {args.out} "
        f"({report['seconds']:.0f} s); {len(bad)} not converted (build.json)"
    )
    return 0
