"""Benchmark search latency: exact at the paper's 18,408 proofs, FAISS at 1,000,000, with FAISS's recall.

A query is timed end to end through ``SearchIndex.search``: parsing its LaTeX-flavoured text
(the project's TeX converter, then the linearizer's MathML reader), encoding it with the index's
model (``Matcher.factors``), scoring every proof, and ordering the top 10. The queries are the
test statements of a real index (e.g. the demo's NPT run) whose formulas all kept their TeX,
typed as text with it (a formula beyond the project converter's TeX subset would go to LaTeXML,
about a second each; that path is not measured here). Above the real index's size the proofs
are synthetic: each is a real proof vector of the index plus Gaussian noise of ``--noise`` times
that dimension's spread, so the set keeps the model's geometry (clusters of related proofs).

FAISS (``proofmatch.search.ann``) is built and calibrated as ``proofmatch index`` does, with the
real train and dev statements as calibration queries; its recall@10 is then measured against
exact search (matrix products) on the test statements, which calibration did not see.

    python bench/bench_search.py --index results/index/mixed/npt-local/conservation-both
    python bench/bench_search.py --index DIR --sizes 18408 --queries 100
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import numpy as np
import pandas as pd
import torch

from proofmatch.search import ann
from proofmatch.search.display import fragment_text
from proofmatch.search.build import FAISS_ABOVE
from proofmatch.search.index import SearchIndex


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def synthetic(ix: SearchIndex, n: int, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n proof vectors around the index's real ones (and their column biases)."""
    rng = np.random.default_rng(seed)
    base = ix.proof_vectors
    pick = rng.integers(0, len(base), n)
    spread = base.std(axis=0, keepdims=True).astype(np.float32)
    V = base[pick].astype(np.float32)
    for s in range(0, n, 200_000):  # in blocks: the noise of a million rows at once doubles the peak
        V[s:s + 200_000] += noise * spread * rng.standard_normal((min(n, s + 200_000) - s, base.shape[1]),
                                                                 dtype=np.float32)
    return V, ix.proof_bias[pick].astype(np.float32)


def install(ix: SearchIndex, V: np.ndarray, col: np.ndarray, backend: str, calib: np.ndarray,
            seed: int, target: float) -> dict:
    """Put synthetic proofs into a loaded index (what ``build_index`` would have written)."""
    n = len(V)
    ix.proof_vectors, ix.proof_bias, ix.n = V, col, n
    ix.table = pd.DataFrame({"pair_id": [f"syn{i:07d}" for i in range(n)], "part": "test"})
    ix.meta = {**ix.meta, "n": n, "backend": backend, "part_sizes": {"test": n}}
    ix._parts, ix.faiss = {}, None
    info: dict = {}
    if backend == "faiss":
        extra = None if not np.any(col) else col
        vectors = ann.augment(V, extra)
        t0 = time.perf_counter()
        ix.faiss = ann.build_ivf(vectors, seed)
        q = ann.augment(calib, None if extra is None else np.ones(len(calib), np.float32))
        info = ann.calibrate(ix.faiss, q, vectors, target)
        info["augmented"] = extra is not None
        info["build_seconds"] = round(time.perf_counter() - t0, 1)
        ix.meta["faiss"] = info
    return info


def run(ix: SearchIndex, texts: list[str], n: int, repeats: int) -> dict:
    """Wall-clock latency per query, and the process's CPU time per query: on a shared machine the
    wall clock includes waiting for a core, CPU time does not (FAISS's OpenMP threads add up in it)."""
    lat, cpu = [], []
    for _ in range(repeats):
        for t in texts:
            t0, c0 = time.perf_counter(), time.process_time()
            ix.search(t, k=10)
            lat.append(1000 * (time.perf_counter() - t0))
            cpu.append(1000 * (time.process_time() - c0))
    lat, cpu = np.asarray(lat), np.asarray(cpu)
    return {"n": n, "backend": ix.meta["backend"], "queries": len(lat), "p50_ms": round(float(np.median(lat)), 2),
            "p95_ms": round(float(np.percentile(lat, 95)), 2), "max_ms": round(float(lat.max()), 2),
            "cpu_p50_ms": round(float(np.median(cpu)), 2), "cpu_p95_ms": round(float(np.percentile(cpu, 95)), 2),
            "load_avg_1min": round(os.getloadavg()[0], 1)}


def recall(ix: SearchIndex, texts: list[str]) -> float:
    """FAISS's recall@10 against exact inner-product search over the same vectors."""
    qs = np.stack([ix._query_vector(ix.parse(t))[0] for t in texts]).astype(np.float32)
    extra = ix.meta["faiss"]["augmented"]
    vectors = ann.augment(ix.proof_vectors, ix.proof_bias if extra else None)
    exact = ann.exact_topk(ann.augment(qs, np.ones(len(qs), np.float32) if extra else None), vectors, 10)
    got = np.array([[h.row for h in ix.search(t, k=10)[1]] for t in texts])
    return ann.recall_at(got, exact)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", required=True, help="a model index (proofmatch index) of a real corpus")
    ap.add_argument("--sizes", type=int, nargs="+", default=[18_408, 1_000_000])
    ap.add_argument("--queries", type=int, default=200, help="test statements typed as text")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--noise", type=float, default=0.5)
    ap.add_argument("--recall", type=float, default=0.95, help="FAISS target recall@10 (calibration)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (query encoding)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="write the rows as JSON here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    ix = SearchIndex(args.index)
    if ix.method != "model":
        raise SystemExit("the benchmark needs a model index")
    test = ix.table[ix.table["part"] == "test"]
    # statements whose every formula kept its TeX (LaTeXML markup): what a person would type
    texts = [fragment_text(x) for x in test["statement_xml"]
             if x is not None and "m:math" not in x and x.count("<math") == x.count("alttext=")]
    texts = [t for t in texts if "$" in t][:args.queries]
    calib = ix.statement_vectors[(ix.table["part"] != "test").to_numpy()]
    print(f"{len(texts)} queries from {args.index}; model {ix.meta['model']['config']['encoder']} "
          f"d={ix.meta['dim']}; {len(calib)} calibration statements", flush=True)
    for t in texts[:3]:  # warm-up (lazy imports, caches)
        ix.search(t)
    rows = []
    for n in args.sizes:
        backend = "exact" if n <= FAISS_ABOVE else "faiss"
        V, col = synthetic(ix, n, args.noise, args.seed)
        info = install(ix, V, col, backend, calib, args.seed, args.recall)
        for t in texts[:3]:
            ix.search(t)
        row = run(ix, texts, n, args.repeats)
        if backend == "faiss":
            row.update(nlist=info["nlist"], nprobe=info["nprobe"], calibration_recall=round(info["recall_at_10"], 4),
                       recall_at_10=round(recall(ix, texts), 4), build_seconds=info["build_seconds"])
        row["rss_peak_mb"] = round(rss_mb())
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
