"""Train/dev/test splits: Mixed (by pair), Unmixed (by article) and the probability-domain subset.

* ``mixed``: the pairs, sorted by ``pair_id`` then shuffled, cut 80/10/10 (paper §8).
* ``unmixed``: the *articles* are cut 80/10/10, and every pair follows its article, so no article
  has pairs in two parts (paper §9.3). Articles that are parts of one chapter (the articles
  table's ``chapter``: a long book chapter converted as several files) are cut as one unit.
* ``pr``: the Unmixed split restricted to pairs whose article's primary category is
  ``pr_category`` (paper §9.4). Its train part is a subset of Unmixed train, so a model trained on
  ``pr`` never saw an Unmixed dev/test article.

The article cut is stratified by "primary category == pr_category": the pr articles and the other
articles are each cut 80/10/10. Unmixed stays an article-level 80/10/10 split, and on a small
corpus the pr subset still has articles in dev and test (an unstratified cut of 72 articles
leaves a handful of pr articles that often all land in train). A stratum of fewer than three
articles goes entirely to train. The stratification uses ``pr_category`` whether or not ``pr`` is
requested, so the Unmixed split is identical in both cases. Every part of every split must be non-empty; when that is
impossible the functions raise ``ValueError`` saying what is missing.

Shuffles use ``numpy.random.default_rng`` seeded with ``[seed, stream]``, one stream per split,
over inputs sorted first, so the result depends only on the data and the seed, not row order.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from collections.abc import Sequence

import numpy as np
import pandas as pd

from proofmatch import config
from proofmatch.artifacts import read_parquet, write_parquet
from proofmatch.experiments import SPLITS
from proofmatch.logs import setup_logging
from proofmatch.registry.checks import one_of

log = logging.getLogger(__name__)

PARTS = ("train", "dev", "test")
DATA_COLUMNS = ("pair_id", "article_id", "part", "statement_tokens", "proof_tokens")
_MIXED_STREAM, _UNMIXED_STREAM = 0, 1


def read_parts(data_parquet: str | os.PathLike, parts: Sequence[str]) -> list[pd.DataFrame]:
    """The rows of each of ``parts`` of a split (or symbol-replaced) Parquet, read once, each in
    file order: row i's gold proof is proof i. Every consumer (tokenizer, training, pretraining,
    evaluation, baselines, LIME) reads through here, so a bad file fails the same clear way
    everywhere: a missing column, an empty part or a duplicate ``pair_id`` is an error naming the
    file."""
    for part in parts:
        one_of("part", part, PARTS)
    df = read_parquet(data_parquet)
    missing = [c for c in DATA_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(
            f"{data_parquet}: missing column(s) {missing}; expected {list(DATA_COLUMNS)}"
        )
    out = []
    for part in parts:
        sub = df[df["part"] == part].reset_index(drop=True)
        if sub.empty:
            raise ValueError(
                f"{data_parquet}: no pairs in part {part!r} (parts present: "
                f"{sorted(df['part'].unique().tolist())})"
            )
        dup = sub["pair_id"][sub["pair_id"].duplicated()]
        if not dup.empty:
            raise ValueError(
                f"{data_parquet}: duplicate pair_id in part {part!r}, e.g. {dup.iloc[0]!r}"
            )
        out.append(sub)
    return out


def read_part(data_parquet: str | os.PathLike, part: str) -> pd.DataFrame:
    """One part of a split Parquet (:func:`read_parts` with one part)."""
    return read_parts(data_parquet, [part])[0]


def check_fractions(fractions: Sequence[float]) -> tuple[float, float, float]:
    f = tuple(float(x) for x in fractions)
    if len(f) != 3 or any(not 0 < x < 1 for x in f) or abs(sum(f) - 1) > 1e-6:
        raise ValueError(
            f"fractions must be three numbers in (0, 1) summing to 1 (train, dev, test), got {list(fractions)}"
        )
    return f  # type: ignore[return-value]


def part_sizes(n: int, fractions: Sequence[float], what: str = "items") -> tuple[int, int, int]:
    """(train, dev, test) sizes of ``n`` items; each at least 1, so ``n`` must be at least 3."""
    _, f_dev, f_test = check_fractions(fractions)
    if n < 3:
        raise ValueError(
            f"cannot split {n} {what} into non-empty train/dev/test parts (need at least 3)"
        )
    n_dev = max(1, int(np.floor(n * f_dev + 0.5)))
    n_test = max(1, int(np.floor(n * f_test + 0.5)))
    n_train = n - n_dev - n_test
    if n_train < 1:
        raise ValueError(f"{n} {what} leave no training item with fractions {list(fractions)}")
    return n_train, n_dev, n_test


def _cut(
    keys: np.ndarray, fractions: Sequence[float], rng: np.random.Generator, what: str
) -> pd.Series:
    """Shuffle sorted ``keys`` and label them train/dev/test by :func:`part_sizes`."""
    order = rng.permutation(len(keys))
    sizes = part_sizes(len(keys), fractions, what)
    labels = np.repeat(np.array(PARTS, dtype=object), sizes)
    return pd.Series(labels, index=keys[order], name="part")


def _frame(pairs: pd.DataFrame, parts: pd.Series | np.ndarray) -> pd.DataFrame:
    out = pd.DataFrame(
        {
            "pair_id": pairs["pair_id"].to_numpy(),
            "article_id": pairs["article_id"].to_numpy(),
            "part": np.asarray(parts, dtype=object),
        }
    )
    return out.sort_values("pair_id", kind="stable").reset_index(drop=True)


def _primary(pairs: pd.DataFrame, articles: pd.DataFrame) -> pd.Series:
    """The primary category of each pair's article; a pair without an article row raises."""
    meta = articles.assign(article_id=articles["article_id"].astype(str)).drop_duplicates(
        "article_id"
    )
    primary = meta.set_index("article_id")["primary_category"]
    ids = pairs["article_id"].astype(str)
    missing = sorted(set(ids) - set(primary.index))
    if missing:
        raise ValueError(
            f"{len(missing)} article ids of the pairs are not in the articles table, e.g. {missing[:3]}"
        )
    return primary.reindex(ids).set_axis(pairs.index)


def _chapters(pairs: pd.DataFrame, articles: pd.DataFrame | None) -> pd.Series:
    """The chapter of each pair's article (the unit of the Unmixed cut): the articles table's
    ``chapter`` where it has one (the parts of a split book chapter share it), else the article."""
    ids = pairs["article_id"].astype(str)
    if articles is None or "chapter" not in articles.columns:
        return ids
    meta = articles.assign(article_id=articles["article_id"].astype(str)).drop_duplicates(
        "article_id"
    )
    chapter = meta.set_index("article_id")["chapter"].reindex(ids).set_axis(pairs.index)
    return chapter.where(chapter.notna(), ids).astype(str)


def _check_request(
    fractions: Sequence[float], pr_category: str | None, which: Sequence[str]
) -> None:
    check_fractions(fractions)
    unknown = sorted(set(which) - set(SPLITS))
    if unknown or not which:
        raise ValueError(f"splits must be among {SPLITS}, got {list(which)}")
    if "pr" in which and pr_category is None:
        raise ValueError("the pr split needs pr_category")


def _sorted_pairs(pairs: pd.DataFrame) -> pd.DataFrame:
    """``pair_id`` and ``article_id`` as strings, sorted by ``pair_id``; a duplicate id raises."""
    for col in ("pair_id", "article_id"):
        if col not in pairs.columns:
            raise ValueError(f"pairs lack column {col!r}")
    pairs = pairs[["pair_id", "article_id"]].astype({"pair_id": str, "article_id": str})
    dups = pairs["pair_id"][pairs["pair_id"].duplicated()]
    if len(dups):
        raise ValueError(f"{len(dups)} duplicate pair ids, e.g. {sorted(dups)[:3]}")
    return pairs.sort_values("pair_id", kind="stable").reset_index(drop=True)


def _mixed(pairs: pd.DataFrame, fractions: Sequence[float], seed: int) -> pd.DataFrame:
    """Mixed: the pairs themselves cut (their own random stream)."""
    mixed = _cut(
        pairs["pair_id"].to_numpy(),
        fractions,
        np.random.default_rng([seed, _MIXED_STREAM]),
        "pairs",
    )
    return _frame(pairs, mixed.reindex(pairs["pair_id"]).to_numpy())


def _is_pr(
    pairs: pd.DataFrame, articles: pd.DataFrame | None, pr_category: str | None
) -> np.ndarray:
    """Whether each pair's article has the primary category ``pr_category`` (the stratum)."""
    if pr_category is None:
        return np.zeros(len(pairs), dtype=bool)
    if articles is None:
        raise ValueError(
            "the unmixed/pr splits are stratified by pr_category and need the articles table"
        )
    return (_primary(pairs, articles) == pr_category).to_numpy()


def _unmixed(
    pairs: pd.DataFrame,
    groups: pd.Series,
    is_pr: np.ndarray,
    fractions: Sequence[float],
    seed: int,
    pr_category: str | None,
    with_pr: bool,
) -> pd.DataFrame:
    """Unmixed: the chapters (``groups``) cut stratum by stratum, pr chapters first, every pair
    following its chapter; a stratum of fewer than three chapters goes to train."""
    pr_groups = np.sort(groups[is_pr].unique())
    other_groups = np.sort(np.setdiff1d(groups.unique(), pr_groups))
    if with_pr and len(pr_groups) < 3:
        raise config.ConfigError(
            f"the pr split needs at least 3 chapters (articles) with primary category {pr_category!r} "
            f"among the pairs, found {len(pr_groups)}. Set splits.pr_category: null (no "
            "probability-domain split; Table 6 then says why), or to a primary category that 3 "
            "articles of the metadata table have"
        )
    rng = np.random.default_rng([seed, _UNMIXED_STREAM])
    strata = []
    for keys, what in (
        (pr_groups, f"{pr_category} chapters (articles)"),
        (other_groups, "chapters (articles)"),
    ):
        if len(keys) >= 3:
            strata.append(_cut(keys, fractions, rng, what))
        elif len(keys):
            strata.append(pd.Series("train", index=keys, name="part", dtype=object))
    unmixed = _frame(pairs, pd.concat(strata).reindex(groups).to_numpy())
    _require_parts(
        unmixed,
        "unmixed",
        "the Unmixed split cuts the chapters (articles) with pairs, so it needs at least 3 "
        f"(found {len(pr_groups) + len(other_groups)}). Set splits.families: [mixed] to make "
        "only the Mixed split (the tables' Unmixed and pr rows then say why they were not run)",
    )
    return unmixed


def _pr(unmixed: pd.DataFrame, pairs: pd.DataFrame, is_pr: np.ndarray) -> pd.DataFrame:
    """pr: the Unmixed rows of the pairs in the pr stratum."""
    pr_ids = set(pairs.loc[is_pr, "pair_id"])
    pr = unmixed[unmixed["pair_id"].isin(pr_ids)].reset_index(drop=True)
    _require_parts(pr, "pr")
    return pr


def make_splits(
    pairs: pd.DataFrame,
    articles: pd.DataFrame | None,
    fractions: Sequence[float] = tuple(config.default("splits.fractions")),
    seed: int = config.default("seed"),
    pr_category: str | None = config.default("splits.pr_category"),
    which: Sequence[str] = SPLITS,
) -> dict[str, pd.DataFrame]:
    """The splits named in ``which`` (default: ``mixed``, ``unmixed`` and ``pr``).

    Each value has columns pair_id, article_id, part (train/dev/test), sorted by pair_id.
    ``articles`` (article_id, primary_category) is needed whenever ``pr_category`` is set, because
    the Unmixed cut is stratified by it: the Unmixed split is the same whether or not ``pr`` is
    requested. ``pr_category=None`` gives an unstratified Unmixed split and no ``pr``.
    """
    _check_request(fractions, pr_category, which)
    pairs = _sorted_pairs(pairs)
    out: dict[str, pd.DataFrame] = {}
    if "mixed" in which:
        if len(pairs) < 3:
            raise config.ConfigError(
                f"the Mixed split cuts the pairs into train, dev and test, so it needs at least 3; "
                f"the corpus gave {len(pairs)} (results/data/filter_report.json says what the "
                "filters dropped: filter.min_tokens, filter.max_tokens and filter.language set "
                "them). A corpus this small can still be searched: proofmatch index-corpus DIR"
            )
        out["mixed"] = _mixed(pairs, fractions, seed)
    if "unmixed" not in which and "pr" not in which:
        return out
    is_pr = _is_pr(pairs, articles, pr_category)
    unmixed = _unmixed(
        pairs, _chapters(pairs, articles), is_pr, fractions, seed, pr_category, "pr" in which
    )
    if "unmixed" in which:
        out["unmixed"] = unmixed
    if "pr" in which:
        out["pr"] = _pr(unmixed, pairs, is_pr)
    return out


def _require_parts(split: pd.DataFrame, name: str, fix: str = "the corpus is too small") -> None:
    empty = [p for p in PARTS if not (split["part"] == p).any()]
    if empty:
        raise config.ConfigError(
            f"the {name} split has empty parts {empty} ({len(split)} pairs, "
            f"{split['article_id'].nunique()} articles): {fix}"
        )


def split_counts(splits: dict[str, pd.DataFrame]) -> dict[str, dict[str, dict[str, int]]]:
    """Pairs and articles per part of each split (logged and printed by the CLI)."""
    return {
        name: {
            p: {
                "pairs": int((df["part"] == p).sum()),
                "articles": int(df.loc[df["part"] == p, "article_id"].nunique()),
            }
            for p in PARTS
        }
        for name, df in splits.items()
    }


def write_splits(
    pairs_parquet: str | os.PathLike,
    articles_parquet: str | os.PathLike | None,
    out_paths: dict[str, str | os.PathLike],
    fractions: Sequence[float] = tuple(config.default("splits.fractions")),
    seed: int = config.default("seed"),
    pr_category: str | None = config.default("splits.pr_category"),
) -> dict[str, dict[str, dict[str, int]]]:
    """Compute the splits named in ``out_paths`` and write each to its Parquet atomically."""
    if not out_paths:
        raise ValueError(f"out_paths must name at least one of {SPLITS}")
    pairs = read_parquet(pairs_parquet, columns=["pair_id", "article_id"])
    # the articles table gives the categories (stratification) and the chapters (the cut's unit)
    needs_articles = bool(set(out_paths) & {"unmixed", "pr"})
    articles = (
        read_parquet(articles_parquet) if needs_articles and articles_parquet is not None else None
    )
    splits = make_splits(pairs, articles, fractions, seed, pr_category, which=tuple(out_paths))
    for name, path in out_paths.items():
        write_parquet(splits[name], path)
    info = split_counts({k: splits[k] for k in out_paths})
    log.info("splits: %s", json.dumps(info))
    return info


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pairs", required=True, help="filtered pairs (results/data/pairs.parquet)"
    )
    parser.add_argument("--articles", help="results/corpus/articles.parquet (primary categories)")
    for name in SPLITS:
        parser.add_argument(f"--{name}", metavar="PATH", help=f"write the {name} split here")
    config.add_option(
        parser,
        "--fractions",
        key="splits.fractions",
        type=float,
        nargs=3,
        metavar=("TRAIN", "DEV", "TEST"),
        help="train, dev and test shares",
    )
    config.add_option(parser, "--seed", key="seed", type=int, help="global seed")
    config.add_option(
        parser,
        "--pr-category",
        key="splits.pr_category",
        help="primary category of the pr split; 'none': unstratified unmixed, no pr",
    )
    parser.add_argument("--log", help="log file")


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    out_paths = {name: getattr(args, name) for name in SPLITS if getattr(args, name)}
    if not out_paths:
        log.error("nothing to do: pass at least one of --mixed, --unmixed, --pr")
        return 2
    if args.pr_category is not None and args.pr_category.lower() in ("none", "null", ""):
        args.pr_category = None
    if args.pr_category is not None and not args.articles and ({"unmixed", "pr"} & set(out_paths)):
        log.error(
            "--unmixed/--pr are stratified by --pr-category and need --articles (or --pr-category none)"
        )
        return 2
    info = write_splits(
        args.pairs, args.articles, out_paths, args.fractions, args.seed, args.pr_category
    )
    print(json.dumps(info, indent=2))
    return 0
