"""Mixed / Unmixed / pr splits: fractions, disjointness, determinism, article purity, pr subset."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from proofmatch.data.splits import (
    PARTS,
    make_splits,
    part_sizes,
    read_part,
    read_parts,
    write_splits,
)


def corpus(
    n_articles: int = 60, n_pr: int = 12, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    ids = [f"{2100 + i}.{i:05d}" for i in range(n_articles)]
    primary = [
        "math.PR" if i < n_pr else ("math.AG" if i % 2 else "math.CO") for i in range(n_articles)
    ]
    articles = pd.DataFrame(
        {
            "article_id": ids,
            "title": "t",
            "categories": [[c] for c in primary],
            "primary_category": primary,
        }
    )
    rows = [(f"{a}/thm{j}", a) for a in ids for j in range(int(rng.integers(1, 9)))]
    pairs = pd.DataFrame(rows, columns=["pair_id", "article_id"])
    return pairs, articles


def test_part_sizes():
    assert part_sizes(100, (0.8, 0.1, 0.1)) == (80, 10, 10)
    assert part_sizes(3, (0.8, 0.1, 0.1)) == (1, 1, 1)
    with pytest.raises(ValueError, match="at least 3"):
        part_sizes(2, (0.8, 0.1, 0.1))
    with pytest.raises(ValueError, match="summing to 1"):
        part_sizes(10, (0.8, 0.1, 0.2))


def test_fractions_disjointness_and_coverage():
    pairs, articles = corpus()
    s = make_splits(pairs, articles, seed=3)
    assert set(s) == {"mixed", "unmixed", "pr"}
    for _name, df in s.items():
        assert df.columns.tolist() == ["pair_id", "article_id", "part"]
        assert df["pair_id"].is_unique and set(df["part"]) == set(PARTS)
    mixed = s["mixed"]
    assert set(mixed["pair_id"]) == set(pairs["pair_id"])
    n = len(pairs)
    counts = mixed["part"].value_counts()
    assert counts["dev"] == round(0.1 * n) and counts["test"] == round(0.1 * n)
    assert counts["train"] == n - counts["dev"] - counts["test"]
    unmixed = s["unmixed"]
    assert set(unmixed["pair_id"]) == set(pairs["pair_id"])
    per_part_articles = unmixed.groupby("part")["article_id"].nunique()
    assert (
        per_part_articles["train"] == 48
        and per_part_articles["dev"] == 6
        and per_part_articles["test"] == 6
    )


def test_unmixed_articles_are_pure_and_pr_is_the_unmixed_restriction():
    pairs, articles = corpus()
    s = make_splits(pairs, articles, seed=3)
    unmixed, pr = s["unmixed"], s["pr"]
    assert (unmixed.groupby("article_id")["part"].nunique() == 1).all()
    pr_articles = set(articles.loc[articles["primary_category"] == "math.PR", "article_id"])
    assert set(pr["article_id"]) == pr_articles
    assert set(pr["pair_id"]) == set(pairs.loc[pairs["article_id"].isin(pr_articles), "pair_id"])
    merged = pr.merge(unmixed, on=["pair_id", "article_id"], suffixes=("_pr", "_unmixed"))
    assert len(merged) == len(pr) and (merged["part_pr"] == merged["part_unmixed"]).all()
    held_out = set(unmixed.loc[unmixed["part"] != "train", "article_id"])
    assert not set(pr.loc[pr["part"] == "train", "article_id"]) & held_out
    # the mixed split does put pairs of one article in several parts
    assert (s["mixed"].groupby("article_id")["part"].nunique() > 1).any()


def test_deterministic_and_stable_under_row_order():
    pairs, articles = corpus()
    a = make_splits(pairs, articles, seed=5)
    b = make_splits(
        pairs.sample(frac=1, random_state=1), articles.sample(frac=1, random_state=2), seed=5
    )
    c = make_splits(pairs, articles, seed=6)
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name])
    assert not a["mixed"]["part"].equals(c["mixed"]["part"])
    assert not a["unmixed"]["part"].equals(c["unmixed"]["part"])
    # unmixed does not depend on whether pr is requested
    only = make_splits(pairs, articles, seed=5, which=("unmixed",))
    assert set(only) == {"unmixed"}
    pd.testing.assert_frame_equal(only["unmixed"], a["unmixed"])


def test_small_data_parts_are_non_empty_or_a_clear_error():
    pairs, articles = corpus(n_articles=6, n_pr=3)
    s = make_splits(pairs, articles, seed=0)
    for df in s.values():
        assert set(df["part"]) == set(PARTS)
    pairs2, articles2 = corpus(n_articles=8, n_pr=2)
    with pytest.raises(
        ValueError, match=r"at least 3 chapters \(articles\) with primary category 'math.PR'"
    ):
        make_splits(pairs2, articles2)
    assert set(make_splits(pairs2, articles2, which=("mixed", "unmixed"))) == {"mixed", "unmixed"}
    with pytest.raises(ValueError, match="at least 3"):
        make_splits(pairs.head(2), articles, which=("mixed",))
    tiny, tiny_articles = corpus(n_articles=2, n_pr=0)
    with pytest.raises(ValueError, match="empty parts"):
        make_splits(tiny, tiny_articles, which=("unmixed",))


def test_bad_input_is_rejected():
    pairs, articles = corpus()
    with pytest.raises(ValueError, match="duplicate pair ids"):
        make_splits(pd.concat([pairs, pairs.head(1)]), articles)
    with pytest.raises(ValueError, match="not in the articles table"):
        make_splits(pairs, articles.iloc[1:])
    with pytest.raises(ValueError, match="needs pr_category"):
        make_splits(pairs, articles, pr_category=None)
    assert set(make_splits(pairs, None, pr_category=None, which=("mixed", "unmixed"))) == {
        "mixed",
        "unmixed",
    }


def test_write_splits_and_cli(tmp_path, capsys):
    from proofmatch.cli import main

    pairs, articles = corpus()
    pairs.to_parquet(tmp_path / "pairs.parquet")
    articles.to_parquet(tmp_path / "articles.parquet")
    out = {k: tmp_path / "splits" / f"{k}.parquet" for k in ("mixed", "unmixed", "pr")}
    info = write_splits(tmp_path / "pairs.parquet", tmp_path / "articles.parquet", out, seed=13)
    expected = make_splits(pairs, articles, seed=13)
    for k, path in out.items():
        pd.testing.assert_frame_equal(pd.read_parquet(path), expected[k])
        assert sum(v["pairs"] for v in info[k].values()) == len(expected[k])
    rc = main(
        [
            "split",
            "--pairs",
            str(tmp_path / "pairs.parquet"),
            "--articles",
            str(tmp_path / "articles.parquet"),
            "--unmixed",
            str(tmp_path / "u.parquet"),
            "--seed",
            "13",
        ]
    )
    assert rc == 0
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "u.parquet"), expected["unmixed"])
    assert json.loads(capsys.readouterr().out)["unmixed"]["dev"]["articles"] == 6
    assert main(["split", "--pairs", str(tmp_path / "pairs.parquet")]) == 2


def test_read_part_rejects_bad_input(tmp_path):
    path = tmp_path / "d.parquet"
    pd.DataFrame(
        {
            "pair_id": ["a", "a"],
            "article_id": ["x", "x"],
            "part": ["test", "test"],
            "statement_tokens": [["s"], ["t"]],
            "proof_tokens": [["p"], ["q"]],
        }
    ).to_parquet(path)
    with pytest.raises(ValueError, match="duplicate pair_id"):
        read_part(path, "test")
    with pytest.raises(ValueError, match="no pairs in part 'dev'"):
        read_part(path, "dev")
    pd.DataFrame({"pair_id": ["a"]}).to_parquet(path)
    with pytest.raises(ValueError, match="missing column"):
        read_part(path, "test")


def test_read_parts_returns_each_part_in_file_order(tmp_path):
    path = tmp_path / "d.parquet"
    pd.DataFrame(
        {
            "pair_id": ["d2", "t1", "d1", "t2"],
            "article_id": ["x"] * 4,
            "part": ["dev", "train", "dev", "train"],
            "statement_tokens": [["s"]] * 4,
            "proof_tokens": [["p"]] * 4,
        }
    ).to_parquet(path)
    train, dev = read_parts(path, ["train", "dev"])
    assert train["pair_id"].tolist() == ["t1", "t2"] and dev["pair_id"].tolist() == ["d2", "d1"]
    pd.testing.assert_frame_equal(read_part(path, "dev"), dev)
    with pytest.raises(ValueError, match="unknown part"):
        read_parts(path, ["train", "valid"])
    with pytest.raises(ValueError, match="no pairs in part 'test'"):
        read_parts(path, ["train", "test"])


def test_unmixed_keeps_a_chapters_parts_on_one_side():
    """Articles sharing a ``chapter`` (the parts of a split book chapter) are cut as one unit; a
    table without the column cuts article by article exactly as before."""
    pairs, articles = corpus(n_articles=60, n_pr=0)
    chapters = [f"ch{i // 4}" for i in range(60)]  # 15 chapters of 4 parts
    with_chapters = articles.assign(chapter=chapters)
    for seed in range(5):
        unmixed = make_splits(
            pairs, with_chapters, seed=seed, pr_category=None, which=("unmixed",)
        )["unmixed"]
        by_chapter = unmixed.assign(
            chapter=unmixed["article_id"].map(dict(zip(articles["article_id"], chapters)))
        )
        assert (by_chapter.groupby("chapter")["part"].nunique() == 1).all()
        assert set(unmixed["part"]) == set(PARTS)
        # the chapter-free cut splits some chapter (so the check above can fail)
        plain = make_splits(pairs, articles, seed=seed, pr_category=None, which=("unmixed",))[
            "unmixed"
        ]
        plain = plain.assign(
            chapter=plain["article_id"].map(dict(zip(articles["article_id"], chapters)))
        )
        assert (plain.groupby("chapter")["part"].nunique() > 1).any()
    # one chapter per article: the same split as without the column
    pairs, articles = corpus()
    same = make_splits(pairs, articles.assign(chapter=articles["article_id"]), seed=3)
    assert same["unmixed"].equals(make_splits(pairs, articles, seed=3)["unmixed"])


def test_a_split_the_corpus_cannot_support_names_the_config_key_that_fixes_it(tmp_path, capsys):
    """docs/data.md, "Splits": Mixed needs 3 pairs, Unmixed 3 chapters (articles) with pairs, pr 3
    of them in ``splits.pr_category``; each refusal is a ConfigError naming the key, and a job
    (``run_logged``) states it once, without a traceback."""
    from proofmatch.config import ConfigError
    from proofmatch.logs import run_logged

    pairs, articles = corpus(n_articles=8, n_pr=2)
    with pytest.raises(ConfigError, match=r"found 2\. Set splits.pr_category: null"):
        make_splits(pairs, articles)
    tiny, tiny_articles = corpus(n_articles=2, n_pr=0)
    with pytest.raises(ConfigError, match=r"\(found 2\)\. Set splits.families: \[mixed\]"):
        make_splits(tiny, tiny_articles, pr_category=None, which=("mixed", "unmixed"))
    assert set(make_splits(tiny, tiny_articles, pr_category=None, which=("mixed",))) == {"mixed"}
    with pytest.raises(ConfigError, match="needs at least 3; the corpus gave 2"):
        make_splits(tiny.head(2), tiny_articles, which=("mixed",))
    log = tmp_path / "job.log"
    with pytest.raises(SystemExit) as stop:
        run_logged(log, make_splits, pairs, articles)
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert err.count("splits.pr_category: null") == 1 and "Traceback" not in err
    assert "Traceback" not in log.read_text() and "splits.pr_category: null" in log.read_text()
