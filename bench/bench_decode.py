"""Benchmark decoding at the paper's dev/test size: chunked scoring + top-k against the bare matrix
product of the same size in the same run, then (``--global``) sparse k-best LAPMOD and exact dense
LAPJV on the same scores.

Embeddings are random but structured: statements S ~ N(0, 1)^d, proofs P = S + noise * N(0, 1)^d, so the
gold proof is usually (not always) the best; the ``hub`` scenario adds a per-proof score bias (a few "hub"
proofs that attract many statements), which makes the raw 500-best graph infeasible and exercises the
fallback edges.

Scoring + top-k (:func:`proofmatch.decoding.local.local_decode` on a :class:`~proofmatch.decoding.local.FactorScorer`)
is timed against two bare products of the same factors, all on the same device and threads:
``chunked`` (the same row chunks into one reused buffer, nothing else) and ``full`` (one ``A @ B.T``
call that materialises the n x n float32 matrix). The three are interleaved ``--repeats`` times, so
a busy shared machine slows them alike; the reported ratio is the median over repeats of
``decode / min(chunked, full)``. Memory: the tracemalloc peak of the decode phase (NumPy buffers),
the chunk buffer, and on a GPU ``torch.cuda.max_memory_allocated`` during decoding.

    python bench/bench_decode.py                          # n=18408, k=500, d=300 and 768, CPU
    python bench/bench_decode.py --threads 1              # one core for the products and the ranking
    python bench/bench_decode.py --device cuda            # on a GPU
    python bench/bench_decode.py --d 300 --global         # + sparse LAPMOD and exact LAPJV (hub too)
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import time
import tracemalloc

import numpy as np
import torch

from proofmatch.decoding import assign as G
from proofmatch.decoding import local as D


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


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
        self.rows.append(
            {
                "scenario": self.scenario,
                "phase": self.name,
                "seconds": round(seconds, 2),
                "traced_peak_mb": round(peak, 1),
                "rss_peak_mb": round(rss_mb(), 1),
            }
        )
        print(
            f"  {self.name:<28} {seconds:8.2f} s  traced peak {peak:8.1f} MiB  RSS peak {rss_mb():8.1f} MiB",
            flush=True,
        )


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


def bare_chunked(f: D.FactorScorer, chunk_rows: int) -> float:
    """The decode's matrix products alone: the same chunks into one reused buffer."""
    buf = f.new_buffer(min(f.n, chunk_rows))
    sync(f.device)
    t0 = time.perf_counter()
    for start in range(0, f.n, chunk_rows):
        stop = min(f.n, start + chunk_rows)
        torch.mm(f.A[start:stop], f.BT, out=buf[: stop - start])
    sync(f.device)
    return time.perf_counter() - t0


def bare_full(f: D.FactorScorer) -> float:
    """One product call that materialises the n x n float32 matrix."""
    sync(f.device)
    t0 = time.perf_counter()
    S = torch.mm(f.A, f.BT)
    sync(f.device)
    seconds = time.perf_counter() - t0
    del S
    return seconds


def decode_vs_bare(
    f: D.FactorScorer, n: int, k: int, chunk_rows: int, repeats: int, threads: int
) -> dict:
    """Interleaved repeats of the two bare products and scoring + top-k; medians and their ratio."""
    times: dict[str, list[float]] = {"chunked": [], "full": [], "decode": []}
    device_peak = None
    local = None
    for rep in range(repeats):
        times["chunked"].append(bare_chunked(f, chunk_rows))
        times["full"].append(bare_full(f))
        if f.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(f.device)
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        sync(f.device)
        t0 = time.perf_counter()
        local = D.local_decode(f, n, k, chunk_rows=chunk_rows, progress=False, threads=threads)
        sync(f.device)
        times["decode"].append(time.perf_counter() - t0)
        traced = (tracemalloc.get_traced_memory()[1] - base) / 2**20
        if f.device.type == "cuda":
            device_peak = torch.cuda.max_memory_allocated(f.device) / 2**20
        print(
            f"  repeat {rep + 1}: bare chunked {times['chunked'][-1]:.2f} s, bare full {times['full'][-1]:.2f} s, "
            f"scoring + top-k {times['decode'][-1]:.2f} s",
            flush=True,
        )
    ratios = [
        dec / min(c, fu) for c, fu, dec in zip(times["chunked"], times["full"], times["decode"])
    ]
    return {
        "bare_chunked_s": statistics.median(times["chunked"]),
        "bare_full_s": statistics.median(times["full"]),
        "decode_s": statistics.median(times["decode"]),
        "ratio_median": statistics.median(ratios),
        "ratios": [round(r, 3) for r in ratios],
        "times": times,
        "decode_traced_peak_mb": round(traced, 1),
        "chunk_buffer_mb": round(min(n, chunk_rows) * n * 4 / 2**20, 1),
        "n_by_n_float32_mb": round(n * n * 4 / 2**20, 1),
        "device_peak_mb": None if device_peak is None else round(device_peak, 1),
        "local_mrr": local.mrr,
        "local_acc": local.acc,
        "_local": local,
    }


def run(scenario: str, args: argparse.Namespace, d: int, hub: float, rows: list) -> dict:
    n, k = args.n, args.k
    device = torch.device(args.device)
    chunk_rows = args.chunk_rows or D.default_chunk_rows(n, device)
    print(
        f"[{scenario}] n={n} k={k} d={d} noise={args.noise} hub={hub} device={device} "
        f"threads={args.threads} chunk_rows={chunk_rows}",
        flush=True,
    )
    A, B, rb, cb = factors(n, d, args.noise, hub, args.seed)
    f = D.FactorScorer(A, B, rb, cb, device=device)
    res = decode_vs_bare(f, n, k, chunk_rows, args.repeats, args.threads)
    local = res.pop("_local")
    out = {
        "scenario": scenario,
        "n": n,
        "k": k,
        "d": d,
        "noise": args.noise,
        "hub": hub,
        "device": str(device),
        "threads": args.threads,
        "chunk_rows": chunk_rows,
        **res,
    }
    print(
        f"  median: bare chunked {res['bare_chunked_s']:.2f} s, bare full {res['bare_full_s']:.2f} s, "
        f"scoring + top-k {res['decode_s']:.2f} s, ratio {res['ratio_median']:.2f}",
        flush=True,
    )
    if args.global_:
        with Phase(rows, scenario, "k-best deficiency (scipy)"):
            deficiency = G.matching_deficiency(local.topk_idx)
        with Phase(rows, scenario, "k-best graph + fallback edges"):
            graph = G.kbest_graph(local.topk_idx, local.topk_score, args.seed)
        with Phase(rows, scenario, "lapmod (sparse global)"):
            x_sparse, used = G.solve_graph(graph)
        del graph
        out.update(
            {
                "sparse_acc": float(np.mean(x_sparse == np.arange(n))),
                "kbest_deficiency": deficiency,
                "fallback_edges": used,
            }
        )
        if not args.no_exact:
            with Phase(rows, scenario, "dense float64 scores"):
                dense = D.dense_scores(f, n, chunk_rows)
            with Phase(rows, scenario, "exact global (lapjv)"):
                x_exact = G.exact_global(dense, overwrite=True)  # dense now holds costs
            del dense
            r = np.arange(n)
            out.update(
                {
                    "exact_acc": float(np.mean(x_exact == r)),
                    "acc_diff_sparse_minus_exact": float(
                        np.mean(x_sparse == r) - np.mean(x_exact == r)
                    ),
                    "rows_identical": float(np.mean(x_sparse == x_exact)),
                    "score_exact": assignment_score(A, B, rb, cb, x_exact),
                    "score_sparse": assignment_score(A, B, rb, cb, x_sparse),
                }
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=18408)
    ap.add_argument("--k", type=int, default=500)
    ap.add_argument("--d", default="300,768", help="comma-separated factor widths")
    ap.add_argument("--noise", type=float, default=4.5, help="proof = statement + noise * N(0, 1)")
    ap.add_argument("--hub", type=float, default=0.6, help="hub bias of the 'hub' scenario")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ...")
    ap.add_argument(
        "--threads",
        type=int,
        default=torch.get_num_threads(),
        help="CPU threads of the products and of the ranking (torch.set_num_threads)",
    )
    ap.add_argument(
        "--chunk-rows", type=int, default=None, help="default: decode.default_chunk_rows"
    )
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--scenarios",
        default=None,
        help="comma-separated: plain, hub (default: plain; plain,hub with --global)",
    )
    ap.add_argument(
        "--global",
        dest="global_",
        action="store_true",
        help="also sparse k-best LAPMOD and (unless --no-exact) exact dense LAPJV",
    )
    ap.add_argument(
        "--no-exact", action="store_true", help="with --global: skip the dense n x n float64 LAPJV"
    )
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    scenarios = (args.scenarios or ("plain,hub" if args.global_ else "plain")).split(",")

    tracemalloc.start()
    rows: list = []
    results = []
    for d in (int(x) for x in args.d.split(",")):
        for sc in scenarios:
            hub = {"plain": 0.0, "hub": args.hub}[sc]
            results.append(run(sc, args, d, hub, rows))

    env = {
        "machine": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "threads": args.threads,
        "device": args.device,
        "gpu": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None,
    }
    print("\n" + json.dumps(env))
    print(
        "\n| scenario | d | device | threads | bare chunked product (s) | bare full product (s) | "
        "scoring + top-k (s) | ratio (median) | decode traced peak MiB | chunk MiB | n x n MiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['scenario']} | {r['d']} | {r['device']} | {r['threads']} | {r['bare_chunked_s']:.2f} | "
            f"{r['bare_full_s']:.2f} | {r['decode_s']:.2f} | {r['ratio_median']:.2f} | "
            f"{r['decode_traced_peak_mb']} | {r['chunk_buffer_mb']} | {r['n_by_n_float32_mb']} |"
        )
    if rows:
        print("\n| scenario | phase | seconds | traced peak MiB | RSS peak MiB |")
        print("|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['scenario']} | {r['phase']} | {r['seconds']} | {r['traced_peak_mb']} | {r['rss_peak_mb']} |"
            )
        print(
            "\n| scenario | d | local MRR | local acc | sparse global acc | exact global acc | sparse - exact | "
            "rows identical | k-best deficiency | fallback edges used |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in results:

            def pct(key):
                return f"{100 * r[key]:.2f}" if key in r else "–"

            print(
                f"| {r['scenario']} | {r['d']} | {pct('local_mrr')} | {pct('local_acc')} | {pct('sparse_acc')} | "
                f"{pct('exact_acc')} | {pct('acc_diff_sparse_minus_exact')} | {pct('rows_identical')} | "
                f"{r.get('kbest_deficiency', '–')} | {r.get('fallback_edges', '–')} |"
            )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"env": env, "phases": rows, "results": results}, fh, indent=2)


if __name__ == "__main__":
    main()
