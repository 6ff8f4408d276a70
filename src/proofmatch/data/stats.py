"""Dataset statistics: the numbers of Table 1 (articles, pairs, categories) and Table 2 (token
counts); :mod:`proofmatch.evaluation.tables` lays them out and writes them beside Tables 3-7.

Two ways of counting tokens live here:

* :func:`paper_tokens` / :func:`paper_counts` count the way the reference code's length filter does
  (``get_statement(BOTH).split()``; the paper says only "too short", Appendix A): the **whitespace-separated words
  of the text** (a title "Lemma 3.2." is two tokens, "holds." one) plus **one token per math
  symbol** of the linearized formulas, titles included; for a statement, ``.strip(" .")`` first
  removes lone full stops at its ends. Table 2 and the length filter (:mod:`proofmatch.data.filter_rules`)
  use these counts, so Table 2's minimum and maximum text+math lengths are the filter's bounds,
  as in the paper's Table 2 (20 and 500).
* :func:`token_counts` / :func:`body_counts` count our typed tokens (punctuation split off), after
  the title: the filter uses them to recognise a statement or proof that is only its title.

Typed counting is vectorised over the flattened Arrow token lists (no per-token Python loop),
because the paper-scale corpus has tens of millions of tokens. Whitespace counting needs the text
nodes of the fragment, so it re-reads the fragment's XML and checks it against the stored tokens.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from proofmatch.artifacts import parquet_file
from proofmatch.data.linearize import _events, parse_fragment
from proofmatch.data.views import MATH_PREFIX, is_math, split_math, text_tokens

NO_CATEGORY = "(none)"


def _list_array(tokens: pd.Series) -> pa.ListArray:
    """The token lists as one Arrow list<string> array (nulls become empty lists)."""
    arr = pa.array(tokens.tolist(), type=pa.list_(pa.string()))
    if arr.null_count:
        arr = pc.fill_null(arr, pa.scalar([], type=pa.list_(pa.string())))
    return arr


def token_counts(tokens: pd.Series, skip: pd.Series | None = None) -> pd.DataFrame:
    """Per row: ``text``, ``math`` and ``words`` tokens after the first ``skip`` tokens.

    ``words`` counts text tokens holding a letter or digit (punctuation-only bodies are empty,
    which is how the filter recognises a pair that is only a title). Null lists count as empty.
    A ``skip`` outside ``[0, len(tokens)]`` is a linearizer bug and raises ``ValueError``.
    """
    n = len(tokens)
    arr = _list_array(tokens)
    lengths = pc.list_value_length(arr).to_numpy(zero_copy_only=False).astype(np.int64)
    if skip is None:
        skip_np = np.zeros(n, dtype=np.int64)
    else:
        skip_np = pd.to_numeric(skip, errors="raise").fillna(0).to_numpy(dtype=np.int64)
        bad = (skip_np < 0) | (skip_np > lengths)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{int(bad.sum())} rows have a title length outside their token list, e.g. row {i}: "
                f"title {skip_np[i]} tokens, list {lengths[i]} tokens"
            )
    flat = pc.list_flatten(arr)
    if len(flat) == 0:
        zeros = np.zeros(n, dtype=np.int64)
        return pd.DataFrame({"text": zeros, "math": zeros, "words": zeros}, index=tokens.index)
    parents = pc.list_parent_indices(arr).to_numpy().astype(np.int64)
    starts = arr.offsets.to_numpy().astype(np.int64)[:-1]
    in_body = (np.arange(len(flat)) - starts[parents]) >= skip_np[parents]
    is_math = pc.and_(
        pc.starts_with(flat, MATH_PREFIX), pc.greater(pc.utf8_length(flat), 1)
    ).to_numpy(zero_copy_only=False)
    has_word = pc.match_substring_regex(flat, r"[\pL\pN]").to_numpy(zero_copy_only=False)

    def per_row(mask: np.ndarray) -> np.ndarray:
        return np.bincount(parents[mask], minlength=n).astype(np.int64)

    return pd.DataFrame(
        {
            "text": per_row(in_body & ~is_math),
            "math": per_row(in_body & is_math),
            "words": per_row(in_body & ~is_math & has_word),
        },
        index=tokens.index,
    )


def body_counts(pairs: pd.DataFrame, side: str) -> pd.DataFrame:
    """Token counts of the statement or proof bodies (titles excluded); ``side`` in statement/proof."""
    if side not in ("statement", "proof"):
        raise ValueError(f"side must be 'statement' or 'proof', not {side!r}")
    title_col = f"{side}_title_tokens"
    skip = pairs[title_col] if title_col in pairs else None
    return token_counts(pairs[f"{side}_tokens"], skip)


_DOTS = re.compile(r"\.+")


def _dots_only(token: str) -> bool:
    """Whether ``str.strip(" .")`` would remove the whole reference token (a fontless math
    ``.`` is the reference's ``.``; a font suffix such as ``.____bold`` survives the strip)."""
    if is_math(token):
        symbol, font = split_math(token)
        return font is None and _DOTS.fullmatch(symbol) is not None
    return _DOTS.fullmatch(token) is not None


def paper_tokens(xml: Any, tokens: Sequence[str], statement: bool = False) -> list[str]:
    """The fragment's tokens as the reference code counts them, in reading order.

    Each text node of the fragment (the nodes :mod:`proofmatch.data.linearize` reads) contributes its
    whitespace-separated words; each formula contributes its typed math tokens from ``tokens``
    (the linearizer's output for this fragment). ``statement=True`` applies the reference's
    ``.strip(" .")``. The stored tokens must be exactly those of the XML (``ValueError`` names the
    first mismatch): a stale token column would otherwise be counted silently.
    """
    stored = [str(t) for t in tokens]
    out: list[str] = []
    i = 0
    for kind, value in _events(parse_fragment(xml)):
        if kind == "text":
            expected = text_tokens(value)
            if stored[i : i + len(expected)] != expected:
                raise ValueError(
                    f"stored tokens {stored[i : i + len(expected)]!r} at {i} are not the text {value!r} "
                    "of the fragment (stale token column?)"
                )
            i += len(expected)
            out.extend(value.split())
        else:
            j = i
            while j < len(stored) and is_math(stored[j]):
                j += 1
            out.extend(stored[i:j])
            i = j
    if i != len(stored):
        raise ValueError(
            f"the fragment's XML accounts for {i} of its {len(stored)} stored tokens "
            "(stale token column?)"
        )
    if statement:
        start, end = 0, len(out)
        while start < end and _dots_only(out[start]):
            start += 1
        while end > start and _dots_only(out[end - 1]):
            end -= 1
        out = out[start:end]
    return out


def paper_counts(pairs: pd.DataFrame, side: str) -> pd.DataFrame:
    """Per row, ``text`` and ``math`` tokens of the statement or proof as the reference code's length
    filter counts them (:func:`paper_tokens`); needs the ``{side}_xml`` and ``{side}_tokens`` columns."""
    if side not in ("statement", "proof"):
        raise ValueError(f"side must be 'statement' or 'proof', not {side!r}")
    text = np.zeros(len(pairs), dtype=np.int64)
    math = np.zeros(len(pairs), dtype=np.int64)
    xmls, token_lists = pairs[f"{side}_xml"].to_numpy(), pairs[f"{side}_tokens"].to_numpy()
    for k, (xml, tokens) in enumerate(zip(xmls, token_lists)):
        if tokens is None:
            raise ValueError(
                f"row {k} has no {side} tokens (a linearize error must be filtered first)"
            )
        toks = paper_tokens(xml, tokens, statement=side == "statement")
        math[k] = sum(map(is_math, toks))
        text[k] = len(toks) - math[k]
    return pd.DataFrame({"text": text, "math": math}, index=pairs.index)


# ---------------------------------------------------------------- corpus and categories (Table 1)


@dataclass(frozen=True)
class CorpusStats:
    """The numbers of Table 1. Category statistics are over the articles that keep at least one
    pair after filtering (the dataset); an article without a primary category counts as
    :data:`NO_CATEGORY`."""

    articles: int  # in the corpus (the manifest), with or without pairs
    articles_with_pairs: int
    pairs: int
    primary_categories: int
    categories: int
    categories_per_article: float  # NaN without pairs
    top_categories: (
        pd.DataFrame
    )  # category, articles, pairs: most articles first (then pairs, name)


def _categories(value: object) -> list[str]:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    return [str(c) for c in value]


def corpus_stats(
    manifest: pd.DataFrame, articles: pd.DataFrame, pairs: pd.DataFrame, top: int = 13
) -> CorpusStats:
    """Articles, pairs and categories of the dataset, with the ``top`` primary categories; a pair
    whose article is missing from ``articles`` is an upstream bug and raises."""
    pair_articles = pairs["article_id"].astype(str)
    meta = articles.assign(article_id=articles["article_id"].astype(str)).drop_duplicates(
        "article_id"
    )
    meta = meta.set_index("article_id")
    missing = sorted(set(pair_articles) - set(meta.index))
    if missing:
        raise ValueError(
            f"{len(missing)} article ids of the pairs are not in the articles table, e.g. {missing[:3]}"
        )
    with_pairs = meta.loc[sorted(set(pair_articles))]
    primary = (
        with_pairs["primary_category"]
        .astype(object)
        .where(with_pairs["primary_category"].notna(), NO_CATEGORY)
    )
    all_cats = with_pairs["categories"].map(_categories)
    per_article_pairs = pair_articles.value_counts()
    by_cat = (
        pd.DataFrame(
            {"category": primary, "pairs": per_article_pairs.reindex(primary.index).to_numpy()}
        )
        .groupby("category")
        .agg(articles=("pairs", "size"), pairs=("pairs", "sum"))
        .reset_index()
        .sort_values(
            ["articles", "pairs", "category"], ascending=[False, False, True], kind="stable"
        )
        .head(top)
    )
    return CorpusStats(
        articles=int(manifest["article_id"].nunique()),
        articles_with_pairs=int(len(with_pairs)),
        pairs=int(len(pairs)),
        primary_categories=int((primary.unique() != NO_CATEGORY).sum()),
        categories=len({c for cats in all_cats for c in cats}),
        categories_per_article=float(all_cats.map(len).mean()) if len(all_cats) else float("nan"),
        top_categories=by_cat.reset_index(drop=True),
    )


# ---------------------------------------------------------------- token counts (Table 2)

_MEASURES = (
    ("Text+math", "total"),
    ("Text only", "text"),
    ("Math only", "math"),
    ("Math proportion", "math_pct"),
)
_SIDES = (("Statements", "statement"), ("Proofs", "proof"))
TOKEN_STATS_COLUMNS = ["statement_xml", "proof_xml", "statement_tokens", "proof_tokens"]


def token_stats(pairs: pd.DataFrame) -> pd.DataFrame:
    """Numeric Table 2: part, measure, n, min, max, mean, sd (population SD, defined for n = 1).

    Tokens are counted as the reference code's length filter counts them (:func:`paper_counts`). The math
    proportion is ``math / (text + math)`` in percent, over the statements or proofs with a token.
    """
    return _token_stats({side: paper_counts(pairs, side) for _, side in _SIDES})


def token_stats_file(pairs_parquet: str | os.PathLike, batch_rows: int = 1024) -> pd.DataFrame:
    """:func:`token_stats` of a pairs Parquet file, read in record batches of the four columns the
    counts need, so memory holds one batch of XML fragments and the counts, not the corpus."""
    reader = parquet_file(pairs_parquet)  # checked against its digest
    names = reader.schema_arrow.names
    missing = [c for c in TOKEN_STATS_COLUMNS if c not in names]
    if missing:
        raise ValueError(f"{pairs_parquet} lacks columns {missing}")
    parts: dict[str, list[pd.DataFrame]] = {side: [] for _, side in _SIDES}
    for batch in reader.iter_batches(batch_size=batch_rows, columns=TOKEN_STATS_COLUMNS):
        frame = batch.to_pandas()
        for side, counts in parts.items():
            counts.append(paper_counts(frame, side))
    empty = pd.DataFrame({"text": np.zeros(0, dtype=np.int64), "math": np.zeros(0, dtype=np.int64)})
    return _token_stats(
        {side: pd.concat(c, ignore_index=True) if c else empty for side, c in parts.items()}
    )


def _token_stats(counts: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """:func:`token_stats` from each side's :func:`paper_counts`."""
    rows = []
    for part, side in _SIDES:
        c = counts[side]
        total = c["text"] + c["math"]
        values = {
            "total": total.astype(float),
            "text": c["text"].astype(float),
            "math": c["math"].astype(float),
            "math_pct": (100.0 * c["math"] / total.where(total > 0)).dropna(),
        }
        for label, key in _MEASURES:
            v = values[key].to_numpy()
            if len(v) == 0:
                rows.append((part, label, 0, np.nan, np.nan, np.nan, np.nan))
            else:
                rows.append((part, label, len(v), v.min(), v.max(), v.mean(), v.std(ddof=0)))
    return pd.DataFrame(rows, columns=["part", "measure", "n", "min", "max", "mean", "sd"])
