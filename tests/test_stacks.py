"""Tests on the real Stacks corpus (tests/conftest.py's ``stacks_dir``); skipped when it is absent, a
failure instead with PROOFMATCH_REQUIRE_STACKS=1 (CI sets it, see tests/conftest.py).

Extraction part: the manifest joins the real metadata.csv, and extraction reproduces the counts
that the corpus README states (2827 pairs from 51 chapters, per chapter and per kind). The whole
corpus (169 MB of XHTML) takes about 8 s on 2 cores, so no subset is needed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from proofmatch.data import corpus, extract

pytestmark = pytest.mark.stacks


def readme_counts(readme: Path) -> dict[str, tuple[int, int]]:
    """article_id -> (theorem-like, followed by proof) from the README's per-chapter table."""
    lines = readme.read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| article_id |"))
    cols = [c.strip() for c in lines[header].strip("|").split("|")]
    thm, prf = cols.index("theorem-like"), cols.index("followed by proof")
    out = {}
    for line in lines[header + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        out[cells[0]] = (int(cells[thm]), int(cells[prf]))
    return out


def readme_kinds(readme: Path) -> dict[str, tuple[int, int]]:
    """kind -> (theorem-like, followed by proof) from 'lemma 2677 (2663 followed by a proof), ...'."""
    text = readme.read_text()
    return {
        k: (int(n), int(p))
        for k, n, p in re.findall(r"(\w+) (\d+) \((\d+) followed by a proof\)", text)
    }


def test_stacks_manifest_joins_metadata(stacks_dir: Path, tmp_path: Path) -> None:
    corpus.write_manifest(
        stacks_dir, 4, stacks_dir / "metadata.csv", tmp_path / "m.parquet", tmp_path / "a.parquet"
    )
    manifest, n_shards = corpus.read_manifest(tmp_path / "m.parquet")
    articles = pd.read_parquet(tmp_path / "a.parquet")
    meta = pd.read_csv(stacks_dir / "metadata.csv")
    assert n_shards == 4 and len(manifest) == 51
    assert sorted(manifest["article_id"]) == sorted(meta["article_id"])
    titles = dict(zip(articles["article_id"], articles["title"]))
    assert all(titles[a] == t for a, t in zip(meta["article_id"], meta["title"]))
    assert set(articles["primary_category"]) == {"math.AG"}
    assert all(list(c) == ["math.AG"] for c in articles["categories"])
    loads = manifest.groupby("shard")["bytes"].sum()
    assert loads.max() - loads.min() <= manifest["bytes"].max()


def test_stacks_extraction_counts(stacks_dir: Path, tmp_path: Path) -> None:
    manifest = tmp_path / "m.parquet"
    corpus.write_manifest(
        stacks_dir, 2, stacks_dir / "metadata.csv", manifest, tmp_path / "a.parquet"
    )
    reports = [
        extract.extract_shard(
            manifest, k, tmp_path / f"shard-{k}.parquet", tmp_path / f"shard-{k}.report.json"
        )
        for k in range(2)
    ]
    report = extract.merge_reports(reports)
    pairs = pd.concat([pd.read_parquet(tmp_path / f"shard-{k}.parquet") for k in range(2)])
    assert report["files_seen"] == report["files_ok"] == 51 and report["files_skipped"] == {}
    assert report["pairs"] == len(pairs) == 2827
    assert report["theorem_like"] == 3672
    assert report["near_misses"] == 0 and report["near_miss_sides"] == {}  # docs/data.md states 0
    assert not pairs.duplicated(["article_id", "statement_id"]).any()
    readme = stacks_dir.parent / "README.md"  # the corpus README states the counts
    assert readme.is_file(), f"{readme} is missing: the per-chapter counts cannot be checked"
    expected = readme_counts(readme)
    assert len(expected) == 51
    got = pairs.groupby("article_id").size().to_dict()
    assert {a: got.get(a, 0) for a in expected} == {a: p for a, (_, p) in expected.items()}
    kinds = readme_kinds(readme)
    assert kinds and report["theorem_like_kinds"] == {k: n for k, (n, _) in kinds.items()}
    assert report["kinds"] == {k: p for k, (_, p) in kinds.items() if p}
    # Lemma 5.1 of Set Theory, quoted verbatim in the corpus README
    lemma = pairs[
        (pairs["article_id"] == "stacks-sets") & (pairs["statement_id"] == "S5.SS1")
    ].iloc[0]
    assert lemma["kind"] == "lemma" and "Every set is an element of" in lemma["statement_xml"]
    assert "Lemma 6.3" in lemma["proof_xml"]


def test_both_stacks_folders_make_one_corpus(stacks_dir: Path, tmp_path: Path) -> None:
    """config/stacks.yaml's two folders: one manifest with unique ids (every metadata row of both
    tables, whatever stacks-more holds today), and Unmixed keeps a split chapter's parts on one side."""
    from proofmatch.config import load_config
    from proofmatch.data.splits import make_splits

    more = stacks_dir.parent / "stacks-more"
    if not (more / "xhtml").is_dir():
        pytest.skip("../shared/corpora/stacks-more is absent")
    repo = Path(__file__).resolve().parents[1]
    cfg = load_config(repo / "config/config.yaml", repo / "config/stacks.yaml")
    dirs = [str(repo / d) for d in cfg["corpus"]["dir"]]
    tables = [str(repo / t) for t in cfg["corpus"]["metadata"]]
    manifest, articles = corpus.build_manifest(dirs, 8, tables)
    metas = [pd.read_csv(t) for t in tables]
    assert manifest["article_id"].is_unique
    assert sorted(manifest["article_id"]) == sorted(pd.concat(metas)["article_id"])
    chapter = dict(zip(metas[1]["article_id"], metas[1]["chapter"]))
    rows = articles.set_index("article_id")
    assert all(rows.loc[a, "chapter"] == c for a, c in chapter.items())
    assert all(
        rows.loc[a, "chapter"] == a for a in metas[0]["article_id"]
    )  # no chapter column there
    split_chapters = {c for c in chapter.values() if list(chapter.values()).count(c) > 1}
    assert split_chapters, "stacks-more splits its largest chapters into parts"
    pairs = pd.DataFrame(
        [(f"{a}/p{k}", a) for a in manifest["article_id"] for k in range(3)],
        columns=["pair_id", "article_id"],
    )
    for seed in range(3):
        unmixed = make_splits(pairs, articles, seed=seed, pr_category=None, which=("unmixed",))[
            "unmixed"
        ]
        parts = unmixed.assign(chapter=unmixed["article_id"].map(rows["chapter"])).groupby(
            "chapter"
        )["part"]
        assert (parts.nunique() == 1).all()
