"""This run beside the paper: every cell of Tables 3-6 that the paper reports, with the paper's
value, this run's and the difference (``results/tables/paper_comparison.{md,csv}``).

The paper's values are read from :data:`proofmatch.evaluation.paper.PAPER_RESULTS`; each is mapped
to the project's cell by its identifiers (:func:`proofmatch.evaluation.paper.project_cell`) and
this run's value is read from that cell's evaluation JSON exactly as the table renderer reads it
(:func:`proofmatch.evaluation.tables.cells`), so the comparison shows the numbers of
``results/tables/table{3,4,5,6}.csv``. Differences are this run minus the paper, in points (the
scores are percentages). A cell whose project row is not run (``not_run``, as in the tables) shows
the paper's value and the reason; a missing result of any other cell is an error.

The caption names the corpus (``corpus.source`` and its folder(s)), its size after filtering (the
filter report's kept articles and pairs) and the decoding pool of each split: the number of test
pairs every statement is ranked against (the evaluations' ``n``) and the MRR of ranking them at
random (:func:`proofmatch.evaluation.captions.chance_mrr`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from proofmatch import experiments as X
from proofmatch import result_tables as RT
from proofmatch.artifacts import read_json, write_csv, write_text
from proofmatch.evaluation import intervals as I
from proofmatch.evaluation import paper as P
from proofmatch.evaluation.captions import chance, pool_sizes
from proofmatch.evaluation.tables import Source, cells, load_metrics
from proofmatch.registry.sources import SOURCES
from proofmatch.render import to_markdown

log = logging.getLogger(__name__)

COLUMNS = ["Table", "Row", "Column", "Paper", "This run", "Difference", "Note"]
# The paper's corpus (Table 1 and §8): MREC articles with pairs, pairs, and the test part of Mixed.
PAPER_CORPUS = (
    "the paper: MREC (arXiv), 27,841 articles with 184,094 statement-proof pairs; pool 18,408 test "
    "pairs (Mixed, §8)"
)


def corpus_label(source: str, dirs: str | Sequence[str] | None) -> str:
    """The corpus as ``corpus.source`` and ``corpus.dir`` name it (its source's label,
    :data:`proofmatch.registry.sources.SOURCES`): the demo corpus, or the folder(s) of XHTML articles
    or LaTeX sources."""
    spec = SOURCES[source]
    if spec.reads is None:
        return spec.label
    folders = [dirs] if isinstance(dirs, str) else list(dirs or [])
    if not folders or not all(isinstance(d, str) and d for d in folders):
        raise ValueError(
            f"corpus.source {source!r} needs corpus.dir (one folder or several), got {dirs!r}"
        )
    return spec.label.format(dirs=", ".join(folders))


def corpus_size(filter_report: Source) -> tuple[int, int]:
    """(articles, pairs) kept by the filter (``results/data/filter_report.json``)."""
    report = dict(filter_report) if isinstance(filter_report, Mapping) else read_json(filter_report)
    missing = [k for k in ("articles_kept", "kept") if k not in report]
    if missing:
        raise ValueError(f"{filter_report}: not a filter report (no {missing})")
    return int(report["articles_kept"]), int(report["kept"])


# The released dataset's size and Mixed test pool (paper Table 1 and §8): a corpus with both is
# the paper's own (corpus.source: match on the release).
PAPER_PAIRS = 184_094
PAPER_MIXED_TEST = 18_408


def caption(
    corpus: str,
    articles: int | None = None,
    pairs: int | None = None,
    pools: Mapping[str, int] | None = None,
    splits: Iterable[str] = (),
) -> str:
    """The comparison's caption. The corpus's size after filtering and the test pool per split are
    known once the run has them (the .md file); without them (the HTML report's caption, rule
    params ``caption``, planned before any job) it names the corpus only."""
    size = ""
    if articles is not None:
        pool = "; ".join(
            f"{X.SPLIT_NAMES[s]} {chance(pools[s])}"
            if s in (pools or {})
            else f"{X.SPLIT_NAMES[s]} not run"
            for s in splits
        )
        size = (
            f", {articles:,} articles with {pairs:,} statement-proof pairs after filtering; pool "
            f"(test pairs per split, chance MRR = H_n / n in %): {pool}"
        )
        if (pools or {}).get("mixed") == PAPER_MIXED_TEST and pairs == PAPER_PAIRS:
            size += (
                f". The pools are the paper's own ({PAPER_PAIRS:,} pairs, Mixed test "
                f"{PAPER_MIXED_TEST:,}), so the table reads cell for cell"
            )
    return RT.TABLES["paper_comparison"].caption.format(
        corpus=corpus, size=size, paper=PAPER_CORPUS
    )


def compare(
    cells_: Sequence[P.PaperCell],
    results: Mapping[X.Evaluation, Source],
    not_run: Mapping[Hashable, str] | None = None,
) -> tuple[pd.DataFrame, dict[str, int]]:
    """The comparison frame (:data:`COLUMNS`, one row per paper cell) and the pool size of each
    split that has results."""
    not_run = not_run or {}
    tables = RT.tables(P.PART)
    metrics = {ev: load_metrics(src) for ev, src in results.items()}
    rows, missing = [], []
    for cell in cells_:
        table, row, ev = P.project_cell(cell, tables)
        reason = table.reason(row, not_run)
        value = None
        if ev in metrics:
            mrr, acc = cells(metrics[ev], row.decoding)
            value = mrr if cell.metric == "mrr" else acc
        elif reason is None:
            missing.append(ev)
        diff = None if value is None else value - cell.value
        rows.append(
            [
                RT.TABLES[cell.table].title,
                cell.row,
                cell.column,
                cell.value,
                value,
                diff,
                reason or "",
            ]
        )
    if missing:
        shown = ", ".join(str(ev.path()) for ev in list(dict.fromkeys(missing))[:4])
        raise KeyError(
            f"paper comparison: {len(missing)} result(s) missing and not marked as not run: {shown}"
        )
    return pd.DataFrame(rows, columns=COLUMNS), pool_sizes(metrics)


def with_intervals(
    df: pd.DataFrame,
    cells_: Sequence[P.PaperCell],
    results: Mapping[X.Evaluation, Source],
    bootstrap: tuple[int, int],
    loaded: Mapping[X.Evaluation, Mapping[str, Any]] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """``df`` with the 95 % interval over the pool's statements of each "This run" value (CSV
    ``This run lo``/``hi``, Markdown brackets), when the results carry their per-statement
    block (:mod:`proofmatch.evaluation.intervals`); as it is for loaded results. ``loaded``: the
    results as already read, so no JSON is read twice."""
    frames = I.load_frames(results, loaded)
    if frames is None:
        return df, None
    tables = RT.tables(P.PART)
    scored = []
    for i, cell in enumerate(cells_):
        _, row, ev = P.project_cell(cell, tables)
        mrr, acc = I.metric_pair(row.decoding)
        scored.append((i, "This run", frames.get(ev), mrr if cell.metric == "mrr" else acc))
    return I.bracketed(df, scored, *bootstrap)


def write_comparison(
    df: pd.DataFrame,
    text: str,
    out_md: str | os.PathLike,
    out_csv: str | os.PathLike,
    shown: pd.DataFrame | None = None,
) -> None:
    write_text(to_markdown(df if shown is None else shown, text), out_md)
    write_csv(df, out_csv)
    log.info("wrote %s and %s (%d cells)", out_md, out_csv, len(df))


def comparison_from_inputs(
    evaluations: Iterable[str | os.PathLike],
    paper_csv: str | os.PathLike,
    filter_report: str | os.PathLike,
    out_md: str | os.PathLike,
    out_csv: str | os.PathLike,
    corpus_source: str,
    corpus_dir: str | Sequence[str] | None,
    not_run: Mapping[Hashable, str] | None = None,
    eval_root: str | os.PathLike = X.EVAL_ROOT,
    bootstrap: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """The workflow's comparison: ``evaluations`` must be exactly what the workflow names for the
    evaluations under ``eval_root`` of the paper's cells not marked in ``not_run`` (their
    folders: :func:`proofmatch.evaluation.paper.evaluation_inputs`, what workflow/rules/tables.smk lists).
    ``bootstrap`` (resamples, seed): each of this run's values gets its 95 % interval."""
    paper_cells = P.read_paper_cells(paper_csv)
    cells = P.evaluations(paper_cells, not_run)
    paths = {str(ev.path(eval_root)): ev for ev in cells}
    expected = X.workflow_inputs(cells, eval_root)
    given = [str(p) for p in evaluations]
    unexpected, absent = sorted(set(given) - set(expected)), sorted(set(expected) - set(given))
    if unexpected or absent:
        raise ValueError(
            f"paper comparison: the inputs are not the paper cells' evaluations: {len(unexpected)} "
            f"unexpected {unexpected[:3]}, {len(absent)} absent {absent[:3]}"
        )
    results = {ev: path for path, ev in paths.items()}
    loaded = {ev: load_metrics(path) for ev, path in results.items()}
    df, pools = compare(paper_cells, loaded, not_run)
    articles, pairs = corpus_size(filter_report)
    splits = list(dict.fromkeys(c.split for c in paper_cells))
    text = caption(corpus_label(corpus_source, corpus_dir), articles, pairs, pools, splits)
    shown = None
    if bootstrap is not None:
        df, shown = with_intervals(df, paper_cells, results, bootstrap, loaded)
        text += I.caption(bootstrap[0], deltas=False) if shown is not None else ""
    write_comparison(df, text, out_md, out_csv, shown)
    return df
