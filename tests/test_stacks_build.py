"""``proofmatch stacks``: the Stacks corpus built from a Stacks-project tree (a miniature one here,
written like the real tree: preamble with the amsart fallback, chapters.tex, my.bib, Makefile
``LIJST``). Chapter list, splitting at ``\\section`` with header and footer, and the metadata run
with stand-in ``latexml``/``latexmlc`` scripts; one real LaTeXML build (skipped without LaTeXML,
a failure with PROOFMATCH_REQUIRE_LATEXML=1) checks that the result has the Stacks corpus's
markup (theorem and proof divs, TeX annotations).
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

from proofmatch import cli
from proofmatch.data import stacks

PREAMBLE = r"""\IfFileExists{stacks-project.cls}{%
\documentclass{stacks-project}
}{%
\documentclass{amsart}
}
\usepackage{amssymb}
\usepackage{hyperref}
\usepackage{xr-hyper}
\externaldocument[sets-]{sets}
\newtheorem{theorem}[subsection]{Theorem}
\newtheorem{lemma}[subsection]{Lemma}
\def\Spec{\mathop{\mathrm{Spec}}}
"""
CHAPTER = r"""\input{preamble}
\begin{document}
\title{%(title)s}
\maketitle
\phantomsection
\label{section-phantom}
\tableofcontents
%(sections)s
\input{chapters}
\bibliography{my}
\bibliographystyle{amsalpha}
\end{document}
"""
SECTION = r"""\section{Section %(i)d}
\label{section-%(i)d}
\begin{lemma}
\label{lemma-%(i)d}
Let $R$ be a ring and $M = \bigoplus_{i} M_i$ a module. Then $\Spec(R)$ is quasi-compact%(pad)s.
\end{lemma}
\begin{proof}
See \cite{Book}: $M \otimes_R N$ is $0$.
\end{proof}
"""


def make_tree(root: Path, sections: dict[str, int], pad: int = 0) -> Path:
    root.mkdir(parents=True)
    (root / "preamble.tex").write_text(PREAMBLE)
    (root / "chapters.tex").write_text("\\section{Other chapters}\n")
    (root / "my.bib").write_text("@book{Book, author={A. Author}, title={A Book}, year={2000}}\n")
    (root / "stacks-project.cls").write_text("% not for LaTeXML\n")
    (root / "COPYING").write_text("GNU Free Documentation License\n")
    (root / "Makefile").write_text(
        "LIJST = " + " \\\n\t".join([*sections, "fdl", "index"]) + "\n\nall:\n"
    )
    for name, n in sections.items():
        body = "".join(SECTION % {"i": i, "pad": " " * pad} for i in range(1, n + 1))
        (root / f"{name}.tex").write_text(
            CHAPTER % {"title": name.title() + " Theory", "sections": body}
        )
    (root / "fdl.tex").write_text("\\input{preamble}\n")
    return root


def test_chapter_list_title_and_split(tmp_path):
    tree = make_tree(tmp_path / "src", {"sets": 2, "algebra": 6}, pad=400)
    assert stacks.chapter_list(tree) == ["sets", "algebra"]
    tex = (tree / "algebra.tex").read_text()
    assert stacks.chapter_title(tex, "x") == "Algebra Theory"
    parts = stacks.split_chapter(tex, part_size=1300)  # two sections of about 630 bytes a part
    assert len(parts) == 3
    for part in parts:
        assert part.startswith("\\input{preamble}") and "\\tableofcontents" in part
        assert part.rstrip().endswith("\\end{document}") and "\\input{chapters}" in part
    assert sum(p.count("\\begin{lemma}") for p in parts) == 6
    assert stacks.split_chapter("no header", 10) == ["no header"]


def _fake_tools(bin_dir: Path) -> None:
    """latexml writes the --dest file; latexmlc writes a tiny XHTML at --dest (fails on 'bad')."""
    bin_dir.mkdir()
    (bin_dir / "latexml").write_text(
        '#!/bin/sh\nfor a; do case "$a" in --dest=*) echo "<bib/>" > "${a#--dest=}";; esac; done\n'
    )
    (bin_dir / "latexmlc").write_text(
        '#!/bin/sh\nfor a; do case "$a" in --dest=*) d="${a#--dest=}";; *.tex) t="$a";; esac; done\n'
        'case "$t" in bad*) exit 3;; esac\n'
        'mkdir -p "$(dirname "$d")"; echo "<html><body>$t</body></html>" > "$d"\n'
    )
    for tool in ("latexml", "latexmlc"):
        (bin_dir / tool).chmod(0o755)


def test_build_with_stand_in_tools(tmp_path, monkeypatch, capsys):
    tree = make_tree(tmp_path / "src", {"sets": 1, "algebra": 6, "bad": 1}, pad=400)
    _fake_tools(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "corpus"
    assert (
        cli.main(
            [
                "stacks",
                "--source",
                str(tree),
                "--out",
                str(out),
                "--split-above",
                "2000",
                "--part-size",
                "1300",
                "--jobs",
                "2",
            ]
        )
        == 0
    )
    assert "4 articles from 3 chapters" in capsys.readouterr().out
    build = out / "build"
    assert not (build / "stacks-project.cls").exists() and (build / "xr-hyper.sty.ltxml").exists()
    rows = list(csv.DictReader(open(out / "metadata.csv")))
    ids = {
        r["article_id"]: r for r in rows
    }  # bad.tex fails in the stand-in: listed in build.json, left out
    assert set(ids) == {
        "stacks-sets",
        "stacks-algebra-part01",
        "stacks-algebra-part02",
        "stacks-algebra-part03",
    }
    report = json.loads((out / "build.json").read_text())
    assert {r["article_id"]: r["status"] for r in report["results"]}[
        "stacks-bad"
    ] == "failed (exit 3)"
    assert ids["stacks-algebra-part02"]["chapter"] == "stacks-algebra"
    assert ids["stacks-algebra-part02"]["title"] == "Algebra Theory (part 2 of 3)"
    assert (
        ids["stacks-sets"]["license"] == "GFDL-1.2+"
        and ids["stacks-sets"]["categories"] == "math.AG"
    )
    with gzip.open(out / "xhtml" / "stacks-sets.xhtml.gz", "rt") as fh:
        assert "sets.tex" in fh.read()
    assert (out / "COPYING").exists()
    # a second build converts nothing again; an unknown chapter is refused
    assert cli.main(["stacks", "--source", str(tree), "--out", str(out), "--chapters", "sets"]) == 0
    assert cli.main(["stacks", "--source", str(tree), "--out", str(out), "--chapters", "nope"]) == 2
    assert "not chapters of" in capsys.readouterr().err


def test_build_with_real_latexml_extracts_like_the_stacks_corpus(tmp_path):
    if shutil.which("latexmlc") is None:
        if os.environ.get("PROOFMATCH_REQUIRE_LATEXML") == "1":
            pytest.fail("latexmlc is required here (bash scripts/install.sh --latex)")
        pytest.skip("LaTeXML is not installed")
    tree = make_tree(tmp_path / "src", {"sets": 2})
    out = tmp_path / "corpus"
    report = stacks.build_corpus(tree, out, jobs=1, timeout_s=300)
    assert report["articles"] == 1, report
    with gzip.open(out / "xhtml" / "stacks-sets.xhtml.gz", "rt") as fh:
        xhtml = fh.read()
    assert (
        xhtml.count('class="ltx_theorem ltx_theorem_lemma"') == 2
        and xhtml.count('class="ltx_proof"') == 2
    )
    assert 'encoding="application/x-tex"' in xhtml and "ltx_ERROR" not in xhtml
    from proofmatch.data import extract

    result = extract.extract_file(out / "xhtml" / "stacks-sets.xhtml.gz", "stacks-sets")
    assert len(result.pairs) == 2
