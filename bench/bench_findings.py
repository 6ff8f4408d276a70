"""What re-solving global decoding per bootstrap resample costs the findings job.

The findings re-solve the global assignment of every evaluation whose global accuracy a finding
reads, on each of ``report.resamples`` resampled pools (``proofmatch.decoding.assign.
resampled_global_acc``), where the pool has at most ``report.resolve_max_n`` pairs. This benchmark
counts those evaluations under a config (the findings' inputs, seed variants included, what the
config does not run left out) and times the re-solving of one evaluation on a synthetic pool of
``--n`` pairs with k-best lists of ``--k`` (scores: standard normal plus ``--signal`` on the gold
pair), in CPU seconds of this process (``time.process_time``; one thread). The product of the two
is the job's re-solving cost on a pool of that size; the job's other work (reading the JSONs and
Parquet files, the matrix products of the other metrics) is what ``results/benchmarks/findings.tsv``
adds.

    OMP_NUM_THREADS=1 python bench/bench_findings.py --config config/config.yaml config/stacks.yaml \\
        --n 515 --k 500

With ``--results DIR`` (a finished tree) it also judges the findings of that tree twice, with
re-solving and with the fixed assignment (``report.resolve_max_n`` 0), and prints the CPU seconds
of each and, for every cell that reads global accuracy, the width of its 95 % interval both ways.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from proofmatch import experiments as X
from proofmatch.config import load_config
from proofmatch.decoding.assign import resampled_global_acc
from proofmatch.evaluation import findings as F
from proofmatch.evaluation import report as R
from proofmatch.evaluation import verdicts as VD
from proofmatch.evaluation.bootstrap import draw_counts
from proofmatch.evaluation.intervals import load_frames


def resolved_evaluations(config) -> list[X.Evaluation]:
    """The findings' inputs whose global accuracy a finding reads (seed variants included)."""
    wanted = {
        t[1] for f in F.findings() for c in f.contrasts for t in c.terms if t[2] == "global_acc"
    }
    return [ev for ev in R.findings_inputs(config) if VD.seed_variant_of(ev) in wanted]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", nargs="+", required=True)
    ap.add_argument("--n", type=int, required=True, help="pairs in the test pool")
    ap.add_argument("--k", type=int, required=True, help="k of the k-best lists (decode.topk)")
    ap.add_argument("--signal", type=float, default=2.0)
    ap.add_argument("--results", help="a finished tree's root (the folder holding results/)")
    args = ap.parse_args()
    config = load_config(*args.config)
    evs = resolved_evaluations(config)
    resamples = config["report"]["resamples"]
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((args.n, args.n)) + args.signal * np.eye(args.n)
    k = min(args.k, args.n)
    ids = np.argsort(-scores, axis=1)[:, :k]
    top = np.take_along_axis(scores, ids, axis=1)
    counts = draw_counts(args.n, resamples, config["seed"])
    t0 = time.process_time()
    resampled_global_acc(ids, top, counts)
    per = time.process_time() - t0
    print(
        f"{len(evs)} evaluations re-solved; one at n = {args.n}, k = {k}, {resamples} resamples: "
        f"{per:.1f} CPU s ({1000 * per / resamples:.1f} ms a pool); all: {len(evs) * per:.0f} CPU s"
        + ("" if args.n <= config["report"]["resolve_max_n"] else " (n > resolve_max_n: not done)")
    )

    if args.results:
        compare_tree(config, args.results)


def compare_tree(config, root: str) -> None:
    """Judge a tree's findings with and without re-solving; print times and global cells' widths."""
    paths = {ev: X.Evaluation.path(ev, f"{root}/results/eval") for ev in R.findings_inputs(config)}
    paths = {ev: p for ev, p in paths.items() if p.exists()}
    frames = load_frames(paths)
    shares = f"{root}/results/figures/figure2.json"
    try:
        frames[F.LIME] = VD.lime_frame(shares)
    except FileNotFoundError:
        pass
    out = {}
    for name, max_n in (("re-solved", config["report"]["resolve_max_n"]), ("fixed", 0)):
        cfg = {**config, "report": {**config["report"], "resolve_max_n": max_n}}
        t0 = time.process_time()
        ev = R.evidence(frames, cfg, paths)
        rows, cells = VD.findings_tables(ev)
        out[name] = (rows, cells)
        print(
            f"findings {name}: {time.process_time() - t0:.1f} CPU s ({len(ev.kbest)} k-best lists)"
        )
    a, b = (out[k][1] for k in ("re-solved", "fixed"))
    glob = a["Global assignment"].ne("fixed") & b["Global assignment"].eq("fixed")
    ratio = (a["Hi"] - a["Lo"]) / (b["Hi"] - b["Lo"])
    for i in np.flatnonzero(glob.to_numpy()):
        print(
            f"  {a['Finding'][i]} | {a['Cell'][i]}: fixed [{b['Lo'][i]:+.1f}, {b['Hi'][i]:+.1f}] "
            f"re-solved [{a['Lo'][i]:+.1f}, {a['Hi'][i]:+.1f}] width x{ratio[i]:.2f}"
        )
    if glob.any():
        r = ratio[glob]
        print(
            f"  width ratio over {glob.sum()} cells: median {r.median():.2f}, {r.min():.2f}-{r.max():.2f}"
        )
    for key, verdict in zip(out["fixed"][0]["Finding"], out["fixed"][0]["Verdict"]):
        now = out["re-solved"][0].set_index("Finding")["Verdict"][key]
        if now != verdict:
            print(f"  verdict {key}: fixed assignment {verdict!r}, re-solved {now!r}")


if __name__ == "__main__":
    main()
