"""A pretrained checkpoint against BM25 on one replaced split: dev and test MRR of each trained run
given, of its fusion with BM25 and of the fusion of three (BM25 + any two runs), every weight
chosen on dev; test read once per selected system, with a paired bootstrap interval of its
difference from BM25 (docs/measured/pretrained.md).

    python3 bench/pretrained_stacks.py results/replaced/mixed/conservation.parquet \\
        --run zeroshot=results/runs/mixed/mathbert-zeroshot/conservation-both \\
        --run frozen=results/runs/mixed/mathbert-frozen/conservation-both \\
        --run local=results/runs/mixed/mathbert-local/conservation-both \\
        --run npt=results/runs/mixed/npt-local/conservation-both --out pretrained.json

A run is a finished run folder (``model/``). The zeroshot and frozen runs of one checkpoint share
an encoder: their vectors are computed once (the dev part's read from the frozen run's cache).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from proofmatch.data.splits import read_parts
from proofmatch.evaluation.bootstrap import interval
from proofmatch.models.matcher import load_matcher
from proofmatch.models.pretrained import CACHE_FILE, HEAD_MODES
from proofmatch.scoring.fusion import WEIGHT_GRID, gold_ranks, standardize
from proofmatch.scoring.lexical import bm25_scorer

RESAMPLES, SEED = 2000, 0


def rr(scores: np.ndarray) -> np.ndarray:
    """Reciprocal rank of each row's gold (the diagonal), ties against the gold."""
    return 1.0 / gold_ranks(scores, np.arange(scores.shape[0]))


def model_scores(
    run: Path, parts: dict, shared: dict, cache: Path | None = None, data: str = ""
) -> dict[str, np.ndarray]:
    """The dense score matrix of the run's model on each part (a head run's vectors kept in
    ``cache``, one file per checkpoint digest and part, for the next call)."""
    m = load_matcher(run, device="cpu")
    key = None
    if m.config.checkpoint and run.parent.name.split("-")[-1] in HEAD_MODES:
        key = (m.config.checkpoint.get("sha256"), m.config.max_length, m.config.pooling)
    out = {}
    for name, df in parts.items():
        vecs = shared.get((key, name)) if key else None
        if vecs is None and key and name == "dev" and (run / CACHE_FILE).exists():
            with np.load(run / CACHE_FILE) as c:
                vecs = (c["dev_statements"], c["dev_proofs"])
        kept = (
            cache / f"{data}-{key[0][:16]}-{key[1]}-{key[2]}-{name}.npz" if cache and key else None
        )
        if vecs is None and kept is not None and kept.exists():
            with np.load(kept) as c:
                vecs = (c["statements"], c["proofs"])
        if vecs is None:
            t0 = time.perf_counter()
            vecs = tuple(
                m.embed(list(df[f"{side}_tokens"]), 64).numpy() for side in ("statement", "proof")
            )
            print(f"  encoded {name} for {run} in {time.perf_counter() - t0:.0f} s", flush=True)
            if kept is not None:
                kept.parent.mkdir(parents=True, exist_ok=True)
                np.savez(kept, statements=vecs[0], proofs=vecs[1])
        if key:
            shared[(key, name)] = vecs
        S, P = (np.asarray(v, np.float64) for v in vecs)
        W = m.W.detach().double().numpy() if m.config.scorer == "bilinear" else None
        out[name] = (S @ W @ P.T) * m.config.score_scale + float(m.b.detach())
    return out


A_GRID = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)  # a second or later run's weight


def dev_mrr(z: dict, weights: dict[str, float]) -> float:
    """Dev MRR of the weighted sum of z-scored score matrices."""
    return float(rr(sum(w * z[k]["dev"] for k, w in weights.items())).mean())


def select_systems(z: dict) -> dict[str, dict]:
    """Every system's weights, each chosen on dev: each run alone, each run + λ · BM25, each pair
    of runs + BM25 (the first run listed weighs 1), and a greedy fusion that starts from the best
    of these on dev and adds the run and weight that raise dev MRR most (BM25's weight tuned
    again), until none does."""
    systems: dict[str, dict] = {k: {"weights": {k: 1.0}} for k in z}
    learned = [k for k in z if k != "bm25"]
    for name in learned:  # name + λ · BM25
        best = max(WEIGHT_GRID, key=lambda w: (dev_mrr(z, {name: 1.0, "bm25": w}), -w))
        systems[f"{name}+bm25"] = {"weights": {name: 1.0, "bm25": float(best)}}
    for i, name in enumerate(learned):  # the fusion of three: name + a · other + λ · BM25
        for other in learned[i + 1 :]:
            a, w = max(
                ((a, w) for a in A_GRID for w in WEIGHT_GRID),
                key=lambda g: (dev_mrr(z, {name: 1.0, other: g[0], "bm25": g[1]}), -g[0], -g[1]),
            )
            systems[f"{name}+{other}+bm25"] = {
                "weights": {name: 1.0, other: float(a), "bm25": float(w)}
            }
    weights = dict(max(systems.values(), key=lambda s: dev_mrr(z, s["weights"]))["weights"])
    while True:  # greedy forward selection on dev
        now = dev_mrr(z, weights)
        tries = [
            {**weights, k: a, "bm25": w}
            for k in learned
            if k not in weights
            for a in A_GRID[1:]
            for w in WEIGHT_GRID
        ]
        best = max(tries, key=lambda t: dev_mrr(z, t), default=None)
        if best is None or dev_mrr(z, best) <= now:
            break
        weights = best
    systems["greedy:" + "+".join(weights)] = {"weights": weights}
    return systems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data")
    ap.add_argument("--run", action="append", default=[], help="name=run folder")
    ap.add_argument("--out", required=True)
    ap.add_argument("--cache", type=Path, help="folder keeping the head runs' vectors")
    args = ap.parse_args()
    dev, test = read_parts(args.data, ["dev", "test"])
    parts = {"dev": dev, "test": test}
    scores = {
        "bm25": {
            n: bm25_scorer(list(df["statement_tokens"]), list(df["proof_tokens"]))(0, len(df))
            for n, df in parts.items()
        }
    }
    shared: dict = {}
    for spec in args.run:
        name, _, folder = spec.partition("=")
        data = f"{Path(args.data).parent.name}-{Path(args.data).stem}"  # split and level
        scores[name] = model_scores(Path(folder), parts, shared, args.cache, data)
    z = {k: {n: standardize(v) for n, v in s.items()} for k, s in scores.items()}
    systems = select_systems(z)
    base = {n: rr(scores["bm25"][n]) for n in parts}
    for sys_ in systems.values():
        for part in parts:
            fused = sum(
                w * (z[k][part] if len(sys_["weights"]) > 1 else scores[k][part])
                for k, w in sys_["weights"].items()
            )
            r = rr(fused)
            sys_[f"{part}_mrr"] = float(r.mean())
            sys_[f"{part}_acc"] = float((r == 1.0).mean())
            d = interval(r - base[part], RESAMPLES, SEED)
            sys_[f"{part}_vs_bm25"] = [d.value, d.low, d.high]
    Path(args.out).write_text(json.dumps(systems, indent=2) + "\n")
    print(f"{'system':28} {'dev MRR':>8} {'test MRR':>8}  test - BM25 [95% paired]")
    for name, s in systems.items():
        v, lo, hi = (100 * x for x in s["test_vs_bm25"])
        print(
            f"{name:28} {100 * s['dev_mrr']:8.1f} {100 * s['test_mrr']:8.1f}  "
            f"{v:+.1f} [{lo:+.1f}, {hi:+.1f}]  weights {s['weights']}"
        )


if __name__ == "__main__":
    main()
