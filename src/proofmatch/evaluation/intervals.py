"""The 95 % intervals of a table of scores (Tables 3-6, baselines): each cell's, and each learned
row's difference from BM25 on the same statements (:mod:`proofmatch.evaluation.bootstrap`).

A cell's interval comes from its evaluation's per-statement Parquet, which lies beside the JSON the
table reads (same stem). A learned or fused cell is set against BM25 scored on the same part at the
same test level (:func:`reference`): local rows by MRR, global rows by global accuracy; the paired
interval of that difference is what says whether a gap is more than the pool's noise.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from proofmatch import experiments as X
from proofmatch.evaluation import bootstrap as B
from proofmatch.experiments import Evaluation, Table
from proofmatch.render import format_cell

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


def statement_file(source: str | os.PathLike) -> Path:
    """The per-statement Parquet beside an evaluation JSON."""
    return Path(source).with_suffix(".parquet")


def load_frames(results: Mapping[Evaluation, Any]) -> dict[Evaluation, pd.DataFrame] | None:
    """Each evaluation's per-statement vectors, or None when a result was given as loaded metrics
    (a dict: a test's table, which has no per-statement file and so no intervals)."""
    if any(isinstance(source, Mapping) for source in results.values()):
        return None
    return {ev: B.per_statement(statement_file(source)) for ev, source in results.items()}


def _metric(decoding: str) -> tuple[str, str]:
    """(the MRR-column metric, the Acc-column metric) of a decoding; global decoding has no MRR."""
    return ("mrr", "acc") if decoding == "local" else ("", "global_acc")


def interval_columns(table: Table, frames: Mapping[Evaluation, pd.DataFrame], resamples: int,
                     seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per row of ``table``: the numeric interval columns (CSV: ``<group> MRR lo`` ... and the
    difference from BM25, ``<group> Δ BM25`` with its ``lo``/``hi``, in %) and their Markdown
    strings (``[46.1, 54.7]``; the difference as ``−19.3 [−24.0, −14.6]``)."""
    numeric, shown = [], []
    for row in table.rows:
        num: dict[str, float] = {}
        txt: dict[str, str] = {}
        mrr_metric, acc_metric = _metric(row.decoding)
        delta_metric = mrr_metric or acc_metric
        for group, ev in zip(table.groups, row.cells):
            frame = frames.get(ev)
            for col, metric in (("MRR", mrr_metric), ("Acc", acc_metric)):
                iv = B.interval(frame[metric].to_numpy(), resamples, seed) if frame is not None and metric else None
                num[f"{group} {col} lo"] = np.nan if iv is None else 100 * iv.low
                num[f"{group} {col} hi"] = np.nan if iv is None else 100 * iv.high
                txt[f"{group} {col}"] = "" if iv is None else f"[{100 * iv.low:.1f}, {100 * iv.high:.1f}]"
            ref = reference(ev)
            d = None
            if ref is not None and frame is not None and ref in frames:
                d = B.contrast([(1.0, frame), (-1.0, frames[ref])], delta_metric, resamples, seed)
            num[f"{group} {DELTA}"] = np.nan if d is None else 100 * d.value
            num[f"{group} {DELTA} lo"] = np.nan if d is None else 100 * d.low
            num[f"{group} {DELTA} hi"] = np.nan if d is None else 100 * d.high
            txt[f"{group} {DELTA}"] = "" if d is None else (
                f"{100 * d.value:+.1f} [{100 * d.low:+.1f}, {100 * d.high:+.1f}]".replace("-", "−"))
        numeric.append(num)
        shown.append(txt)
    return pd.DataFrame(numeric), pd.DataFrame(shown)


def with_intervals(df: pd.DataFrame, table: Table, frames: Mapping[Evaluation, pd.DataFrame] | None,
                   resamples: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """(the CSV frame: ``df`` with the interval columns after its own, the Markdown frame: each score
    followed by its interval, and a difference column per group), or (``df``, None) without frames."""
    if frames is None:
        return df, None
    numeric, shown = interval_columns(table, frames, resamples, seed)
    csv = pd.concat([df.drop(columns="Note"), numeric, df[["Note"]]], axis=1)
    display = df.map(format_cell).astype(object)
    for col in shown.columns:
        if col in display.columns:
            display[col] = [f"{v} {iv}".strip() if iv else v for v, iv in zip(display[col], shown[col])]
    deltas = [c for c in shown.columns if c.endswith(DELTA)]
    if any(shown[c].ne("").any() for c in deltas):
        display = pd.concat([display.drop(columns="Note"), shown[deltas].replace("", "–"), display[["Note"]]],
                            axis=1)
    return csv, display


def caption(resamples: int) -> str:
    """What a table with intervals adds to its caption."""
    return (f" Brackets: 95 % bootstrap interval over the pool's statements ({resamples} seeded resamples; "
            "global accuracy resampled under the fixed assignment). Δ BM25: the row minus BM25 on the same "
            "statements (local rows by MRR, global rows by global accuracy), with its paired interval. "
            "One seed per cell (config seed); the headline runs' seed spread is in seeds.md.")
