"""Tables 1 and 2 (paper §4): the numbers of :mod:`proofmatch.data.stats` laid out as the paper
lays them out, written to ``{out_prefix}.md/.tex/.csv`` with their registered captions
(:data:`proofmatch.result_tables.TABLES`). The workflow's ``table1`` and ``table2`` rules and
``proofmatch stats`` call :func:`write_table1` and :func:`write_table2`.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from proofmatch import result_tables as RT
from proofmatch.artifacts import read_parquet
from proofmatch.data.categories import category_label
from proofmatch.data.stats import (
    TOKEN_STATS_COLUMNS,
    CorpusStats,
    corpus_stats,
    token_stats,
    token_stats_file,
)
from proofmatch.evaluation.tables import write_frame


def table1(s: CorpusStats) -> pd.DataFrame:
    """Table 1 as a three-column frame (statistic, value, pairs), laid out like the paper."""
    rows: list[tuple[str, object, object]] = [
        ("Number of articles in the corpus", s.articles, None),
        ("Articles with statement-proof pairs", s.articles_with_pairs, None),
        ("Total number of statement-proof pairs", s.pairs, None),
        ("Number of (primary) categories", f"({s.primary_categories}) {s.categories}", None),
        ("Average number of categories per article", round(s.categories_per_article, 2), None),
        ("Most represented primary categories", "# articles", "# pairs"),
    ]
    rows += [
        (category_label(r.category), int(r.articles), int(r.pairs))
        for r in s.top_categories.itertuples()
    ]
    return pd.DataFrame(rows, columns=["statistic", "value", "pairs"])


def _fmt_num(x: float, pct: bool) -> str:
    if np.isnan(x):
        return "–"
    s = f"{x:.1f}" if pct or not float(x).is_integer() else f"{int(x)}"
    return s + ("%" if pct else "")


def table2(num: pd.DataFrame) -> pd.DataFrame:
    """Table 2 formatted as in the paper from :func:`proofmatch.data.stats.token_stats`: min, max
    and mean ± SD per measure."""
    out = []
    for r in num.itertuples(index=False):
        pct = r.measure == "Math proportion"
        mean_sd = "–" if np.isnan(r.mean) else f"{r.mean:.1f}{'%' if pct else ''} ± {r.sd:.1f}"
        out.append((r.part, r.measure, _fmt_num(r.min, pct), _fmt_num(r.max, pct), mean_sd))
    return pd.DataFrame(out, columns=["part", "tokens", "min", "max", "mean ± SD"])


def _frame(obj: str | os.PathLike | pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``obj`` itself, or only ``columns`` of the Parquet file ``obj``; missing columns raise."""
    names = obj.columns if isinstance(obj, pd.DataFrame) else pq.read_schema(obj).names
    missing = [c for c in columns if c not in names]
    if missing:
        raise ValueError(
            f"{obj if not isinstance(obj, pd.DataFrame) else 'frame'} lacks columns {missing}"
        )
    return obj if isinstance(obj, pd.DataFrame) else read_parquet(obj, columns=columns)


def write_table1(
    manifest: str | os.PathLike | pd.DataFrame,
    articles: str | os.PathLike | pd.DataFrame,
    pairs: str | os.PathLike | pd.DataFrame,
    out_prefix: str | os.PathLike,
    top: int = 13,
) -> pd.DataFrame:
    """Write Table 1 to ``{out_prefix}.md/.tex/.csv``; accepts frames or Parquet paths."""
    s = corpus_stats(
        _frame(manifest, ["article_id"]),
        _frame(articles, ["article_id", "categories", "primary_category"]),
        _frame(pairs, ["article_id"]),
        top=top,
    )
    return write_frame(table1(s), out_prefix, RT.TABLES["table1"].caption)


def write_table2(
    pairs: str | os.PathLike | pd.DataFrame, out_prefix: str | os.PathLike
) -> pd.DataFrame:
    """Write Table 2 to ``{out_prefix}.md/.tex/.csv``; accepts a frame or a Parquet path (read in
    batches: :func:`proofmatch.data.stats.token_stats_file`)."""
    if isinstance(pairs, pd.DataFrame):
        num = token_stats(_frame(pairs, TOKEN_STATS_COLUMNS))
    else:
        num = token_stats_file(pairs)
    return write_frame(table2(num), out_prefix, RT.TABLES["table2"].caption)
