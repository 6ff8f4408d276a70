"""Global decoding: one proof per statement by linear assignment (paper §6 "Global Decoding", §8).

The paper's second decoder: "a proof can be assigned only to a single statement. [...] the
decoding problem reduces to a classical maximum weighted bipartite matching problem, or
equivalently, a Linear Assignment Problem (LAP)" (§6). On whole sets "we prune the search space by
keeping only the 500-best candidate proofs for each statement, and use the LAP-MOD algorithm
designed for sparse matrices", with "the implementations of the LAP-JV and LAP-MOD algorithms from
the lap Python package" (§8). Global decoding reads the scores and top-k lists of local decoding
(:mod:`proofmatch.decoding.local`); statement ``i``'s gold proof is proof ``i``. It maximises
the total score:

* ``n <= exact_max_n``: exact dense Jonker-Volgenant, ``lap.lapjv`` on ``max(S) - S`` (float64,
  C-contiguous: lapjv copies anything else);
* otherwise the paper's k-best sparse graph solved with ``lap.lapmod``. A raw k-best graph may
  have no perfect matching (some proof is in nobody's top-k), and lapmod then returns garbage or
  *segfaults* (lap 0.5.13). So every row gets one fallback edge
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

Global ties. As in local ranking, ties count against the gold: every gold pair (i, i) costs
:func:`gold_penalty` ``= 2^-24 * range / n`` more than its score says (``range`` = max - min of
the scores the solver sees). All n gold pairs together cost less than one float32 unit in the
last place of the score range, so the penalty only decides between assignments whose totals
float32 scores cannot tell apart (exact ties above all), and among those the solver takes one
with the fewest gold pairs. A constant scorer, or any scorer under which every assignment has the
same total, therefore gets global accuracy 0, as its local accuracy is 0, and never the identity
that a solver's own tie-breaking may return.

:func:`decode_all` runs local then global decoding of one set with its :class:`DecodeSettings`
(one object, built from the config in one place, :meth:`DecodeSettings.from_config`, where the
chain of evaluation functions would otherwise pass ``topk``, ``exact_max_n`` and ``seed`` each),
and :func:`decode_metrics` gives what an evaluation JSON reports of both (the shared core of
evaluate.py and baselines.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import lap
import numpy as np

from proofmatch import config
from proofmatch.decoding.local import (
    LocalResult,
    ScoreRows,
    default_chunk_rows,
    dense_scores,
    hubness,
    local_decode,
)

log = logging.getLogger(__name__)

# Real sparse costs lie in [0, 1]; a fallback edge costs 2 * 1 + 1 (see the module docstring).
FALLBACK_COST = 3.0


@dataclass(frozen=True)
class DecodeSettings:
    """How one set is decoded: ``topk``, the k of local decoding's k-best lists (and of global
    decoding's sparse graph); ``exact_max_n``, exact dense LAP up to this many pairs; ``seed``,
    of global decoding's fallback permutation. Defaults: the schema's (training's dev decoding
    where the config gives none); a config's are read by :meth:`from_config` only."""

    topk: int = config.default("decode.topk")
    exact_max_n: int = config.default("decode.exact_max_n")
    seed: int = config.default("seed")

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> DecodeSettings:
        """The validated config's ``decode.topk``, ``decode.exact_max_n`` and ``seed``."""
        decode = cfg["decode"]
        return cls(int(decode["topk"]), int(decode["exact_max_n"]), int(cfg["seed"]))


@dataclass
class GlobalResult:
    """A one-to-one assignment of proofs to statements."""

    assignment: np.ndarray  # (n,) int64, proof index given to each statement
    method: str  # "exact" (dense lapjv) or "sparse" (k-best + lapmod)
    fallback_edges: int  # sparse only: assigned pairs that are fallback (non-k-best) edges
    seconds: float
    extra: dict = field(default_factory=dict)

    @property
    def acc(self) -> float:
        return float(np.mean(self.assignment == np.arange(self.assignment.shape[0])))


def exact_global(S: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """Maximum-weight perfect matching of a dense score matrix with ``lap.lapjv``; among
    assignments of equal total score, one with the fewest gold pairs (:func:`gold_penalty`).

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
    n = cost.shape[0]
    cost.ravel()[:: n + 1] += gold_penalty(float(cost.max()), n)  # ties count against the gold
    _, x, _ = lap.lapjv(cost)
    return np.asarray(x, np.int64)


def gold_penalty(score_range: float, n: int) -> float:
    """Extra cost of each gold pair (i, i) in global decoding: ``2^-24 * range / n``.

    Ties count against the gold (module docstring): the n penalties together stay below one
    float32 unit in the last place of the score range, so they decide only between assignments
    whose totals float32 scores cannot tell apart. A zero range (constant scores) uses range 1.
    """
    return 2.0**-24 * (score_range if score_range > 0 else 1.0) / n


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
    cc: (
        np.ndarray
    )  # float64 costs in [0, 1] (+ gold_penalty on gold pairs; fallback: FALLBACK_COST)
    ii: np.ndarray  # (n + 1,) int64 row offsets
    kk: np.ndarray  # int64 column indices, ascending within each row
    fallback_col: np.ndarray  # (n,) column of row i's fallback edge, -1 if already a k-best edge


def kbest_graph(topk_idx: np.ndarray, topk_score: np.ndarray, seed: int) -> SparseGraph:
    """Build the always-feasible sparse graph from top-k lists (module docstring)."""
    topk_idx = np.asarray(topk_idx, np.int64)
    topk_score = np.asarray(topk_score, np.float64)
    n, k = topk_idx.shape
    if topk_score.shape != (n, k) or k < 1:
        raise ValueError(
            f"top-k ids {topk_idx.shape} and scores {topk_score.shape} must be (n, k>=1)"
        )
    if topk_idx.min() < 0 or topk_idx.max() >= n:
        raise ValueError("top-k proof indices must lie in [0, n)")
    if not np.isfinite(topk_score).all():
        raise ValueError("top-k scores must be finite")
    cost = topk_score.max() - topk_score
    spread = float(cost.max())
    if spread > 0:
        cost /= spread
    cost[topk_idx == np.arange(n)[:, None]] += gold_penalty(1.0, n)  # ties count against the gold

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
    return SparseGraph(
        n=n,
        cc=np.ascontiguousarray(costs[keep]),
        ii=ii,
        kk=np.ascontiguousarray(cols[keep]),
        fallback_col=np.where(already, -1, perm),
    )


def matching_deficiency(topk_idx: np.ndarray) -> int:
    """How many statements no perfect matching of the raw k-best graph can serve (0 = feasible)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    n, k = topk_idx.shape
    graph = csr_matrix(
        (np.ones(n * k, np.int8), np.sort(topk_idx, axis=1).ravel(), np.arange(0, n * k + 1, k)),
        shape=(n, n),
    )
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


def sparse_global(
    topk_idx: np.ndarray, topk_score: np.ndarray, seed: int
) -> tuple[np.ndarray, int]:
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


def global_decode(
    score_rows: ScoreRows,
    local: LocalResult,
    exact_max_n: int,
    seed: int,
    chunk_rows: int | None = None,
) -> GlobalResult:
    """Exact dense LAP when ``n <= exact_max_n``, else sparse k-best LAPMOD (module docstring)."""
    n = local.n
    t0 = time.perf_counter()
    if n <= exact_max_n:
        x = exact_global(dense_scores(score_rows, n, chunk_rows or default_chunk_rows(n)))
        res = GlobalResult(x, "exact", 0, time.perf_counter() - t0)
    else:
        x, used = sparse_global(local.topk_idx, local.topk_score, seed)
        res = GlobalResult(
            x,
            "sparse",
            used,
            time.perf_counter() - t0,
            {"kbest_deficiency": matching_deficiency(local.topk_idx)},
        )
    log.info(
        "global decoding (%s, n=%d): acc %.4f, %d fallback edges, %.1fs",
        res.method,
        n,
        res.acc,
        res.fallback_edges,
        res.seconds,
    )
    return res


def decode_all(
    score_rows: ScoreRows,
    n: int,
    decode: DecodeSettings,
    chunk_rows: int | None = None,
    threads: int | None = None,
) -> tuple[LocalResult, GlobalResult]:
    """Local then global decoding of one set; the shared core of evaluate.py and baselines.py.
    ``threads``: :func:`proofmatch.decoding.local.local_decode`'s (default: torch's threads)."""
    local = local_decode(score_rows, n, decode.topk, chunk_rows, threads=threads)
    log.info("local decoding (n=%d): MRR %.4f, acc %.4f", n, local.mrr, local.acc)
    return local, global_decode(score_rows, local, decode.exact_max_n, decode.seed, chunk_rows)


def decode_metrics(local: LocalResult, glob: GlobalResult) -> dict:
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
        "assignment_ties": "ties count against the gold proof (each gold pair costs 2^-24 * score range / n "
        "more: among assignments float32 cannot tell apart, the fewest gold pairs)",
    }


def resampled_graph(
    topk_idx: np.ndarray, cost: np.ndarray, counts: np.ndarray
) -> tuple[SparseGraph, np.ndarray]:
    """The k-best graph of one bootstrap pool: pair ``i`` (statement and gold proof) drawn
    ``counts[i]`` times. Every copy of statement ``i`` keeps an edge to every copy of each proof of
    its k-best list that was drawn, at the list's cost (``cost``: :func:`kbest_graph`'s scale, in
    [0, 1]); an edge to a copy of its own proof is a gold pair (:func:`gold_penalty` more). Each row
    also gets one fallback edge, a cyclic shift of the positions by the largest count (so never to a
    copy of its own pair unless one pair fills the pool), which keeps the graph feasible. Returns
    (graph, the pair behind each position)."""
    counts = np.asarray(counts, np.int64)
    n_pairs, k = topk_idx.shape
    pair = np.repeat(np.arange(n_pairs, dtype=np.int64), counts)  # position -> pair
    size = pair.shape[0]
    start = np.zeros(n_pairs, np.int64)
    np.cumsum(counts[:-1], out=start[1:])
    drawn = np.flatnonzero(counts)
    cols_p, cost_p = topk_idx[drawn], cost[drawn]  # (d, k): each drawn pair's list
    reps = counts[cols_p]  # copies of each listed proof in this pool
    # one list per drawn pair: its listed proofs' copies, in ascending position order
    order = np.argsort(np.where(reps > 0, start[cols_p], size), axis=1, kind="stable")
    cols_p = np.take_along_axis(cols_p, order, axis=1)
    cost_p = np.take_along_axis(cost_p, order, axis=1)
    reps = np.take_along_axis(reps, order, axis=1).ravel()
    first = np.repeat(start[cols_p].ravel(), reps)
    within = np.arange(first.shape[0]) - np.repeat(np.cumsum(reps) - reps, reps)
    col_flat = first + within
    cost_flat = np.repeat(cost_p.ravel(), reps)
    gold_flat = np.repeat((cols_p == drawn[:, None]).ravel(), reps)
    length = reps.reshape(len(drawn), k).sum(axis=1)  # edges of one copy of each drawn pair
    offset = np.cumsum(length) - length
    # every copy of a pair repeats its pair's list: segment (offset, length) once per copy
    seg_len = np.repeat(length, counts[drawn])
    seg_off = np.repeat(offset, counts[drawn])
    take = np.repeat(seg_off - (np.cumsum(seg_len) - seg_len), seg_len) + np.arange(seg_len.sum())
    cols, costs = col_flat[take], cost_flat[take] + gold_penalty(1.0, size) * gold_flat[take]
    # the fallback edge of each row, placed in its row's ascending column order
    fallback = (np.arange(size) + counts.max()) % size
    rows = np.repeat(np.arange(size), seg_len)
    has = np.zeros(size, bool)
    has[rows[cols == fallback[rows]]] = True
    extra = np.flatnonzero(~has)
    # rows come in ascending order and each row's columns ascending: row * size + column is sorted,
    # so each fallback edge goes in where a binary search puts it (no sort of the whole graph)
    at = np.searchsorted(rows * size + cols, extra * size + fallback[extra])
    all_cols = np.insert(cols, at, fallback[extra])
    all_cost = np.insert(costs, at, FALLBACK_COST)
    ii = np.zeros(size + 1, np.int64)
    np.cumsum(seg_len + ~has, out=ii[1:])
    graph = SparseGraph(
        n=size,
        cc=np.ascontiguousarray(all_cost),
        ii=ii,
        kk=np.ascontiguousarray(all_cols),
        fallback_col=np.where(has, -1, fallback),
    )
    return graph, pair


def kbest_costs(topk_score: np.ndarray) -> np.ndarray:
    """The k-best lists' scores as :func:`kbest_graph`'s costs, ``(max s - s) / range`` in [0, 1]."""
    cost = float(np.max(topk_score)) - np.asarray(topk_score, np.float64)
    spread = float(cost.max())
    return cost / spread if spread > 0 else cost


def resampled_global_acc(
    topk_idx: np.ndarray, topk_score: np.ndarray, counts: np.ndarray
) -> np.ndarray:
    """Global accuracy of each bootstrap pool (a row of ``counts``, ``R x n``: how often each pair
    was drawn), with the assignment re-solved on that pool by the sparse k-best decoder
    (:func:`resampled_graph`, ``lap.lapmod``): a statement's hit is its assignment to any copy of
    its own proof. What an interval of global accuracy that includes the assignment's own
    variation resamples; the fixed assignment's hits would treat the hits as independent."""
    topk_idx = np.asarray(topk_idx, np.int64)
    cost = kbest_costs(topk_score)
    out = np.empty(counts.shape[0])
    for r, row in enumerate(np.asarray(counts, np.int64)):
        graph, pair = resampled_graph(topk_idx, cost, row)
        x, _ = solve_graph(graph)
        out[r] = float(np.mean(pair[x] == pair))
    return out
