"""Corpus listing, metadata join, article ids and deterministic byte-balanced sharding."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from proofmatch import cli, corpora
from proofmatch.data import corpus, listing

DOC = b'<html xmlns="http://www.w3.org/1999/xhtml"><body><p>x</p></body></html>'


def _make_corpus(root: Path, sizes: dict[str, int]) -> Path:
    """Files named by relative path, padded to roughly the given size in bytes."""
    for rel, size in sizes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        body = DOC + b" " * max(0, size - len(DOC))
        path.write_bytes(gzip.compress(body) if rel.endswith(".gz") else body)
    return root


def test_list_articles_recursive_suffixes_sorted(tmp_path: Path) -> None:
    _make_corpus(
        tmp_path,
        {
            "b.xhtml": 10,
            "a/c.html": 10,
            "a/d.xhtml.gz": 10,
            "e.html.gz": 10,
            "F.XHTML": 10,
            "notes.txt": 1,
            "x.xml": 1,
        },
    )
    (tmp_path / "dir.xhtml").mkdir()  # a folder with an article name is not an article
    names = [p.relative_to(tmp_path).as_posix() for p in listing.list_articles(tmp_path)]
    assert names == ["F.XHTML", "a/c.html", "a/d.xhtml.gz", "b.xhtml", "e.html.gz"]


def test_list_articles_missing_or_empty(tmp_path: Path) -> None:
    with pytest.raises(corpus.CorpusError, match="does not exist"):
        listing.list_articles(tmp_path / "nope")
    (tmp_path / "readme.txt").write_text("x")
    with pytest.raises(corpus.CorpusError, match="holds no articles"):
        listing.list_articles(tmp_path)


@pytest.mark.parametrize(
    "name, stem",
    [
        ("1234.5678v2.xhtml.gz", "1234.5678v2"),
        ("math0601001.html", "math0601001"),
        ("a.b.XHTML", "a.b"),
        ("x.html.gz", "x"),
    ],
)
def test_strip_article_suffix(name: str, stem: str) -> None:
    assert listing.strip_article_suffix(name) == stem


@pytest.mark.parametrize(
    "value, cats",
    [
        ("math.AG math.NT", ["math.AG", "math.NT"]),
        ("math.AG,math.NT", ["math.AG", "math.NT"]),
        ("math.AG | math.NT|cs.LG", ["math.AG", "math.NT", "cs.LG"]),
        ("math.AG math.AG  math.PR", ["math.AG", "math.PR"]),
        ("", []),
        (None, []),
        (["math.PR", "math.ST"], ["math.PR", "math.ST"]),
    ],
)
def test_parse_categories(value: object, cats: list[str]) -> None:
    assert corpus.parse_categories(value) == cats


def _meta_rows() -> list[dict[str, str]]:
    return [
        {
            "article_id": "A1",
            "title": "First",
            "categories": "math.NT math.AG",
            "primary_category": "math.AG",
            "file": "sub/a.xhtml",
        },
        {
            "article_id": "B2",
            "title": "Second",
            "categories": "math.PR|math.ST",
            "primary_category": "",
            "file": "",
        },
    ]


@pytest.mark.parametrize("fmt", ["csv", "tsv", "parquet"])
def test_read_metadata_formats(tmp_path: Path, fmt: str) -> None:
    df = pd.DataFrame(_meta_rows())
    path = tmp_path / f"meta.{fmt}"
    if fmt == "parquet":
        df.to_parquet(path)
    else:
        df.to_csv(path, sep="\t" if fmt == "tsv" else ",", index=False)
    meta = corpus.read_metadata(path)
    assert meta["article_id"].tolist() == ["A1", "B2"]
    assert meta["categories"].tolist() == [["math.AG", "math.NT"], ["math.PR", "math.ST"]]
    assert meta["primary_category"].tolist() == ["math.AG", "math.PR"]
    assert meta["file"].iloc[0] == "sub/a.xhtml" and pd.isna(meta["file"].iloc[1])


def test_metadata_errors_name_file_and_row(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text("article_id,title,categories\nA,t,math.AG\nB,t,math.AG\nA,t2,math.PR\n")
    with pytest.raises(
        corpus.CorpusError, match=r"m\.csv: duplicate article_id 'A' in data rows 1 and 3"
    ):
        corpus.read_metadata(path)
    path.write_text("article_id,title,categories\nA,t,math.AG\n,t,math.AG\n")
    with pytest.raises(corpus.CorpusError, match=r"m\.csv, data row 2: empty article_id"):
        corpus.read_metadata(path)
    path.write_text("article_id,title\nA,t\n")
    with pytest.raises(corpus.CorpusError, match=r"missing column\(s\) categories"):
        corpus.read_metadata(path)
    path.write_text('article_id,title,categories\nA,"unterminated,math.AG\n')
    with pytest.raises(corpus.CorpusError, match=r"cannot read metadata table .*m\.csv"):
        corpus.read_metadata(path)
    bad = tmp_path / "m.parquet"
    bad.write_bytes(b"PAR1 not really parquet")
    with pytest.raises(corpus.CorpusError, match=r"cannot read metadata table .*m\.parquet"):
        corpus.read_metadata(bad)
    dup = tmp_path / "f.csv"
    dup.write_text("article_id,title,categories,file\nA,t,x,d/a.xhtml\nB,t,x,./d/a.xhtml\n")
    with pytest.raises(corpus.CorpusError, match=r"f\.csv: file .* listed in data rows 1 and 2"):
        corpus.read_metadata(dup)
    txt = tmp_path / "readme.txt"
    txt.write_text("article_id,title,categories\n")
    with pytest.raises(corpus.CorpusError, match="unsupported format"):
        corpus.read_metadata(txt)


def test_ids_from_file_column_or_stem(tmp_path: Path) -> None:
    root = _make_corpus(tmp_path / "corpus", {"sub/a.xhtml": 10, "b.xhtml.gz": 10, "c.html": 10})
    meta = pd.DataFrame(_meta_rows())
    meta.to_csv(tmp_path / "meta.csv", index=False)
    manifest, articles = corpus.build_manifest(root, 2, tmp_path / "meta.csv")
    by_path = {Path(p).name: a for a, p in zip(manifest["article_id"], manifest["path"])}
    # a.xhtml is named by the metadata's `file`; b and c fall back to their stems
    assert by_path == {"a.xhtml": "A1", "b.xhtml.gz": "b", "c.html": "c"}
    rows = articles.set_index("article_id").to_dict("index")
    assert rows["A1"]["title"] == "First" and list(rows["A1"]["categories"]) == [
        "math.AG",
        "math.NT",
    ]
    assert (
        pd.isna(rows["b"]["title"])
        and list(rows["b"]["categories"]) == []
        and rows["b"]["primary_category"] == "unknown"
    )


def test_duplicate_article_ids_in_corpus(tmp_path: Path) -> None:
    _make_corpus(tmp_path, {"a.xhtml": 10, "sub/a.xhtml.gz": 10, "b.xhtml": 10})
    with pytest.raises(
        corpus.CorpusError,
        match=r"duplicate article id 'a': files .*a\.xhtml and .*sub/a\.xhtml\.gz",
    ):
        corpus.assign_article_ids(listing.list_articles(tmp_path), None)
    skipped: list = []  # the manifest keeps the first (path order) and skips the other with a reason
    manifest, _ = corpus.build_manifest(tmp_path, 1, None, skipped)
    assert list(manifest["article_id"]) == ["a", "b"] and manifest["path"][0].endswith("/a.xhtml")
    assert [(s["reason"], s["path"].endswith("sub/a.xhtml.gz")) for s in skipped] == [
        ("duplicate_id", True)
    ]


def test_shard_by_bytes_balanced_and_order_free() -> None:
    rng = random.Random(0)
    keys = [f"k{i:03d}" for i in range(200)]
    sizes = [rng.randint(1, 10_000) for _ in keys]
    shards = corpus.shard_by_bytes(sizes, keys, 7)
    loads = [sum(s for s, k in zip(sizes, shards) if k == j) for j in range(7)]
    assert max(loads) - min(loads) <= max(sizes)
    perm = list(range(200))
    rng.shuffle(perm)
    again = corpus.shard_by_bytes([sizes[i] for i in perm], [keys[i] for i in perm], 7)
    assert {keys[i]: s for i, s in zip(perm, again)} == dict(zip(keys, shards))
    with pytest.raises(corpus.CorpusError):
        corpus.shard_by_bytes(sizes, keys, 0)


def test_write_manifest_deterministic_and_shard_count(tmp_path: Path) -> None:
    sizes = {f"d{i % 3}/art{i:02d}.xhtml": 100 + 37 * i for i in range(20)}
    root = _make_corpus(tmp_path / "c", sizes)
    outs = []
    for run in range(2):
        m, a = tmp_path / f"m{run}.parquet", tmp_path / f"a{run}.parquet"
        corpus.write_manifest(root, 25, None, m, a)
        outs.append((pd.read_parquet(m), pd.read_parquet(a)))
    pd.testing.assert_frame_equal(outs[0][0], outs[1][0])
    pd.testing.assert_frame_equal(outs[0][1], outs[1][1])
    manifest, n_shards = corpus.read_manifest(tmp_path / "m0.parquet")
    assert n_shards == 25 and len(manifest) == 20 and manifest["shard"].nunique() == 20
    assert manifest["bytes"].tolist() == [
        (root / Path(p).relative_to(root)).stat().st_size for p in manifest["path"]
    ]
    schema = pq.read_schema(tmp_path / "a0.parquet")
    cats = schema.field("categories").type
    assert pa.types.is_list(cats) and pa.types.is_string(cats.value_type)


def test_cli_manifest(tmp_path: Path) -> None:
    root = _make_corpus(tmp_path / "c", {"a.xhtml": 10, "b.xhtml": 20, "c.xhtml": 30})
    m, a = tmp_path / "out" / "manifest.parquet", tmp_path / "out" / "articles.parquet"
    assert (
        cli.main(
            ["manifest", str(root), "--shards", "2", "--manifest", str(m), "--articles", str(a)]
        )
        == 0
    )
    assert sorted(pd.read_parquet(m)["article_id"]) == ["a", "b", "c"]
    assert (
        cli.main(
            [
                "manifest",
                str(tmp_path / "missing"),
                "--shards",
                "2",
                "--manifest",
                str(m),
                "--articles",
                str(a),
            ]
        )
        == 2
    )


def test_several_folders_one_corpus(tmp_path: Path) -> None:
    """Two folders, each with its own table: ids come from each folder's table, chapters join the
    parts of one chapter, and an id found in both folders is an error naming both files."""
    one = _make_corpus(tmp_path / "one", {"xhtml/a.xhtml": 10, "xhtml/b.xhtml": 10})
    two = _make_corpus(
        tmp_path / "two",
        {"xhtml/c-part01.xhtml": 10, "xhtml/c-part02.xhtml": 10, "xhtml/d.xhtml": 10},
    )
    (one / "meta.csv").write_text(
        "article_id,file,title,categories\nS-a,xhtml/a.xhtml,A,math.AG\nS-b,xhtml/b.xhtml,B,math.AG\n"
    )
    (two / "meta.csv").write_text(
        "article_id,file,title,categories,chapter\n"
        "S-c-part01,xhtml/c-part01.xhtml,C 1,math.AG,S-c\nS-c-part02,xhtml/c-part02.xhtml,C 2,math.AG,S-c\n"
        "S-d,xhtml/d.xhtml,D,math.PR,\n"
    )
    manifest, articles = corpus.build_manifest(
        [one / "xhtml", two / "xhtml"], 2, [one / "meta.csv", two / "meta.csv"]
    )
    assert list(manifest["article_id"]) == ["S-a", "S-b", "S-c-part01", "S-c-part02", "S-d"]
    rows = articles.set_index("article_id")
    assert rows.loc["S-c-part01", "chapter"] == rows.loc["S-c-part02", "chapter"] == "S-c"
    assert (
        rows.loc["S-a", "chapter"] == "S-a" and rows.loc["S-d", "chapter"] == "S-d"
    )  # empty: its own
    assert rows.loc["S-d", "primary_category"] == "math.PR" and rows.loc["S-a", "title"] == "A"
    # a folder without a table: ids from the file names
    manifest, articles = corpus.build_manifest(
        [one / "xhtml", two / "xhtml"], 1, [one / "meta.csv", None]
    )
    assert "c-part01" in set(manifest["article_id"]) and "S-a" in set(manifest["article_id"])
    # the same id in two folders
    _make_corpus(tmp_path / "three", {"b.xhtml": 10})
    skipped: list = []
    manifest, _ = corpus.build_manifest([one / "xhtml", tmp_path / "three"], 1, None, skipped)
    assert [s["reason"] for s in skipped] == ["duplicate_id"] and "three/b.xhtml" in skipped[0][
        "path"
    ]
    assert (
        "one/xhtml/b.xhtml" in skipped[0]["detail"]
        and manifest["path"].str.contains("one/xhtml/b.xhtml").any()
    )


def test_corpus_folders_pairs_tables_with_folders() -> None:
    assert corpora.corpus_folders("d", "m.csv") == [("d", "m.csv")]
    assert corpora.corpus_folders(["d", "e"], None) == [("d", None), ("e", None)]
    assert corpora.corpus_folders(["d", "e"], ["m.csv", None]) == [("d", "m.csv"), ("e", None)]
    with pytest.raises(
        corpora.CorpusError, match=r"corpus\.metadata: one table for 2 folders; fix: a list of 2"
    ):
        corpora.corpus_folders(["d", "e"], "m.csv")
    with pytest.raises(corpora.CorpusError, match=r"corpus\.metadata: 1 tables for 2 folders"):
        corpora.corpus_folders(["d", "e"], ["m.csv"])


def test_config_checks_several_folders() -> None:
    from proofmatch.config import ConfigError, validate_config

    ok = validate_config(
        {"corpus": {"source": "dir", "dir": ["a", "b"], "metadata": ["a.csv", None]}}
    )
    assert ok["corpus"]["dir"] == ["a", "b"]
    with pytest.raises(ConfigError, match=r"config key corpus\.metadata: 1 tables for 2 folders"):
        validate_config({"corpus": {"source": "dir", "dir": ["a", "b"], "metadata": ["a.csv"]}})
    with pytest.raises(ConfigError, match=r"config key corpus\.dir: source latex reads one folder"):
        validate_config({"corpus": {"source": "latex", "dir": ["a", "b"]}})
    with pytest.raises(ConfigError, match=r"corpus\.dir"):
        validate_config({"corpus": {"source": "dir", "dir": []}})
