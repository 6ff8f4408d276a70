"""A training run's curve (``curve.png``): its loss per step and per epoch, and its dev metrics.

Kept apart from the training loop (:mod:`proofmatch.models.train`): drawing needs matplotlib and
none of the loop's state, only the rows of its history.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from proofmatch.artifacts import atomic_path

STEP_LOSS = "step_loss"  # an epoch row's loss of each step, in order (the curve draws them)


def curve_title(out: Path, encoder: str, mode: str, view: str, seed: int) -> str:
    """The curve's title: the model, and the split and level it was trained on, read from the
    run's folder when it is the workflow's ``results/runs/{split}/{encoder}-{mode}/{level}-{view}``."""
    parts = Path(out).parts
    where = ""
    if len(parts) >= 4 and parts[-4] == "runs":
        level = parts[-1].split("-", 1)
        trained = level[0] + (f" ({level[1]})" if len(level) > 1 and level[1] != view else "")
        where = f", split {parts[-3]}, trained on level {trained}"
    return f"{encoder}-{mode}{where}, {view} view, seed {seed}"


def plot_curve(history: list[dict], path: Path, title: str) -> None:
    """Training loss per step (light) and per epoch (its mean, markers), x in epochs, so a run of
    one epoch still shows how its loss went; dev MRR and accuracy (%, as the tables) per epoch."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = pd.DataFrame(history)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.4))
    steps = [row.get(STEP_LOSS) or [] for row in history]
    if any(steps):
        xs, ys = [], []
        for row, losses in zip(history, steps):
            n = len(losses)
            xs += [row["epoch"] - 1 + (k + 1) / n for k in range(n)]
            ys += list(losses)
        ax1.plot(xs, ys, lw=0.6, alpha=0.45, color="tab:gray", label="loss per step")
        if len(ys) >= 10:
            w = max(2, len(ys) // 20)
            smooth = pd.Series(ys).rolling(w, min_periods=1).mean()
            ax1.plot(xs, smooth, lw=1.2, color="tab:gray", label=f"running mean of {w} steps")
    for col in ("loss", "local_loss", "global_loss", "triplet_loss"):
        if col in df and df[col].notna().any():
            ax1.plot(df["epoch"], df[col], "o-", label=f"{col} (epoch mean)", lw=1.2, ms=4)
    ax1.set_xlabel("epoch"), ax1.set_ylabel("train loss"), ax1.legend(fontsize=7)
    ev = df[df["dev_mrr"].notna()] if "dev_mrr" in df else df.iloc[0:0]
    ax2.plot(ev["epoch"], 100 * ev["dev_mrr"], "o-", label="dev MRR")
    ax2.plot(ev["epoch"], 100 * ev["dev_acc"], "s--", label="dev acc")
    if "dev_global_acc" in ev and ev["dev_global_acc"].notna().any():
        ax2.plot(ev["epoch"], 100 * ev["dev_global_acc"], "^:", label="dev global acc")
    if len(ev) == 1:  # one epoch: say the values, a lone dot is hard to read
        row = ev.iloc[0]
        ax2.annotate(
            f"MRR {100 * row['dev_mrr']:.1f} %, acc {100 * row['dev_acc']:.1f} %",
            (row["epoch"], 100 * row["dev_mrr"]),
            textcoords="offset points",
            xytext=(8, 6),
            fontsize=7,
        )
    if len(ev):
        last = float(ev["epoch"].max())
        ax2.set_xlim(0.5, last + 0.5)
        if len(ev) <= 12:
            ax2.set_xticks(ev["epoch"].to_numpy())
    ax2.set_xlabel("epoch"), ax2.set_ylabel("dev (%)"), ax2.set_ylim(0, 100)
    ax2.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    with atomic_path(path, ".png") as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
