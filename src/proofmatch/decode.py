"""Local and global decoding of a statement x proof score matrix (paper §6, §8, Appendix B).

Statement ``i``'s gold proof is proof ``i`` (the diagonal). Scores come from a *row-chunk score
function* ``score_rows(start, stop) -> float32 array (stop - start, n)``, so the n x n matrix is
never held for large n: each chunk is one matrix product (:func:`factor_scorer` for the models'
low-rank factors, a sparse product for the baselines), and from each chunk we keep only

* the top-k proofs per statement (``argpartition``, then sorted; when several proofs tie at the
  k-th score, a deterministic subset of them is kept, so every list has exactly k entries),
* the gold score and the gold rank, computed exactly over the whole row.

Ranks and ties. ``rank_i = 1 + #{j: s_ij > s_ii} + #{j != i: s_ij == s_ii}``, i.e. every proof
that ties with the gold counts against it, as in the reference implementation
(``#{j: s_j >= s_i}``); a constant scorer therefore gets rank n, not 1. The top-k lists are sorted
by decreasing score, then with the gold *after* proofs tied with it, then by proof index, so
``top1 == i`` exactly when ``rank_i == 1``.

Global decoding (one proof per statement) maximises the total score:

* ``n <= exact_max_n``: exact dense Jonker-Volgenant, ``lap.lapjv`` on ``max(S) - S`` (float64,
  C-contiguous: lapjv copies anything else);
* otherwise the paper's k-best sparse graph solved with ``lap.lapmod``. A raw k-best graph may
  have no perfect matching (some proof is in nobody's top-k), and lapmod then returns garbage or
  *segfaults* (shared/notes/peers-lap-lime-mathml.md §1.2). So every row gets one fallback edge
  to a seeded random cyclic permutation (never the diagonal: that would leak the gold proof),
  which makes the graph always feasible. Real costs are ``(max s - s) / range`` in [0, 1] and a
  fallback edge costs 3 (= 2 * max + 1): above every real cost, and far below lap's internal
  ``LARGE`` = 1e6. That second bound matters: lapmod uses ``LARGE`` as an "unreached" sentinel,
  and once path costs approach it the solver silently assigns non-edges or crashes (measured on
  300 random hub-heavy k-best graphs, n = 5-400, k = 1-7: fallback cost 4e5 gave 52 segfaults and
  135 invalid assignments; fallback cost 3, 10, 100 or n+1 with costs in [0, 1]: 300/300 equal to
  scipy's optimum; at n = 1000-4000, cost 3 gave 40/40 optimal while n+1 was many times slower). Because
  3 is not above n * max cost, a solution may use a few more fallback edges than strictly
  necessary; we report both the fallback edges used and the k-best graph's matching deficiency
  (the minimum any solution needs, from ``scipy.sparse.csgraph.maximum_bipartite_matching``).
  Every assignment lapmod returns is checked to be a permutation made of graph edges.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Callable

import lap
import numpy as np
from tqdm import tqdm

log = logging.getLogger(__name__)

ScoreRows = Callable[[int, int], np.ndarray]
"""``score_rows(start, stop)`` -> scores of statements ``start:stop`` against all n proofs."""

HUBNESS_BINS: tuple[str, ...] = (">=20", ">=10", ">=5", ">=2", "=1", "<1")
# Real sparse costs lie in [0, 1]; a fallback edge costs 2 * 1 + 1 (see the module docstring).
FALLBACK_COST = 3.0


# ----------------------------------------------------------------------------- scoring


def factor_scorer(A: np.ndarray, B: np.ndarray, row_bias: np.ndarray | None = None,
                  col_bias: np.ndarray | None = None) -> ScoreRows:
    """Score function of ``S = A @ B.T + row_bias[:, None] + col_bias[None, :]`` (float32).

    This is the contract of ``Matcher.factors``: the bilinear form ``s^T W p + b`` is folded into
    the factors, so a chunk of rows is one matrix product instead of n bilinear calls per row.
    """
    A = np.ascontiguousarray(A, dtype=np.float32)
    B = np.ascontiguousarray(B, dtype=np.float32)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise ValueError(f"factors must be (n, d) and (n, d); got {A.shape} and {B.shape}")
    if A.shape[0] != B.shape[0]:
        raise ValueError(f"need as many statements as proofs; got {A.shape[0]} and {B.shape[0]}")
    n = A.shape[0]
    rb = np.zeros(n, np.float32) if row_bias is None else np.asarray(row_bias, np.float32).reshape(n)
    cb = np.zeros(n, np.float32) if col_bias is None else np.asarray(col_bias, np.float32).reshape(n)
    BT = np.ascontiguousarray(B.T)

    def score_rows(start: int, stop: int) -> np.ndarray:
        S = A[start:stop] @ BT
        S += rb[start:stop, None]
        S += cb[None, :]
        return S

    return score_rows


def dense_scores(score_rows: ScoreRows, n: int, chunk_rows: int = 512,
                 dtype: type = np.float64) -> np.ndarray:
    """The full n x n matrix, assembled chunk by chunk (only for small n or the benchmark)."""
    out = np.empty((n, n), dtype=dtype)
    for start in range(0, n, chunk_rows):
        stop = min(n, start + chunk_rows)
        out[start:stop] = _checked_chunk(score_rows, start, stop, n)
    return out


def _checked_chunk(score_rows: ScoreRows, start: int, stop: int, n: int) -> np.ndarray:
    S = np.asarray(score_rows(start, stop), dtype=np.float32)
    if S.shape != (stop - start, n):
        raise ValueError(f"score function returned shape {S.shape}, expected {(stop - start, n)}")
    if not np.isfinite(S).all():
        bad = start + int(np.flatnonzero(~np.isfinite(S).all(axis=1))[0])
        raise ValueError(f"non-finite score in row {bad} (statement index); check the model's outputs")
    return S


# ----------------------------------------------------------------------------- local decoding


@dataclass
class LocalResult:
    """Per-statement outcome of local decoding (row i = statement i, gold proof i)."""

    gold_rank: np.ndarray   # (n,) int64, 1-based, ties count against the gold
    gold_score: np.ndarray  # (n,) float32
    topk_idx: np.ndarray    # (n, k) int64, proof indices, best first
    topk_score: np.ndarray  # (n, k) float32, matching scores

    @property
    def n(self) -> int:
        return int(self.gold_rank.shape[0])

    @property
    def top1(self) -> np.ndarray:
        return self.topk_idx[:, 0]

    @property
    def mrr(self) -> float:
        return float(np.mean(1.0 / self.gold_rank))

    @property
    def acc(self) -> float:
        return float(np.mean(self.gold_rank == 1))


def _sorted_topk(S: np.ndarray, start: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k columns of each row of a chunk, sorted by (score desc, gold last, index)."""
    m, n = S.shape
    if k < n:
        part = np.argpartition(S, n - k, axis=1)[:, n - k:]
    else:
        part = np.broadcast_to(np.arange(n), (m, n)).copy()
    scores = np.take_along_axis(S, part, axis=1)
    is_gold = part == (start + np.arange(m))[:, None]
    order = np.lexsort((part, is_gold, -scores), axis=1)
    return np.take_along_axis(part, order, axis=1).astype(np.int64), np.take_along_axis(scores, order, axis=1)


def local_decode(score_rows: ScoreRows, n: int, k: int, chunk_rows: int = 512,
                 progress: bool = True) -> LocalResult:
    """Rank all n proofs for each statement, keeping only the top-k lists and the gold rank.

    Peak memory is a few ``chunk_rows x n`` arrays (the chunk's scores and argpartition's index
    array), independent of n^2.
    """
    if n < 1:
        raise ValueError("nothing to decode: the set has no pairs")
    k = min(int(k), n)
    if k < 1:
        raise ValueError(f"topk must be >= 1, got {k}")
    gold_rank = np.empty(n, np.int64)
    gold_score = np.empty(n, np.float32)
    topk_idx = np.empty((n, k), np.int64)
    topk_score = np.empty((n, k), np.float32)
    starts = range(0, n, chunk_rows)
    for start in tqdm(starts, desc="score+top-k", unit="chunk", disable=not progress or len(starts) < 2):
        stop = min(n, start + chunk_rows)
        S = _checked_chunk(score_rows, start, stop, n)
        rows = np.arange(stop - start)
        g = S[rows, start + rows]
        gold_score[start:stop] = g
        # #{j: s_ij >= s_ii} = 1 + #{j: s_ij > s_ii} + #{j != i: s_ij == s_ii}
        gold_rank[start:stop] = np.count_nonzero(S >= g[:, None], axis=1)
        topk_idx[start:stop], topk_score[start:stop] = _sorted_topk(S, start, k)
    return LocalResult(gold_rank, gold_score, topk_idx, topk_score)


def hubness(top1: np.ndarray, n: int) -> dict[str, dict[str, float]]:
    """Table 7: how many proofs are the local top-1 of >=20, >=10, >=5, >=2, exactly 1, no statement.

    The first four bins are cumulative (a proof chosen 25 times is in all of them); percentages
    are of the n proofs, as in the paper's Appendix B.
    """
    times = np.bincount(np.asarray(top1, np.int64), minlength=n)
    counts = {
        ">=20": int((times >= 20).sum()),
        ">=10": int((times >= 10).sum()),
        ">=5": int((times >= 5).sum()),
        ">=2": int((times >= 2).sum()),
        "=1": int((times == 1).sum()),
        "<1": int((times == 0).sum()),
    }
    return {b: {"proofs": counts[b], "percent": 100.0 * counts[b] / n} for b in HUBNESS_BINS}


# ----------------------------------------------------------------------------- global decoding


@dataclass
class GlobalResult:
    """A one-to-one assignment of proofs to statements."""

    assignment: np.ndarray  # (n,) int64, proof index given to each statement
    method: str             # "exact" (dense lapjv) or "sparse" (k-best + lapmod)
    fallback_edges: int     # sparse only: assigned pairs that are fallback (non-k-best) edges
    seconds: float
    extra: dict = field(default_factory=dict)

    @property
    def acc(self) -> float:
        return float(np.mean(self.assignment == np.arange(self.assignment.shape[0])))


def exact_global(S: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """Maximum-weight perfect matching of a dense score matrix with ``lap.lapjv``.

    ``overwrite=True`` turns a float64 C-contiguous ``S`` into the cost matrix in place, so the
    n x n matrix exists once (2.7 GB at n = 18,408) instead of twice.
    """
    S = np.asarray(S)
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise ValueError(f"exact global decoding needs a square matrix, got {S.shape}")
    if not np.isfinite(S).all():
        raise ValueError("exact global decoding needs finite scores")
    cost = np.ascontiguousarray(S, dtype=np.float64)
    if cost is S and not overwrite:
        cost = cost.copy()
    np.subtract(cost.max(), cost, out=cost)  # max-weight == min-cost; lapjv accepts any finite cost
    _, x, _ = lap.lapjv(cost)
    return np.asarray(x, np.int64)


def cyclic_permutation(n: int, seed: int) -> np.ndarray:
    """A seeded random permutation with no fixed point (one n-cycle; identity for n == 1)."""
    order = np.random.default_rng(seed).permutation(n)
    perm = np.empty(n, np.int64)
    perm[order] = np.roll(order, -1)
    return perm


@dataclass
class SparseGraph:
    """A k-best graph in lapmod's CSR layout, with its fallback edges marked."""

    n: int
    cc: np.ndarray            # float64 costs in [0, 1] (fallback: FALLBACK_COST), row after row
    ii: np.ndarray            # (n + 1,) int64 row offsets
    kk: np.ndarray            # int64 column indices, ascending within each row
    fallback_col: np.ndarray  # (n,) column of row i's fallback edge, -1 if already a k-best edge


def kbest_graph(topk_idx: np.ndarray, topk_score: np.ndarray, seed: int) -> SparseGraph:
    """Build the always-feasible sparse graph from top-k lists (module docstring)."""
    topk_idx = np.asarray(topk_idx, np.int64)
    topk_score = np.asarray(topk_score, np.float64)
    n, k = topk_idx.shape
    if topk_score.shape != (n, k) or k < 1:
        raise ValueError(f"top-k ids {topk_idx.shape} and scores {topk_score.shape} must be (n, k>=1)")
    if topk_idx.min() < 0 or topk_idx.max() >= n:
        raise ValueError("top-k proof indices must lie in [0, n)")
    if not np.isfinite(topk_score).all():
        raise ValueError("top-k scores must be finite")
    cost = topk_score.max() - topk_score
    spread = float(cost.max())
    if spread > 0:
        cost /= spread

    perm = cyclic_permutation(n, seed)
    already = (topk_idx == perm[:, None]).any(axis=1)
    cols = np.concatenate([topk_idx, np.where(already, n, perm)[:, None]], axis=1)  # n sorts last
    costs = np.concatenate([cost, np.full((n, 1), FALLBACK_COST)], axis=1)
    order = np.argsort(cols, axis=1, kind="stable")
    cols = np.take_along_axis(cols, order, axis=1)
    costs = np.take_along_axis(costs, order, axis=1)
    keep = cols < n
    if (np.diff(cols, axis=1)[keep[:, 1:]] == 0).any():
        raise ValueError("top-k lists contain a proof twice in one row")
    ii = np.zeros(n + 1, np.int64)
    np.cumsum(keep.sum(axis=1), out=ii[1:])
    return SparseGraph(n=n, cc=np.ascontiguousarray(costs[keep]), ii=ii,
                       kk=np.ascontiguousarray(cols[keep]), fallback_col=np.where(already, -1, perm))


def matching_deficiency(topk_idx: np.ndarray) -> int:
    """How many statements no perfect matching of the raw k-best graph can serve (0 = feasible)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    n, k = topk_idx.shape
    graph = csr_matrix((np.ones(n * k, np.int8), np.sort(topk_idx, axis=1).ravel(),
                        np.arange(0, n * k + 1, k)), shape=(n, n))
    return int((maximum_bipartite_matching(graph, perm_type="column") < 0).sum())


def solve_graph(g: SparseGraph) -> tuple[np.ndarray, int]:
    """Solve a repaired k-best graph with ``lap.lapmod``; returns (assignment, fallback edges used)."""
    if g.n == 1:
        return np.zeros(1, np.int64), 0
    x, _ = lap.lapmod(g.n, g.cc, g.ii, g.kk, return_cost=False)
    x = np.asarray(x, np.int64)
    if not np.array_equal(np.sort(x), np.arange(g.n)):
        raise RuntimeError("lapmod returned an assignment that is not a permutation")
    if not is_edge(g, x).all():
        # lapmod does not check feasibility; with fallback edges this should not happen
        raise RuntimeError("lapmod assigned a pair outside the k-best graph; please report")
    used = int(((g.fallback_col >= 0) & (x == g.fallback_col)).sum())
    return x, used


def sparse_global(topk_idx: np.ndarray, topk_score: np.ndarray, seed: int) -> tuple[np.ndarray, int]:
    """Global decoding on the repaired k-best graph; returns (assignment, fallback edges used)."""
    return solve_graph(kbest_graph(topk_idx, topk_score, seed))


def is_edge(g: SparseGraph, x: np.ndarray) -> np.ndarray:
    """Whether (i, x[i]) is an edge of the graph, for every row i (one vectorised binary search)."""
    # Offsetting row i's columns by i * n makes the concatenated column list globally ascending.
    rows = np.repeat(np.arange(g.n, dtype=np.int64), np.diff(g.ii))
    keyed = g.kk + rows * g.n
    target = np.asarray(x, np.int64) + np.arange(g.n, dtype=np.int64) * g.n
    pos = np.minimum(np.searchsorted(keyed, target), len(keyed) - 1)
    return keyed[pos] == target


def global_decode(score_rows: ScoreRows, local: LocalResult, exact_max_n: int, seed: int,
                  chunk_rows: int = 512) -> GlobalResult:
    """Exact dense LAP when ``n <= exact_max_n``, else sparse k-best LAPMOD (module docstring)."""
    n = local.n
    t0 = time.perf_counter()
    if n <= exact_max_n:
        x = exact_global(dense_scores(score_rows, n, chunk_rows))
        res = GlobalResult(x, "exact", 0, time.perf_counter() - t0)
    else:
        x, used = sparse_global(local.topk_idx, local.topk_score, seed)
        res = GlobalResult(x, "sparse", used, time.perf_counter() - t0,
                           {"kbest_deficiency": matching_deficiency(local.topk_idx)})
    log.info("global decoding (%s, n=%d): acc %.4f, %d fallback edges, %.1fs",
             res.method, n, res.acc, res.fallback_edges, res.seconds)
    return res


def decode_all(score_rows: ScoreRows, n: int, topk: int, exact_max_n: int, seed: int,
               chunk_rows: int = 512) -> tuple[LocalResult, GlobalResult]:
    """Local then global decoding of one set; the shared core of evaluate.py and baselines.py."""
    local = local_decode(score_rows, n, topk, chunk_rows)
    log.info("local decoding (n=%d): MRR %.4f, acc %.4f", n, local.mrr, local.acc)
    return local, global_decode(score_rows, local, exact_max_n, seed, chunk_rows)


def summary(local: LocalResult, glob: GlobalResult) -> dict:
    """The metrics written to an evaluation JSON (fractions in [0, 1])."""
    return {
        "n": local.n,
        "mrr": local.mrr,
        "acc": local.acc,
        "global_acc": glob.acc,
        "global_method": glob.method,
        "fallback_edges": glob.fallback_edges,
        "kbest_deficiency": glob.extra.get("kbest_deficiency"),  # None for exact decoding
        "topk": int(local.topk_idx.shape[1]),
        "hubness": hubness(local.top1, local.n),
        "rank_ties": "ties count against the gold proof (rank = #{j: s_ij >= s_ii})",
    }
