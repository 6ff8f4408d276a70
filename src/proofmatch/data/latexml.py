"""One article through LaTeXML: its main file, one ``latexmlc`` run under a hard time limit, and
what LaTeXML's log says about it (used per article by :mod:`proofmatch.data.latex`).

The conversion mode is the one of the Stacks chapters that ``config/stacks.yaml`` reads
(:mod:`proofmatch.data.stacks` runs the same command)::

    latexmlc --format=xhtml --pmml --cmml --mathtex --nocomments --timeout=T --log=... --dest=...

i.e. XHTML with parallel presentation + content MathML and the TeX annotation, as arXiv's
LaTeXML-based HTML. Two options are added, ``--nographicimages --nopictureimages``: no ImageMagick,
Ghostscript or ``latex`` subprocess ever runs on an untrusted figure (extraction drops images
anyway); the math markup is unchanged.

**Main file**: a ``.tex``/``.ltx`` file with both ``\\documentclass`` (or LaTeX 2.09's
``\\documentstyle``) and ``\\begin{document}`` outside ``%`` comments. arXiv's ``00README.json``
(``"usage": "toplevel"``) or ``00README.XXX`` (``toplevelfile``) wins; otherwise the shallowest
candidate, not a ``standalone`` figure, then the largest, then by name.

An article LaTeXML cannot convert raises :class:`~proofmatch.data.archives.ArticleError` with its
reason (``no_main_file``, ``timeout``, ``latexml_fatal``); :mod:`proofmatch.data.latex` counts it.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

from proofmatch.data.archives import ArticleError

log = logging.getLogger(__name__)

LATEXMLC = "latexmlc"
#: The Stacks chapters' mode (presentation + content MathML + TeX annotation) without image
#: conversion; ``--timeout``, ``--log`` and ``--dest`` are added per article.
LATEXMLC_OPTIONS = (
    "--format=xhtml",
    "--pmml",
    "--cmml",
    "--mathtex",
    "--nocomments",
    "--nographicimages",
    "--nopictureimages",
)
INSTALL_HINT = (
    "LaTeXML is not installed (no `latexmlc` on PATH): run `bash scripts/install.sh --latex`, "
    "or install the Debian/Ubuntu package yourself: `sudo apt-get install latexml`"
)

#: Extra seconds after LaTeXML's own --timeout before the process group is killed.
KILL_GRACE_S = 10.0

_MAIN_SUFFIXES = (".tex", ".ltx")
_DOCCLASS = re.compile(rb"^[^%\n]*?\\document(?:class|style)\b", re.M)
_BEGIN_DOC = re.compile(rb"^[^%\n]*?\\begin\s*\{document\}", re.M)
_STANDALONE = re.compile(rb"^[^%\n]*?\\documentclass\s*(?:\[[^\]]*\])?\s*\{standalone\}", re.M)
_STATUS = re.compile(r"^Status:conversion:(\d)", re.M)
_FATAL = re.compile(r"^Fatal:(\S+)[ \t]*(.*)$", re.M)
_SUMMARY = re.compile(r"^Conversion complete:[ \t]*(.*)$", re.M)

# --------------------------------------------------------------------------------------------
# main file


def _readme_toplevel(root: Path) -> set[str]:
    """Main files named by arXiv's ``00README.json`` or ``00README.XXX`` (relative paths)."""
    named: set[str] = set()
    js = root / "00README.json"
    if js.is_file():
        try:
            data = json.loads(js.read_text(errors="replace"))
            for src in data.get("sources", []) if isinstance(data, dict) else []:
                if (
                    isinstance(src, dict)
                    and src.get("usage") == "toplevel"
                    and isinstance(src.get("filename"), str)
                ):
                    named.add(src["filename"])
        except json.JSONDecodeError:
            log.warning("%s is not valid JSON; ignored", js)
    xxx = root / "00README.XXX"
    if xxx.is_file():
        for line in xxx.read_text(errors="replace").splitlines():
            words = line.split()
            if len(words) >= 2 and words[1] == "toplevelfile":
                named.add(words[0])
    return named


def find_main_file(root: str | os.PathLike) -> tuple[Path, int]:
    """(main file, number of candidates) of an unpacked article (module docstring for the rule)."""
    root = Path(root)
    candidates: list[tuple[tuple, Path]] = []
    for path in sorted(root.rglob("*")):
        if path.suffix.lower() not in _MAIN_SUFFIXES or not path.is_file():
            continue
        head = path.read_bytes()
        if _DOCCLASS.search(head) and _BEGIN_DOC.search(head):
            rel = path.relative_to(root)
            candidates.append(
                ((len(rel.parts), bool(_STANDALONE.search(head)), -len(head), rel.as_posix()), path)
            )
    if not candidates:
        raise ArticleError(
            "no_main_file", "no .tex file has both \\documentclass and \\begin{document}"
        )
    named = _readme_toplevel(root)
    chosen = [c for c in candidates if c[0][3] in named]
    return min(chosen or candidates)[1], len(candidates)


# --------------------------------------------------------------------------------------------
# LaTeXML


def latexmlc_path() -> str:
    exe = shutil.which(LATEXMLC)
    if exe is None:
        raise RuntimeError(INSTALL_HINT)
    return exe


def options_fingerprint(exe: str) -> str:
    """LaTeXML's version and the options: a cached conversion is reused only when both match."""
    version = subprocess.run([exe, "--VERSION"], capture_output=True, text=True, timeout=120)
    text = (version.stdout + version.stderr).strip().splitlines()
    return json.dumps({"latexml": text[0] if text else "", "options": list(LATEXMLC_OPTIONS)})


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_latexml(
    exe: str, main: Path, out_xhtml: Path, log_path: Path, timeout_s: float
) -> dict[str, Any]:
    """Convert ``main`` with LaTeXML; return its status, errors and warnings.

    LaTeXML gets ``--timeout``; the whole process group is killed ``KILL_GRACE_S`` later if it has
    not ended (post-processing is not covered by LaTeXML's own cap). Raises ``timeout`` or
    ``latexml_fatal``; errors short of fatal are counted, as ar5iv keeps such articles.
    """
    out_xhtml.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        exe,
        *LATEXMLC_OPTIONS,
        f"--timeout={max(1, math.ceil(timeout_s))}",
        f"--log={log_path.resolve()}",
        f"--dest={out_xhtml.resolve()}",
        main.name,
    ]
    console = out_xhtml.parent / "latexmlc.console"
    with open(console, "wb") as fh:
        proc = subprocess.Popen(
            cmd,
            cwd=main.parent,
            stdin=subprocess.DEVNULL,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            rc = proc.wait(timeout=timeout_s + KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait()
            raise ArticleError("timeout", f"killed after {timeout_s + KILL_GRACE_S:g} s") from None
        finally:
            _kill_group(proc)  # anything LaTeXML left behind
    text = log_path.read_text(errors="replace") if log_path.is_file() else ""
    extra = console.read_text(errors="replace").strip()
    if extra:  # a Perl crash prints here, not to --log
        with open(log_path, "a") as fh:
            fh.write("\n--- latexmlc console ---\n" + extra[-20000:] + "\n")
    statuses = _STATUS.findall(text)
    status = int(statuses[-1]) if statuses else None
    fatal = _FATAL.search(text)
    if fatal and fatal.group(1).startswith("timeout:timedout"):
        raise ArticleError(
            "timeout", f"LaTeXML --timeout={math.ceil(timeout_s)}: {fatal.group(2).strip()}"
        )
    if fatal or rc != 0 or status == 3:
        detail = (
            f"Fatal:{fatal.group(1)} {fatal.group(2).strip()}" if fatal else f"exit status {rc}"
        )
        raise ArticleError("latexml_fatal", detail)
    if not out_xhtml.is_file() or out_xhtml.stat().st_size == 0:
        raise ArticleError("latexml_fatal", "LaTeXML wrote no output")
    summary = _SUMMARY.search(text)
    line = summary.group(1).strip() if summary else ""
    count = lambda word: int(m.group(1)) if (m := re.search(rf"(\d+) {word}", line)) else 0  # noqa: E731
    return {
        "latexml_status": status,
        "latexml_summary": line,
        "errors": count("error"),
        "warnings": count("warning"),
    }
