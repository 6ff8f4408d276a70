"""Approximate inner-product search with FAISS for indexes above the exact-search size.

A model's score is ``a·p + row_bias + col_bias`` (``Matcher.factors``; for the bilinear scorer
``a = sᵀW·scale`` and ``col_bias = 0``). Ranking the proofs for one query only needs
``a·p + col_bias``, an inner product of the augmented vectors ``[a, 1]`` and ``[p, col_bias]``
(the augmentation is skipped when every ``col_bias`` is 0), so FAISS's inner-product index serves
every scorer.

The index is an inverted file with flat (uncompressed) vectors, ``IndexIVFFlat`` with
``METRIC_INNER_PRODUCT``: ``nlist = 4 √n`` k-means cells (FAISS's guideline of 4-16 √n), trained
on a seeded sample of at most 64 points per cell. A query scans the ``nprobe`` cells whose
centroids have the largest inner product with it. ``nprobe`` is chosen when the index is built:
the corpus's own statements are the calibration queries, their exact top-10 is computed with
matrix products, and the smallest power of two whose recall@10 reaches the target is kept, with
the measured recall and the whole curve written to ``index.json``.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

INDEX_FILE = "faiss.index"


def augment(vectors: np.ndarray, extra: np.ndarray | None) -> np.ndarray:
    """``[v, extra]`` row by row (float32, C-contiguous); ``extra=None`` keeps the vectors."""
    v = np.ascontiguousarray(vectors, dtype=np.float32)
    if extra is None:
        return v
    return np.ascontiguousarray(np.hstack([v, np.asarray(extra, np.float32).reshape(-1, 1)]))


def n_lists(n: int) -> int:
    return max(1, min(n // 39, int(4 * math.sqrt(n))))


def build_ivf(vectors: np.ndarray, seed: int) -> Any:
    """Train and fill an ``IndexIVFFlat`` (inner product) over float32 ``vectors``."""
    import faiss

    n, d = vectors.shape
    nlist = n_lists(n)
    quantizer = faiss.IndexFlatIP(d)
    index = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)
    index.cp.seed = int(seed)
    sample = vectors
    if n > 64 * nlist:
        sample = vectors[np.sort(np.random.default_rng(seed).choice(n, 64 * nlist, replace=False))]
    t0 = time.perf_counter()
    index.train(np.ascontiguousarray(sample))
    index.add(vectors)
    log.info(
        "FAISS IVF index: %d vectors, d=%d, %d lists, built in %.1fs",
        n,
        d,
        nlist,
        time.perf_counter() - t0,
    )
    return index


def exact_topk(queries: np.ndarray, vectors: np.ndarray, k: int, chunk: int = 32) -> np.ndarray:
    """Indices of the k largest inner products per query (matrix products in query chunks; a chunk
    of 32 queries against a million vectors holds about 0.5 GB of scores and indices)."""
    k = min(k, vectors.shape[0])
    out = np.empty((len(queries), k), np.int64)
    VT = np.ascontiguousarray(vectors.T)
    for s in range(0, len(queries), chunk):
        S = queries[s : s + chunk] @ VT
        part = np.argpartition(-S, k - 1, axis=1)[:, :k]
        out[s : s + chunk] = part
    return out


def recall_at(approx: np.ndarray, exact: np.ndarray) -> float:
    """Mean fraction of each exact top-k list that the approximate list also holds."""
    hits = [len(set(a[a >= 0].tolist()) & set(e.tolist())) for a, e in zip(approx, exact)]
    return float(np.mean(hits) / exact.shape[1])


def calibrate(
    index: Any, queries: np.ndarray, vectors: np.ndarray, target: float, k: int = 10
) -> dict[str, Any]:
    """Smallest power-of-two ``nprobe`` with recall@k >= ``target`` on ``queries`` (module docstring)."""
    import faiss

    exact = exact_topk(queries, vectors, k)
    curve = []
    nprobe = 1
    while True:
        nprobe = min(nprobe, index.nlist)
        _, ids = index.search(queries, k, params=faiss.SearchParametersIVF(nprobe=nprobe))
        rec = recall_at(ids, exact)
        curve.append({"nprobe": nprobe, "recall": rec})
        if rec >= target or nprobe >= index.nlist:
            break
        nprobe *= 2
    log.info(
        "FAISS nprobe %d of %d lists: recall@%d %.4f on %d calibration queries",
        nprobe,
        index.nlist,
        k,
        rec,
        len(queries),
    )
    return {
        "nprobe": nprobe,
        "nlist": int(index.nlist),
        "recall_at_10": rec,
        "target_recall": target,
        "calibration_queries": int(len(queries)),
        "curve": curve,
    }


def search(
    index: Any, queries: np.ndarray, k: int, nprobe: int, rows: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(inner products, ids) of the k best vectors, optionally only among ``rows``."""
    import faiss

    params = faiss.SearchParametersIVF(nprobe=int(nprobe))
    selector = None  # held here while FAISS uses it (SWIG does not keep it alive)
    if rows is not None:
        selector = faiss.IDSelectorBatch(np.asarray(rows, np.int64))
        params.sel = selector
    D, ids = index.search(np.ascontiguousarray(queries, dtype=np.float32), int(k), params=params)
    del selector
    return D, ids


def save(index: Any, path: str) -> None:
    import faiss

    faiss.write_index(index, path)


def load(path: str) -> Any:
    import faiss

    return faiss.read_index(path)
