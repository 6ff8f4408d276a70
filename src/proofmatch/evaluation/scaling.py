"""The data-scaling table and figure: the headline runs, their fusion and the baselines at each
train share of ``report.fractions`` (and 1), with intervals, MRR against train pairs on a log axis,
and where the learned-minus-BM25 gap would cross 0 if its trend in log(pairs) held.

Split from :mod:`proofmatch.evaluation.report` (which keeps the findings and seeds tables and the
shared writers) so that each module reads as one table.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.compute as pc

from proofmatch import experiments as X
from proofmatch import variants as V
from proofmatch.artifacts import atomic_path, read_table
from proofmatch.data.subsample import kept_train_rows
from proofmatch.evaluation import bootstrap as B
from proofmatch.evaluation.intervals import load_frames
from proofmatch.evaluation.report import _label, pools_caption
from proofmatch.experiments import Evaluation
from proofmatch.render import write_tables


def scaling_inputs(config: Mapping[str, Any]) -> list[Evaluation]:
    return V.evaluations({**config, "report": {**config["report"], "seeds": [config["seed"]]}})


def train_pairs(data_parquet: str | os.PathLike) -> int:
    table = read_table(data_parquet, columns=["part"])
    return int(pc.sum(pc.equal(table["part"], "train")).as_py())


def scaling_rows(
    frames: Mapping[Evaluation, pd.DataFrame], config: Mapping[str, Any], n_train: int
) -> pd.DataFrame:
    """One row per (model, fraction) from the evaluations' per-statement frames (each file read
    once: BM25's serves every share): train pairs, MRR with interval, Acc, and for a learned or
    fused row its paired difference from BM25."""
    resamples, seed = config["report"]["resamples"], config["seed"]
    fractions = [*sorted(config["report"]["fractions"]), 1.0]
    bm25 = frames[V.baseline_variant("bm25", 1.0)]
    entries = [
        (_label(ev), f, ev)
        for f, run in V.scaling_runs(config)
        for ev in V.test_evaluations(run, config)
    ]
    entries += [
        (X.METHOD_NAMES[m], f, V.baseline_variant(m, f))
        for m in V.SCALING_BASELINES
        for f in fractions
    ]
    rows = []
    for label, f, ev in entries:
        frame = frames[ev]
        iv = B.interval(frame["mrr"].to_numpy(), resamples, seed)
        d = (
            B.contrast([(1.0, frame), (-1.0, bm25)], "mrr", resamples, seed)
            if ev.run() is not None
            else None
        )
        rows.append(
            {
                "Model": label,
                "Fraction": f,
                "Train pairs": n_train if f >= 1 else len(kept_train_rows(n_train, f, seed)),
                "MRR": 100 * iv.value,
                "MRR lo": 100 * iv.low,
                "MRR hi": 100 * iv.high,
                "Acc": 100 * frame["acc"].mean(),
                "Δ BM25": np.nan if d is None else 100 * d.value,
                "Δ BM25 lo": np.nan if d is None else 100 * d.low,
                "Δ BM25 hi": np.nan if d is None else 100 * d.high,
            }
        )
    return pd.DataFrame(rows)


MIN_TREND_POINTS = 3  # training sizes a trend is fitted to; fewer: no crossing extrapolated


def crossing(df: pd.DataFrame, model: str) -> float | None:
    """The train pairs at which ``model``'s gap to BM25 would reach 0 if it kept its least-squares
    trend in log(pairs); None when it does not rise (or is already above), or when fewer than
    :data:`MIN_TREND_POINTS` training sizes were measured (two points always make a line)."""
    sub = df[df["Model"] == model].dropna(subset=["Δ BM25"])
    if sub["Train pairs"].nunique() < MIN_TREND_POINTS:
        return None
    slope, icept = np.polyfit(
        np.log(sub["Train pairs"].to_numpy(float)), sub["Δ BM25"].to_numpy(float), 1
    )
    if slope <= 0 or sub["Δ BM25"].iloc[-1] >= 0:
        return None
    return float(np.exp(-icept / slope))


def scaling_figure(
    df: pd.DataFrame, out_png: str | os.PathLike, out_pdf: str | os.PathLike
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=150)
    for model, sub in df.groupby("Model", sort=False):
        x = sub["Train pairs"].to_numpy(float)
        y = sub["MRR"].to_numpy(float)
        ax.errorbar(
            x, y, yerr=[y - sub["MRR lo"], sub["MRR hi"] - y], marker="o", capsize=3, label=model
        )
    ax.set_xscale("log")
    ax.set_xlabel("training pairs (Mixed Conservation train part, log scale)")
    ax.set_ylabel("test MRR (%) with 95 % interval")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    for out in (out_png, out_pdf):
        with atomic_path(out, suffix=Path(out).suffix) as tmp:
            fig.savefig(tmp)
    plt.close(fig)


def write_scaling(
    paths: Mapping[Evaluation, str | os.PathLike],
    config: Mapping[str, Any],
    data_parquet: str | os.PathLike,
    out_prefix: str | os.PathLike,
    out_png: str | os.PathLike,
    out_pdf: str | os.PathLike,
) -> pd.DataFrame:
    """``scaling.{md,tex,csv}`` and the scaling figure."""
    frames = load_frames(paths)
    df = scaling_rows(frames, config, train_pairs(data_parquet))
    crosses = []
    sizes = df.loc[df["Δ BM25"].notna(), "Train pairs"].nunique()
    for model in dict.fromkeys(df.loc[df["Δ BM25"].notna(), "Model"]):
        n = crossing(df, model)
        crosses.append(
            f"{model}: " + ("no crossing on this trend" if n is None else f"about {n:,.0f} pairs")
        )
    if sizes >= MIN_TREND_POINTS:
        trend = (
            "Where the learned − BM25 gap would reach 0 if its least-squares trend in log(train "
            "pairs) held: " + "; ".join(crosses) + "."
        )
    else:
        trend = (
            f"Only {sizes} training size{'s' if sizes != 1 else ''} measured: no trend is fitted "
            f"and no crossing extrapolated (that needs at least {MIN_TREND_POINTS}; "
            "report.fractions adds sizes)."
        )
    caption = (
        "Data scaling (this project's addition): test MRR (%) on Mixed Conservation with its 95 % bootstrap "
        "interval, each model trained on a share of the train part (a smaller share is a prefix of a larger "
        "one; dev and test parts unchanged). BM25 does not read the train part: its rows repeat the full one. "
        "Δ BM25: paired difference on the same statements. "
        + trend
        + " One seed (config seed)."
        + pools_caption(frames)
    )
    shown = df.copy()
    shown["MRR"] = [
        f"{m:.2f} [{lo:.1f}, {hi:.1f}]" for m, lo, hi in zip(df["MRR"], df["MRR lo"], df["MRR hi"])
    ]
    shown["Δ BM25"] = [
        "–" if np.isnan(d) else f"{d:+.1f} [{lo:+.1f}, {hi:+.1f}]".replace("-", "−")
        for d, lo, hi in zip(df["Δ BM25"], df["Δ BM25 lo"], df["Δ BM25 hi"])
    ]
    shown["Fraction"] = [f"{f:g}" for f in df["Fraction"]]
    shown = shown.drop(columns=["MRR lo", "MRR hi", "Δ BM25 lo", "Δ BM25 hi"])
    write_tables(df, out_prefix, caption, shown)
    scaling_figure(df, out_png, out_pdf)
    return df
