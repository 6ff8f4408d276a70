"""Benchmark decoding at the paper's dev/test size: chunked scoring + top-k, sparse k-best LAPMOD,
and exact dense LAPJV on the same scores.

Embeddings are random but structured: statements S ~ N(0, 1)^d, proofs P = S + noise * N(0, 1)^d, so the
gold proof is usually (not always) the best; ``--hub`` adds a per-proof score bias (a few "hub" proofs
that attract many statements), which makes the raw 500-best graph infeasible and exercises the
fallback edges. Each phase reports wall time, the tracemalloc peak of the phase (NumPy buffers;
lap's C++ work arrays are not traced) and the process peak RSS so far.

    python bench/bench_decode.py                       # n=18408, k=500, d=300, two scenarios
    python bench/bench_decode.py --n 4000 --scenarios plain
"""

from __future__ import annotations

import argparse
import json
import resource
import time
import tracemalloc

import numpy as np

from proofmatch import decode as D


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


class Phase:
    """Context manager timing one phase and recording its tracemalloc peak."""

    def __init__(self, rows: list, scenario: str, name: str):
        self.rows, self.scenario, self.name = rows, scenario, name

    def __enter__(self):
        tracemalloc.reset_peak()
        self.base = tracemalloc.get_traced_memory()[0]
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        seconds = time.perf_counter() - self.t0
        peak = (tracemalloc.get_traced_memory()[1] - self.base) / 2**20
        self.rows.append({"scenario": self.scenario, "phase": self.name, "seconds": round(seconds, 2),
                          "traced_peak_mb": round(peak, 1), "rss_peak_mb": round(rss_mb(), 1)})
        print(f"  {self.name:<28} {seconds:8.2f} s  traced peak {peak:8.1f} MiB  RSS peak {rss_mb():8.1f} MiB",
              flush=True)


def factors(n: int, d: int, noise: float, hub: float, seed: int):
    rng = np.random.default_rng(seed)
    S = rng.standard_normal((n, d), dtype=np.float32)
    P = S + np.float32(noise) * rng.standard_normal((n, d), dtype=np.float32)
    col_bias = (hub * np.sqrt(d * (1 + noise**2)) * rng.standard_normal(n) ** 2).astype(np.float32)
    return S, P, np.zeros(n, np.float32), col_bias


def assignment_score(A, B, rb, cb, x) -> float:
    """Total score of an assignment, from the factors (float64)."""
    A, B = A.astype(np.float64), B[x].astype(np.float64)
    return float(np.einsum("ij,ij->", A, B) + rb.sum() + cb[x].sum())


def run(scenario: str, n: int, k: int, d: int, noise: float, hub: float, seed: int, chunk_rows: int,
        exact: bool, rows: list) -> dict:
    print(f"[{scenario}] n={n} k={k} d={d} noise={noise} hub={hub}", flush=True)
    A, B, rb, cb = factors(n, d, noise, hub, seed)
    f = D.factor_scorer(A, B, rb, cb)
    with Phase(rows, scenario, "score + top-k (local)"):
        local = D.local_decode(f, n, k, chunk_rows=chunk_rows, progress=False)
    with Phase(rows, scenario, "k-best deficiency (scipy)"):
        deficiency = D.matching_deficiency(local.topk_idx)
    with Phase(rows, scenario, "k-best graph + fallback edges"):
        graph = D.kbest_graph(local.topk_idx, local.topk_score, seed)
    with Phase(rows, scenario, "lapmod (sparse global)"):
        x_sparse, used = D.solve_graph(graph)
    del graph
    out = {"scenario": scenario, "n": n, "k": k, "d": d, "noise": noise, "hub": hub,
           "local_mrr": local.mrr, "local_acc": local.acc,
           "sparse_acc": float(np.mean(x_sparse == np.arange(n))),
           "kbest_deficiency": deficiency, "fallback_edges": used}
    if exact:
        with Phase(rows, scenario, "dense float64 scores"):
            dense = D.dense_scores(f, n, chunk_rows)
        with Phase(rows, scenario, "exact global (lapjv)"):
            x_exact = D.exact_global(dense, overwrite=True)  # dense now holds costs
        del dense
        r = np.arange(n)
        out.update({
            "exact_acc": float(np.mean(x_exact == r)),
            "acc_diff_sparse_minus_exact": float(np.mean(x_sparse == r) - np.mean(x_exact == r)),
            "rows_identical": float(np.mean(x_sparse == x_exact)),
            "score_exact": assignment_score(A, B, rb, cb, x_exact),
            "score_sparse": assignment_score(A, B, rb, cb, x_sparse),
        })
    print("  " + json.dumps({k_: (round(v, 4) if isinstance(v, float) else v) for k_, v in out.items()}), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=18408)
    ap.add_argument("--k", type=int, default=500)
    ap.add_argument("--d", type=int, default=300)
    ap.add_argument("--noise", type=float, default=4.5, help="proof = statement + noise * N(0, 1)")
    ap.add_argument("--hub", type=float, default=0.6, help="hub bias of the 'hub' scenario")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chunk-rows", type=int, default=512)
    ap.add_argument("--scenarios", default="plain,hub", help="comma-separated: plain, hub")
    ap.add_argument("--no-exact", action="store_true", help="skip the dense n x n float64 matrix and lapjv")
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()

    tracemalloc.start()
    rows: list = []
    results = []
    for sc in args.scenarios.split(","):
        hub = {"plain": 0.0, "hub": args.hub}[sc]
        results.append(run(sc, args.n, args.k, args.d, args.noise, hub, args.seed, args.chunk_rows,
                           not args.no_exact, rows))

    print("\n| scenario | phase | seconds | traced peak MiB | RSS peak MiB |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['scenario']} | {r['phase']} | {r['seconds']} | {r['traced_peak_mb']} | {r['rss_peak_mb']} |")
    print("\n| scenario | local MRR | local acc | sparse global acc | exact global acc | sparse - exact | "
          "rows identical | k-best deficiency | fallback edges used |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        def pct(key):
            return f"{100 * r[key]:.2f}" if key in r else "–"
        print(f"| {r['scenario']} | {pct('local_mrr')} | {pct('local_acc')} | {pct('sparse_acc')} | "
              f"{pct('exact_acc')} | {pct('acc_diff_sparse_minus_exact')} | {pct('rows_identical')} | "
              f"{r['kbest_deficiency']} | {r['fallback_edges']} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"phases": rows, "results": results}, fh, indent=2)


if __name__ == "__main__":
    main()
