"""Model selection on the demo: today's defaults (select on dev MRR) against the reference code's
choices (dev accuracy; hybrid runs: dev accuracy of global decoding).

Builds the demo corpus's Mixed split at the Conservation level (the package functions the
workflow rules call, as tests/searchdata.py), then trains NPT-Local and NPT-Hybrid (Both view) with
the demo config's ``matching.npt`` settings for each seed. At every dev evaluation it records dev
MRR, accuracy and global accuracy and, for this measurement only, the test MRR and accuracy of the
same weights; each selection rule then picks its epoch from the dev columns (ties keep the earlier
epoch, as training does), and the table gives that epoch's dev and test MRR. Selection does not
change training (evaluation draws no random numbers), so one run per seed serves every rule.

The demo trains with AdamW, which has no average: ``eval_weights`` (average or raw) makes no
difference there, and under ASGD only after its t0 = 10,000 steps (the demo's 10 epochs are a few
hundred), so it is not measured here.

    python bench/bench_selection.py --out /tmp/selection --seeds 13 1 2
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from proofmatch.config import load_config
from proofmatch.data import corpus, extract, filters, linearize, replace, splits
from proofmatch.data.splits import read_part
from proofmatch.demo import generate as demo
from proofmatch.models import train as train_mod
from proofmatch.models.params import TrainParams

REPO = Path(__file__).resolve().parents[1]
RULES = {
    "default (dev MRR)": {"local": "dev_mrr", "hybrid": "dev_mrr"},
    "reference (dev acc; hybrid: global dev acc)": {"local": "dev_acc", "hybrid": "dev_global_acc"},
}


def build_data(root: Path, cfg: dict) -> Path:
    data = root / "replaced/mixed/conservation.parquet"
    if data.exists():
        return data
    c = root / "demo_corpus"
    demo.generate(
        c, n_articles=cfg["corpus"]["demo"]["n_articles"], seed=cfg["corpus"]["demo"]["seed"]
    )
    corpus.write_manifest(
        c / "xhtml",
        1,
        c / "metadata.csv",
        root / "corpus/manifest.parquet",
        root / "corpus/articles.parquet",
    )
    extract.extract_shard(
        root / "corpus/manifest.parquet", 0, root / "extract/s0.parquet", root / "extract/s0.json"
    )
    linearize.linearize_shard(root / "extract/s0.parquet", root / "linearize/s0.parquet")
    f = cfg["filter"]
    filters.filter_pairs(
        [str(root / "linearize/s0.parquet")],
        [str(root / "extract/s0.json")],
        root / "data/pairs.parquet",
        root / "data/audit.parquet",
        root / "data/filter.json",
        f["language"],
        f["min_tokens"],
        f["max_tokens"],
    )
    splits.write_splits(
        root / "data/pairs.parquet",
        root / "corpus/articles.parquet",
        {"mixed": root / "splits/mixed.parquet"},
        seed=cfg["seed"],
    )
    replace.replace_split_file(
        root / "data/pairs.parquet",
        root / "splits/mixed.parquet",
        "conservation",
        data,
        seed=cfg["seed"],
    )
    return data


def train_recorded(
    data: Path, out: Path, mode: str, params: TrainParams, seed: int
) -> pd.DataFrame:
    """One run; every dev evaluation also decodes dev globally and scores the test part."""
    test = read_part(data, "test")
    real = train_mod.rank_metrics
    rows = []

    def recording(matcher, statements, proofs, batch_size=64, global_decoding=False, seed=0):
        m = real(matcher, statements, proofs, batch_size, global_decoding=True, seed=seed)
        t = real(matcher, list(test["statement_tokens"]), list(test["proof_tokens"]), batch_size)
        rows.append(
            {
                "dev_mrr": m["mrr"],
                "dev_acc": m["acc"],
                "dev_global_acc": m["global_acc"],
                "test_mrr": t["mrr"],
                "test_acc": t["acc"],
            }
        )
        return m

    train_mod.rank_metrics = recording
    try:
        train_mod.train_run(data, out, "npt", mode, "both", params, seed=seed)
    finally:
        train_mod.rank_metrics = real
    hist = pd.read_csv(out / "metrics.csv")
    evals = hist.loc[hist["dev_mrr"].notna(), "epoch"].tolist()
    return pd.DataFrame(rows).assign(epoch=evals)


def pick(evals: pd.DataFrame, column: str) -> pd.Series:
    values = evals[column].to_numpy()
    return evals.iloc[
        int(np.flatnonzero(values >= values.max() - 1e-9)[0])
    ]  # ties keep the earlier epoch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=[13])
    ap.add_argument("--modes", nargs="+", default=["local", "hybrid"])
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = load_config(REPO / "config/config.yaml")
    data = build_data(args.out / "data", cfg)
    params = TrainParams.from_config(cfg["matching"], "npt")
    rows = []
    for mode in args.modes:
        for seed in args.seeds:
            evals = train_recorded(data, args.out / f"npt-{mode}-{seed}", mode, params, seed)
            evals.to_csv(args.out / f"npt-{mode}-{seed}.evals.csv", index=False)
            for rule, columns in RULES.items():
                e = pick(evals, columns[mode])
                rows.append(
                    {
                        "run": f"NPT-{mode.capitalize()}",
                        "seed": seed,
                        "rule": rule,
                        "epoch": int(e["epoch"]),
                        "dev_mrr": 100 * e["dev_mrr"],
                        "test_mrr": 100 * e["test_mrr"],
                        "dev_acc": 100 * e["dev_acc"],
                        "dev_global_acc": 100 * e["dev_global_acc"],
                    }
                )
            print(evals.round(4).to_string(index=False), flush=True)
    table = pd.DataFrame(rows)
    table.to_csv(args.out / "selection.csv", index=False)
    print(table.round(1).to_string(index=False))
    means = table.groupby(["run", "rule"])[["dev_mrr", "test_mrr"]].mean().round(1)
    print(means.to_string())
    (args.out / "selection.json").write_text(
        json.dumps(
            {
                "n_pairs": {p: int(len(read_part(data, p))) for p in ("train", "dev", "test")},
                "means": means.reset_index().to_dict(orient="records"),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
