"""The 95 % intervals of a table of scores (Tables 3-6, baselines): each cell's, and each learned
row's difference from BM25 on the same statements (:mod:`proofmatch.evaluation.bootstrap`).

A cell's interval comes from the ``statements`` block of its evaluation JSON, the file the table
reads anyway (:func:`proofmatch.evaluation.bootstrap.statements_block`). A learned or fused cell is
set against BM25 scored on the same part at the same test level (:func:`reference`): local rows by MRR, global rows by global accuracy; the paired
interval of that difference is what says whether a gap is more than the pool's noise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from proofmatch import experiments as X
from proofmatch.artifacts import read_json
from proofmatch.evaluation import bootstrap as B
from proofmatch.experiments import Evaluation
from proofmatch.render import format_cell
from proofmatch.result_tables import Table

LEXICAL = "bm25"
DELTA = "Δ BM25"  # the column group of a row's paired difference from BM25


def reference(ev: Evaluation) -> Evaluation | None:
    """BM25 on ``ev``'s statements (its split, part and test level), for a trained or fused run;
    None for a baseline."""
    if ev.run() is None:
        return None
    return X.baseline(ev.split, LEXICAL, ev.test_level, ev.part)


def references(evaluations: Iterable[Evaluation]) -> list[Evaluation]:
    """The BM25 evaluations the differences of ``evaluations`` need, each once."""
    return list(dict.fromkeys(r for r in map(reference, evaluations) if r is not None))


def with_references(evaluations: Iterable[Evaluation]) -> list[Evaluation]:
    """What a table with intervals reads: ``evaluations``, then the BM25 evaluations of their
    paired differences (:func:`references`); the one list the table rule's inputs, the table job
    and the intervals' benchmark all name."""
    evaluations = list(evaluations)
    return evaluations + references(evaluations)


def load_frames(
    results: Mapping[Any, Any], loaded: Mapping[Any, Mapping[str, Any]] | None = None
) -> dict[Any, pd.DataFrame] | None:
    """Each evaluation's per-statement vectors, from its JSON's ``statements`` block; None when the
    results were given as loaded metrics without that block (a test's table: no intervals). A JSON
    file without the block was written before proofmatch kept it there: an error, not a table
    without intervals. ``loaded``: the same results as the caller already read them
    (:func:`proofmatch.evaluation.tables.load_metrics`), so no file is read twice."""
    if any(isinstance(s, Mapping) and B.STATEMENTS not in s for s in results.values()):
        return None
    frames = {}
    for ev, source in results.items():
        if loaded is not None:
            metrics = loaded[ev]
        else:
            metrics = source if isinstance(source, Mapping) else read_json(source)
        if B.STATEMENTS not in metrics:
            raise ValueError(
                f"{source}: an evaluation JSON without its {B.STATEMENTS!r} block (written by an "
                "older proofmatch); rerun its evaluation job (snakemake --forcerun on its rule)"
            )
        frames[ev] = B.per_statement(metrics[B.STATEMENTS], source)
    return frames


def metric_pair(decoding: str) -> tuple[str, str]:
    """(the MRR column's metric, the Acc column's metric) of a decoding; global decoding has no MRR."""
    return ("mrr", "acc") if decoding == "local" else ("", "global_acc")


Cell = tuple[
    int, str, "pd.DataFrame | None", str
]  # (row, column of df, per-statement frame, metric)


def bracketed(
    df: pd.DataFrame, cells: Iterable[Cell], resamples: int, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(``df`` with a ``<column> lo`` and ``<column> hi`` column (in %) after its scores and before
    its ``Note``, ``df`` as Markdown cells with each score followed by its interval ``[46.1, 54.7]``).
    A cell without a frame or metric (not run, global MRR) keeps empty bounds."""
    shown = df.map(format_cell).astype(object)
    texts = {c: shown[c].tolist() for c in shown.columns}
    cells = list(cells)
    bounds = {
        f"{column} {end}": [np.nan] * len(df) for _, column, _, _ in cells for end in ("lo", "hi")
    }
    scored = [
        (row, column, frame[metric].to_numpy())
        for row, column, frame, metric in cells
        if frame is not None and metric
    ]
    found = B.many_intervals([values for _, _, values in scored], resamples, seed)
    for (row, column, _), iv in zip(scored, found):
        bounds[f"{column} lo"][row], bounds[f"{column} hi"][row] = 100 * iv.low, 100 * iv.high
        texts[column][row] = f"{texts[column][row]} [{100 * iv.low:.1f}, {100 * iv.high:.1f}]"
    shown = pd.DataFrame(texts, index=df.index, columns=shown.columns, dtype=object)
    rest = [c for c in df.columns if c != "Note"]
    csv = pd.concat([df[rest], pd.DataFrame(bounds, index=df.index), df[["Note"]]], axis=1)
    return csv, shown


def signed(d: B.Interval) -> str:
    """A difference and its interval in points, signed: ``+3.8 [+2.1, +5.6]`` (a true minus sign)."""
    return f"{100 * d.value:+.1f} [{100 * d.low:+.1f}, {100 * d.high:+.1f}]".replace("-", "−")


def with_intervals(
    df: pd.DataFrame,
    table: Table,
    frames: Mapping[Evaluation, pd.DataFrame] | None,
    resamples: int,
    seed: int,
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """(the CSV frame: ``df`` with each score's interval bounds and, per column group, the row's
    paired difference from BM25 on the same statements (``<group> Δ BM25`` with ``lo``/``hi``: local
    rows by MRR, global rows by global accuracy), the Markdown frame), or (``df``, None) without
    per-statement frames."""
    if frames is None:
        return df, None
    cells = [
        (i, f"{group} {col}", frames.get(ev), metric)
        for i, row in enumerate(table.rows)
        for group, ev in zip(table.groups, row.cells)
        for col, metric in zip(("MRR", "Acc"), metric_pair(row.decoding))
    ]
    csv, shown = bracketed(df, cells, resamples, seed)
    paired: list[tuple[tuple[int, str], np.ndarray]] = []  # ((row, group), difference from BM25)
    for i, row in enumerate(table.rows):
        mrr, acc = metric_pair(row.decoding)
        for group, ev in zip(table.groups, row.cells):
            ref = reference(ev)
            if ref is not None and ev in frames and ref in frames:
                terms = [(1.0, frames[ev]), (-1.0, frames[ref])]
                paired.append(((i, group), B.contrast_values(terms, mrr or acc)))
    found = dict(
        zip([key for key, _ in paired], B.many_intervals([v for _, v in paired], resamples, seed))
    )
    deltas: dict[str, list[Any]] = {}
    for i in range(len(table.rows)):
        for group in table.groups:
            d = found.get((i, group))
            for key, value in (
                (f"{group} {DELTA}", d and d.value),
                (f"{group} {DELTA} lo", d and d.low),
                (f"{group} {DELTA} hi", d and d.high),
            ):
                deltas.setdefault(key, [np.nan] * len(df))[i] = np.nan if d is None else 100 * value
            deltas.setdefault(f"shown {group}", ["–"] * len(df))[i] = (
                "–" if d is None else signed(d)
            )
    numeric = {k: v for k, v in deltas.items() if not k.startswith("shown ")}
    if all(np.isnan(v).all() for v in numeric.values()):  # a table with no learned row (none run)
        return csv, shown
    csv = pd.concat(
        [csv.drop(columns="Note"), pd.DataFrame(numeric, index=df.index), csv[["Note"]]], axis=1
    )
    shown_deltas = pd.DataFrame(
        {f"{g} {DELTA}": deltas[f"shown {g}"] for g in table.groups}, index=df.index
    )
    shown = pd.concat([shown.drop(columns="Note"), shown_deltas, shown[["Note"]]], axis=1)
    return csv, shown


def caption(resamples: int, deltas: bool = True) -> str:
    """What a table with intervals adds to its caption."""
    text = (
        f" Brackets: 95 % bootstrap interval over the pool's statements ({resamples} seeded resamples; "
        "global accuracy, and a Global row's Δ BM25, resampled under the pool's one fixed assignment: "
        "conditional on that assignment, narrower than an interval that re-solves it on each resample, "
        "as the findings do)."
    )
    if deltas:
        text += (
            " Δ BM25: the row minus BM25 on the same statements (local rows by MRR, global rows by global "
            "accuracy), with its paired interval."
        )
    return text + " One seed per cell (config seed); the headline runs' seed spread is in seeds.md."
