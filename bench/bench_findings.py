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
from proofmatch.evaluation.bootstrap import draw_counts


def resolved_evaluations(config) -> list[X.Evaluation]:
    """The findings' inputs whose global accuracy a finding reads (seed variants included)."""
    wanted = {
        t[1] for f in F.findings() for c in f.contrasts for t in c.terms if t[2] == "global_acc"
    }
    return [ev for ev in R.findings_inputs(config) if F.seed_variant_of(ev) in wanted]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", nargs="+", required=True)
    ap.add_argument("--n", type=int, required=True, help="pairs in the test pool")
    ap.add_argument("--k", type=int, required=True, help="k of the k-best lists (decode.topk)")
    ap.add_argument("--signal", type=float, default=2.0)
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


if __name__ == "__main__":
    main()
