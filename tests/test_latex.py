"""corpus.source: latex — LaTeX sources to XHTML+MathML with LaTeXML (proofmatch.data.latex,
.latexml, .latex_inventory and .archives).

The unit tests (unpacking untrusted archives, main-file detection, ids, cache rules) need no
LaTeXML. The workflow test converts the articles of tests/data/latex (three good ones, one with a
fatal LaTeXML error, one that never ends, one without a main file, one archive with a ``../``
member) through ``snakemake`` to pairs and the conversion table, then reruns after one edit and
one new article. It needs ``latexmlc``: skipped where LaTeXML is absent, a failure when
PROOFMATCH_REQUIRE_LATEXML=1 (CI installs it with ``scripts/install.sh --latex``).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_workflow import copy_workflow

from proofmatch.data import archives, latex, latex_inventory, latexml
from proofmatch.data.archives import ArticleError, Limits

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "latex"
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
GOOD = ("2101.00001", "2101.00002", "2101.00003")
EXPECTED_FAILURES = {
    "2101.00004": "latexml_fatal",
    "2101.00005": "timeout",
    "2101.00006": "no_main_file",
    "2101.00007": "path_escape",
}
TIMEOUT_S = (
    20  # a good test article takes 1-7 s on a busy 2-core machine; the endless one hits this
)


def add_member(tar: tarfile.TarFile, name: str, data: bytes = b"x", **info) -> None:
    member = tarfile.TarInfo(name)
    member.size = len(data)
    for key, value in info.items():
        setattr(member, key, value)
    tar.addfile(member, io.BytesIO(data) if member.isfile() else None)


def build_corpus(dest: Path) -> Path:
    """tests/data/latex/sources plus the two archives, in arXiv's layout, under ``dest``."""
    shutil.copytree(DATA / "sources", dest)
    with tarfile.open(dest / "2101.00002.tar.gz", "w:gz") as tar:
        for f in sorted((DATA / "archives" / "2101.00002").iterdir()):
            tar.add(f, arcname=f.name)
    with tarfile.open(dest / "2101.00007.tar.gz", "w:gz") as tar:
        tar.add(DATA / "archives" / "2101.00007" / "main.tex", arcname="main.tex")
        add_member(
            tar, "../escaped.tex", b"\\documentclass{article}\\begin{document}out\\end{document}\n"
        )
    return dest


def tar_with(path: Path, members: list[tuple[str, bytes, dict]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        add_member(
            tar, "main.tex", b"\\documentclass{article}\n\\begin{document}\nHi\n\\end{document}\n"
        )
        for name, data, info in members:
            add_member(tar, name, data, **info)
    return path


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


# ----------------------------------------------------------------------------- untrusted archives


@pytest.mark.parametrize(
    "name,data,info,detail",
    [
        ("../escaped.tex", b"x", {}, "leaves the folder"),
        ("sub/../../escaped.tex", b"x", {}, "leaves the folder"),
        ("/tmp/absolute.tex", b"x", {}, "leaves the folder"),
        ("link", b"", {"type": tarfile.SYMTYPE, "linkname": "/etc/passwd"}, "symbolic link"),
        ("sub/link", b"", {"type": tarfile.SYMTYPE, "linkname": "../../outside"}, "symbolic link"),
        ("hard", b"", {"type": tarfile.LNKTYPE, "linkname": "../outside"}, "hard link"),
        ("fifo", b"", {"type": tarfile.FIFOTYPE}, "device or FIFO"),
    ],
)
def test_escaping_members_reject_the_article_and_write_nothing(tmp_path, name, data, info, detail):
    archive = tar_with(tmp_path / "a.tar.gz", [(name, data, info)])
    dest = tmp_path / "work" / "src"
    with pytest.raises(ArticleError) as err:
        archives.unpack(archive, "tar", dest, Limits(), "a")
    assert err.value.reason == "path_escape" and detail in err.value.detail
    assert files_under(tmp_path) == {
        "a.tar.gz",
        "work",
        "work/src",
    }  # checked before anything is written


def test_links_inside_the_archive_are_kept(tmp_path):
    archive = tar_with(
        tmp_path / "a.tar.gz",
        [
            ("sub/body.tex", b"body", {}),
            ("sub/alias.tex", b"", {"type": tarfile.SYMTYPE, "linkname": "body.tex"}),
        ],
    )
    archives.unpack(archive, "tar", tmp_path / "src", Limits(), "a")
    assert (tmp_path / "src" / "sub" / "alias.tex").read_text() == "body"


def test_folder_articles_are_copied_and_links_out_rejected(tmp_path):
    art = tmp_path / "art"
    (art / "sub").mkdir(parents=True)
    (art / "main.tex").write_text("\\documentclass{article}\\begin{document}x\\end{document}")
    (art / "sub" / "inside.tex").symlink_to("../main.tex")
    archives.unpack(art, "dir", tmp_path / "copy", Limits(), "art")
    assert files_under(tmp_path / "copy") == {"main.tex", "sub", "sub/inside.tex"}
    assert not (tmp_path / "copy" / "sub" / "inside.tex").is_symlink()
    secret = tmp_path / "secret.txt"
    secret.write_text("private")
    (art / "sub" / "leak.tex").symlink_to(secret)
    with pytest.raises(ArticleError, match="leaves the folder") as err:
        archives.unpack(art, "dir", tmp_path / "copy2", Limits(), "art")
    assert err.value.reason == "path_escape"
    (art / "sub" / "leak.tex").unlink()
    (art / "up").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(ArticleError, match="leaves the folder"):
        archives.unpack(art, "dir", tmp_path / "copy3", Limits(), "art")


def test_size_and_count_bounds(tmp_path):
    many = tar_with(tmp_path / "many.tar.gz", [(f"f{i}.tex", b"x", {}) for i in range(5)])
    with pytest.raises(ArticleError, match="more than 3 files") as err:
        archives.unpack(many, "tar", tmp_path / "a", Limits(max_files=3), "many")
    assert err.value.reason == "oversized"
    big = tar_with(
        tmp_path / "big.tar.gz", [("big.eps", b"0" * (3 << 20), {})]
    )  # 3 MB unpacked, ~3 kB packed
    with pytest.raises(ArticleError, match="MB unpacked") as err:
        archives.unpack(big, "tar", tmp_path / "b", Limits(max_archive_mb=1), "big")
    assert err.value.reason == "oversized" and not (tmp_path / "b" / "big.eps").exists()
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(b"%" * (3 << 20)))  # arXiv's single gzipped file form
    with pytest.raises(ArticleError) as err:
        archives.unpack(bomb, "gz", tmp_path / "c", Limits(max_archive_mb=1), "bomb")
    assert err.value.reason == "oversized" and list((tmp_path / "c").iterdir()) == []
    folder = tmp_path / "folder"
    folder.mkdir()
    for i in range(4):
        (folder / f"{i}.tex").write_text("x")
    with pytest.raises(ArticleError) as err:
        archives.unpack(folder, "dir", tmp_path / "d", Limits(max_files=3), "folder")
    assert err.value.reason == "oversized"


def test_unreadable_sources(tmp_path):
    (tmp_path / "garbage.tar.gz").write_bytes(b"this is no gzip stream at all" * 20)
    good = tar_with(
        tmp_path / "good.tar.gz", [("body.eps", random.Random(0).randbytes(50000), {})]
    ).read_bytes()
    (tmp_path / "truncated.tar.gz").write_bytes(good[: len(good) // 2])
    (tmp_path / "plain.gz").write_bytes(b"not gzip")
    for name, kind in (("garbage.tar.gz", "tar"), ("truncated.tar.gz", "tar"), ("plain.gz", "gz")):
        with pytest.raises(ArticleError) as err:
            archives.unpack(tmp_path / name, kind, tmp_path / f"out-{name}", Limits(), "x")
        assert err.value.reason == "unreadable", name


def test_bare_gz_is_a_single_tex_file_or_a_tarball(tmp_path):
    text = b"\\documentclass{article}\n\\begin{document}\nOne file.\n\\end{document}\n"
    (tmp_path / "math0501001.gz").write_bytes(gzip.compress(text))
    archives.unpack(tmp_path / "math0501001.gz", "gz", tmp_path / "one", Limits(), "math0501001")
    assert (tmp_path / "one" / "math0501001.tex").read_bytes() == text
    tarball = tar_with(tmp_path / "tarball.tar.gz", [])
    shutil.copy(tarball, tmp_path / "2101.09999.gz")
    archives.unpack(tmp_path / "2101.09999.gz", "gz", tmp_path / "two", Limits(), "2101.09999")
    assert files_under(tmp_path / "two") == {"main.tex"}


# ----------------------------------------------------------------------------- main file, ids, cache


def test_main_file_detection(tmp_path):
    root = tmp_path / "a"
    (root / "figs").mkdir(parents=True)
    (root / "fig.tex").write_text(
        "\\documentclass{standalone}\n\\begin{document}$x$\\end{document}\n" * 50
    )
    (root / "figs" / "deep.tex").write_text(
        "\\documentclass{article}\n\\begin{document}\n\\end{document}\n"
    )
    (root / "commented.tex").write_text("% \\documentclass{article}\n\\begin{document}\n")
    (root / "paper.tex").write_text(
        "\\documentclass[11pt]{amsart}\n\\begin{document}\nx\n\\end{document}\n"
    )
    main, n = latexml.find_main_file(root)
    assert (
        main.name == "paper.tex" and n == 3
    )  # shallowest, not the standalone figure; the comment is no candidate
    (root / "00README.XXX").write_text("figs/deep.tex toplevelfile\n")
    assert latexml.find_main_file(root)[0] == root / "figs" / "deep.tex"
    (root / "00README.XXX").unlink()
    (root / "00README.json").write_text(
        json.dumps({"sources": [{"filename": "fig.tex", "usage": "toplevel"}]})
    )
    assert latexml.find_main_file(root)[0].name == "fig.tex"
    empty = tmp_path / "b"
    empty.mkdir()
    (empty / "chapter.tex").write_text("\\section{x}\n")
    with pytest.raises(ArticleError) as err:
        latexml.find_main_file(empty)
    assert err.value.reason == "no_main_file"


def test_inventory_ids_shards_and_duplicates(tmp_path):
    src = build_corpus(tmp_path / "src")
    (src / "2101.00003").mkdir()  # a second source with the id of 2101.00003.tex
    (src / "notes.pdf").write_bytes(b"%PDF")
    everything = latex_inventory.build_inventory(src, 2, src / "metadata.csv")
    dup = everything[everything["skip"].notna()]
    # The folder comes first by name, but the metadata names the .tex file: that one keeps the id.
    assert dup[["article_id", "kind", "skip", "shard"]].values.tolist() == [
        ["2101.00003", "dir", "duplicate_id", -1]
    ]
    inv = everything[everything["skip"].isna()].set_index("article_id")
    assert sorted(inv.index) == [f"2101.0000{i}" for i in range(1, 8)]
    assert inv.loc["2101.00002", "kind"] == "tar" and inv.loc["2101.00001", "kind"] == "dir"
    assert inv.loc["2101.00003", "kind"] == "tex"
    assert set(inv["shard"]) == {0, 1} and (inv["sha256"].str.len() == 64).all()
    before = inv.loc["2101.00001", "sha256"]
    (src / "2101.00001" / "sections" / "body.tex").write_text("changed")
    after = latex_inventory.build_inventory(src, 2, None).set_index("article_id")
    assert after.loc["2101.00001", "sha256"] != before  # an edit deep in a folder changes its hash
    assert after.loc["2101.00002", "sha256"] == inv.loc["2101.00002", "sha256"]


def test_metadata_file_names_the_id_and_keys_are_safe(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "math0501001.gz").write_bytes(gzip.compress(b"x"))
    meta = tmp_path / "meta.csv"
    meta.write_text(
        "article_id,file,title,categories\nmath/0501001,src/math0501001.gz,Old,math.PR\n"
    )
    inv = latex_inventory.build_inventory(src, 1, meta)
    assert inv["article_id"].tolist() == ["math/0501001"]
    assert inv["key"].tolist() == ["math%2F0501001"]
    assert latex_inventory.safe_key("..") == "%2E." and "/" not in latex_inventory.safe_key(
        "a/../b"
    )


def test_cache_rules(tmp_path):
    (tmp_path / "articles" / "k").mkdir(parents=True)
    (tmp_path / "articles" / "k" / "k.xhtml.gz").write_bytes(b"")
    ok = {"sha256": "h", "options": "o", "status": "converted", "xhtml": "articles/k/k.xhtml.gz"}
    limits = Limits(timeout_s=60)
    assert latex._reusable(ok, "h", "o", limits, tmp_path)
    assert not latex._reusable(ok, "changed", "o", limits, tmp_path)  # the source changed
    assert not latex._reusable(ok, "h", "other LaTeXML", limits, tmp_path)
    assert not latex._reusable(
        {**ok, "xhtml": "articles/k/gone.xhtml.gz"}, "h", "o", limits, tmp_path
    )
    failed = {"sha256": "h", "options": "o", "status": "failed"}
    assert latex._reusable({**failed, "reason": "latexml_fatal"}, "h", "o", limits, tmp_path)
    assert latex._reusable(
        {**failed, "reason": "timeout", "timeout_s": 60}, "h", "o", limits, tmp_path
    )
    assert not latex._reusable(
        {**failed, "reason": "timeout", "timeout_s": 30}, "h", "o", limits, tmp_path
    )
    assert not latex._reusable(
        {**failed, "reason": "no_main_file"}, "h", "o", limits, tmp_path
    )  # cheap: redone


def test_missing_latexmlc_says_what_to_install(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(RuntimeError, match=r"scripts/install.sh --latex.*apt-get install latexml"):
        latexml.latexmlc_path()


# ----------------------------------------------------------------------------- with LaTeXML


@pytest.fixture
def latexmlc():
    if shutil.which("latexmlc") is None:
        if os.environ.get("PROOFMATCH_REQUIRE_LATEXML") == "1":
            pytest.fail(
                "PROOFMATCH_REQUIRE_LATEXML=1 but latexmlc is not on PATH (scripts/install.sh --latex)"
            )
        pytest.skip("LaTeXML is not installed (bash scripts/install.sh --latex)")


def snakemake(wd: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    run = subprocess.run(
        SNAKEMAKE + list(args) + ["--configfile", "config/config.yaml", "latex.yaml"],
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert run.returncode == 0, (run.stdout + run.stderr)[-6000:]
    return run


@pytest.mark.slow
def test_latex_source_to_pairs_with_a_failure_report_and_a_cache(tmp_path, latexmlc):
    src = build_corpus(tmp_path / "sources")
    (tmp_path / "wd").mkdir()
    wd = copy_workflow(tmp_path / "wd")
    (wd / "latex.yaml").write_text(
        yaml.safe_dump(
            {
                "corpus": {
                    "source": "latex",
                    "dir": str(src),
                    "metadata": str(src / "metadata.csv"),
                    "n_shards": 1,
                    "latex": {"n_shards": 2, "timeout_s": TIMEOUT_S},
                }
            }
        )
    )
    before = files_under(tmp_path / "sources")
    snakemake(wd, "results/data/pairs.parquet", "results/tables/conversion.md", "-c2")

    root = wd / "results" / "latex" / "main"
    report = json.loads((root / "report.json").read_text())
    status = {a["article_id"]: a["reason"] or a["status"] for a in report["articles"]}
    assert status == {**{a: "converted" for a in GOOD}, **EXPECTED_FAILURES}
    counts = report["counts"]
    assert counts["converted"] == 3 and counts["cached"] == 0
    assert all(counts[r] == 1 for r in EXPECTED_FAILURES.values())
    assert "too_many_errors" in (root / "articles" / "2101.00004" / "latexml.log").read_text()
    # The Stacks chapters' mode: presentation MathML with content MathML and the TeX annotation.
    xhtml = gzip.decompress((root / "xhtml" / "2101.00002.xhtml.gz").read_bytes()).decode()
    assert 'encoding="MathML-Content"' in xhtml and 'encoding="application/x-tex"' in xhtml
    assert 'class="ltx_proof"' in xhtml
    pairs = pd.read_parquet(wd / "results" / "data" / "pairs.parquet")
    assert sorted(pairs["article_id"].unique()) == list(GOOD) and len(pairs) == 6
    articles = pd.read_parquet(wd / "results" / "corpus" / "articles.parquet").set_index(
        "article_id"
    )
    assert articles.loc["2101.00003", "title"] == "Counting edges of finite graphs"
    assert articles.loc["2101.00001", "primary_category"] == "math.NT"
    table = pd.read_csv(wd / "results" / "tables" / "conversion.csv")
    assert (
        table.loc[0, "Converted"] == 3
        and table.loc[0, "Timeout"] == 1
        and table.loc[0, "Path escape"] == 1
    )
    # Nothing was written outside the results folder: the sources are untouched, no escaped file.
    assert files_under(tmp_path / "sources") == before
    assert not list(tmp_path.rglob("escaped.tex"))
    assert not (root / "work").exists()

    # A rerun converts only what changed: one edited article and one new one.
    with open(src / "2101.00003.tex", "a") as fh:
        fh.write("% an edit\n")
    shutil.copytree(src / "2101.00001", src / "2101.00008")
    snakemake(wd, "results/data/pairs.parquet", "-c2")
    report = json.loads((root / "report.json").read_text())
    fresh = sorted(a["article_id"] for a in report["articles"] if not a["cached"])
    assert fresh == [
        "2101.00003",
        "2101.00006",
        "2101.00007",
        "2101.00008",
    ]  # + the cheap pre-LaTeXML failures
    assert report["converted_now"] == 2 and report["counts"]["converted"] == 4
    dry = snakemake(wd, "results/data/pairs.parquet", "-n")
    assert "Nothing to be done" in dry.stdout + dry.stderr
    assert re.search(
        r"2101\.00008/", " ".join(pd.read_parquet(wd / "results/data/pairs.parquet")["pair_id"])
    )
