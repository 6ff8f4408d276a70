"""Local and global decoding of a statement x proof score matrix (paper §6, §8, Appendix B).

Statement ``i``'s gold proof is proof ``i`` (the diagonal). Scores come from a *row-chunk score
function* ``score_rows(start, stop) -> float32 array (stop - start, n)``, so the n x n matrix is
never held for large n: each chunk is one matrix product (:func:`factor_scorer` for the models'
low-rank factors, a sparse product for the baselines), and from each chunk we keep only the
top-k proofs of each statement and the gold score and rank, computed exactly over the whole row.

Local ranks and ties. ``rank_i = 1 + #{j: s_ij > s_ii} + #{j != i: s_ij == s_ii}``, i.e. every
proof that ties with the gold counts against it, as in the reference implementation
(``#{j: s_j >= s_i}``); a constant scorer therefore gets rank n, not 1. The proofs of a row are
put in one total order: score descending, then the gold *after* the proofs tied with it, then
proof index ascending. The top-k list is the first k proofs of that order, so when several proofs
tie at the k-th score the lowest indices are kept and the gold is the first to be left out: the
gold is in its list exactly when ``rank_i <= k``, and ``top1 == i`` exactly when ``rank_i == 1``.

Top-k at the cost of the matrix product. The top-k of a chunk is taken from a candidate set that
provably holds every row's top-k: the row's columns are cut into ``m >= k`` groups and ``t`` is
the k-th largest of the m group maxima. Those k maxima are k distinct scores >= t, so the row's
k-th largest score is >= t and every member of the top-k, ties included, scores >= t. With 16
columns a group, about 650 of 18,408 proofs pass on random scores, and only they are ordered (a
partition and a sort of 64-bit keys that encode the total order above). Per chunk this is one
matrix product and three passes over its scores (group maxima, candidate mask, candidate
indices); the gold's rank is its place among the candidates' keys, or for a gold below ``t`` a
count over its row. No Python loop runs over rows. On CPU the passes are NumPy on blocks of rows
that fit a core's cache, and with several threads each chunk runs start to end on one thread;
with a :class:`FactorScorer` on a GPU the same steps run in torch on the device (same keys, same
result: tests/test_decode.py). ``bench/bench_decode.py`` times this against the bare product.

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

Global ties. As in local ranking, ties count against the gold: every gold pair (i, i) costs
:func:`gold_penalty` ``= 2^-24 * range / n`` more than its score says (``range`` = max - min of
the scores the solver sees). All n gold pairs together cost less than one float32 unit in the
last place of the score range, so the penalty only decides between assignments whose totals
float32 scores cannot tell apart (exact ties above all), and among those the solver takes one
with the fewest gold pairs. A constant scorer, or any scorer under which every assignment has the
same total, therefore gets global accuracy 0, as its local accuracy is 0, and never the identity
that a solver's own tie-breaking may return.
"""

from __future__ import annotations

import logging
import queue
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Callable

import lap
import numpy as np
import torch
from tqdm import tqdm

log = logging.getLogger(__name__)

ScoreRows = Callable[[int, int], np.ndarray]
"""``score_rows(start, stop)`` -> scores of statements ``start:stop`` against all n proofs."""

HUBNESS_BINS: tuple[str, ...] = (">=20", ">=10", ">=5", ">=2", "=1", "<1")
# Real sparse costs lie in [0, 1]; a fallback edge costs 2 * 1 + 1 (see the module docstring).
FALLBACK_COST = 3.0
# Columns per group of the top-k candidate threshold (module docstring): 16 keeps ~650 of 18,408
# candidates while the group maxima are a cheap strided max and their partition is 1/16 of a row.
GROUP_COLUMNS = 16
# Scores bytes per chunk when chunk_rows is not given: a few chunk-sized arrays stay in memory.
# On CPU a chunk is ranked in blocks of CPU_BLOCK_BYTES, which one core's L2 cache (2 MiB) holds
# through the passes after the first.
CPU_CHUNK_BYTES = 16 << 20
CPU_BLOCK_BYTES = 3 << 19
DEVICE_CHUNK_BYTES = 128 << 20
# Order keys (module docstring): descending score in the high 33 bits, tie-break in the low 31.
_TIE_BITS = 31
_TIE_MASK = (1 << _TIE_BITS) - 1
_NO_KEY = np.iinfo(np.int64).max
# |score| bound under which a float32 matrix product cannot overflow (float32 max is 3.4e38).
_F32_SAFE = 1e37


# ----------------------------------------------------------------------------- scoring


class FactorScorer:
    """Score function of ``S = A @ B.T + row_bias[:, None] + col_bias[None, :]`` (float32).

    This is the contract of ``Matcher.factors``: the bilinear form ``s^T W p + b`` is folded into
    the factors, so a chunk of rows is one matrix product instead of n bilinear calls per row.
    A chunk is ``torch.mm(A[rows], B.T)`` with ``B.T`` stored contiguous (on CPU this gives the bits
    of NumPy's float32 ``A[rows] @ B.T`` for any chunk of two rows or more), then
    ``+= row_bias``, then ``+= col_bias`` (a bias that is all zeros is not added), on ``device``:
    on a GPU, :func:`local_decode` then keeps the whole chunk pass (ranks, top-k) there.
    """

    def __init__(self, A: np.ndarray, B: np.ndarray, row_bias: np.ndarray | None = None,
                 col_bias: np.ndarray | None = None, device: str | torch.device | None = None):
        A = np.asarray(A, dtype=np.float32)
        B = np.asarray(B, dtype=np.float32)
        if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
            raise ValueError(f"factors must be (n, d) and (n, d); got {A.shape} and {B.shape}")
        if A.shape[0] != B.shape[0]:
            raise ValueError(f"need as many statements as proofs; got {A.shape[0]} and {B.shape[0]}")
        n = A.shape[0]
        rb = np.zeros(n, np.float32) if row_bias is None else np.asarray(row_bias, np.float32).reshape(n)
        cb = np.zeros(n, np.float32) if col_bias is None else np.asarray(col_bias, np.float32).reshape(n)
        self.n = n
        self.device = torch.device("cpu" if device is None else device)
        # |s_ij| <= |a_i| |b_j| + |row_bias_i| + |col_bias_j| (Cauchy-Schwarz, partial sums too): when
        # that bound is far below float32's maximum, no score can be inf or NaN and the per-chunk
        # finiteness pass is skipped (a NaN or inf in the factors makes the bound NaN or inf).
        with np.errstate(over="ignore", invalid="ignore"):
            bound = (np.linalg.norm(A.astype(np.float64), axis=1).max(initial=0.0)
                     * np.linalg.norm(B.astype(np.float64), axis=1).max(initial=0.0)
                     + np.abs(rb.astype(np.float64)).max(initial=0.0) + np.abs(cb.astype(np.float64)).max(initial=0.0))
        self.check_finite = not bound < _F32_SAFE
        self.A = torch.from_numpy(np.ascontiguousarray(A)).to(self.device)
        self.BT = torch.from_numpy(np.ascontiguousarray(B.T)).to(self.device)  # (d, n): NumPy's bits, see above
        self.row_bias = torch.from_numpy(rb).to(self.device) if rb.any() else None
        self.col_bias = torch.from_numpy(cb).to(self.device) if cb.any() else None

    def new_buffer(self, rows: int) -> torch.Tensor:
        return torch.empty((rows, self.n), dtype=torch.float32, device=self.device)

    def scores_into(self, start: int, stop: int, out: torch.Tensor) -> torch.Tensor:
        """Rows ``start:stop`` written into ``out`` (a ``(stop - start, n)`` tensor on the device)."""
        torch.mm(self.A[start:stop], self.BT, out=out)
        if self.row_bias is not None:
            out += self.row_bias[start:stop, None]
        if self.col_bias is not None:
            out += self.col_bias[None, :]
        return out

    def __call__(self, start: int, stop: int) -> np.ndarray:
        return self.scores_into(start, stop, self.new_buffer(stop - start)).cpu().numpy()


def factor_scorer(A: np.ndarray, B: np.ndarray, row_bias: np.ndarray | None = None,
                  col_bias: np.ndarray | None = None, device: str | torch.device | None = None) -> ScoreRows:
    """Score function of ``S = A @ B.T + row_bias[:, None] + col_bias[None, :]`` (float32).

    This is the contract of ``Matcher.factors``: the bilinear form ``s^T W p + b`` is folded into
    the factors, so a chunk of rows is one matrix product instead of n bilinear calls per row.
    ``device`` (default CPU) is where :func:`local_decode` scores and ranks (a :class:`FactorScorer`).
    """
    return FactorScorer(A, B, row_bias, col_bias, device)


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
    _check_finite(S, start)
    return S


def _check_finite(S: np.ndarray | torch.Tensor, start: int) -> None:
    if isinstance(S, np.ndarray):
        ok = np.isfinite(S).all(axis=1)
    else:
        ok = torch.isfinite(S).all(dim=1).cpu().numpy()
    if not ok.all():
        bad = start + int(np.flatnonzero(~ok)[0])
        raise ValueError(f"non-finite score in row {bad} (statement index); check the model's outputs")


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


def group_columns(n: int, k: int) -> int:
    """Columns per group of the candidate threshold: ``GROUP_COLUMNS``, fewer when n < 16 k
    (there must be at least k groups; 1 makes the threshold the exact k-th largest score)."""
    return max(1, min(GROUP_COLUMNS, n // k))


def _order_keys_np(scores: np.ndarray, ties: np.ndarray) -> np.ndarray:
    """int64 keys ascending in (score descending, then ``ties`` ascending); ties < 2^31.

    The float32 bits are mapped to an int32 that increases with the score (negative floats have
    their magnitude bits flipped); ``+ 0`` first turns -0.0 into 0.0, so the two tie.
    """
    bits = (scores + np.float32(0)).view(np.int32)
    up = bits ^ ((bits >> 31) & np.int32(0x7FFFFFFF))
    keys = (np.int64(_TIE_MASK) - up) << _TIE_BITS
    keys |= ties
    return keys


def _key_scores_np(keys: np.ndarray) -> np.ndarray:
    """The float32 scores that :func:`_order_keys_np` encoded (the bit map is its own inverse)."""
    up = (np.int64(_TIE_MASK) - (keys >> _TIE_BITS)).astype(np.int32)
    return (up ^ ((up >> 31) & np.int32(0x7FFFFFFF))).view(np.float32)


def _order_keys_torch(scores: torch.Tensor, ties: torch.Tensor) -> torch.Tensor:
    """:func:`_order_keys_np` in torch (same bits)."""
    bits = (scores + 0.0).view(torch.int32)
    up = bits ^ ((bits >> 31) & 0x7FFFFFFF)
    return ((_TIE_MASK - up.to(torch.int64)) << _TIE_BITS) | ties


def _key_scores_torch(keys: torch.Tensor) -> torch.Tensor:
    up = (_TIE_MASK - (keys >> _TIE_BITS)).to(torch.int32)
    return (up ^ ((up >> 31) & 0x7FFFFFFF)).view(torch.float32)


ChunkResult = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def chunk_topk_numpy(S: np.ndarray, start: int, k: int, mask: np.ndarray | None = None) -> ChunkResult:
    """(gold score, gold rank, top-k indices, top-k scores) of the rows of one chunk (NumPy).

    ``S`` holds statements ``start .. start + len(S)`` against all n proofs; 1 <= k <= n;
    ``mask`` is an optional bool work array of S's shape. The candidates are the scores >= the
    group threshold (module docstring), ordered by their keys. A gold >= the threshold is a
    candidate, and so is every score >= it: its rank is its place among the candidates' keys;
    the other golds are counted over their whole row.
    """
    r, n = S.shape
    rows = np.arange(r)
    gold = S[rows, start + rows]
    g = group_columns(n, k)
    m = n // g
    gmax = S[:, :m * g].reshape(r, g, m).max(axis=1) if g > 1 else S  # group q: columns q, q + m, ...
    thr = np.partition(gmax, m - k, axis=1)[:, m - k]                  # k-th largest group maximum
    mask = np.greater_equal(S, thr[:, None], out=mask)
    flat = np.flatnonzero(mask)                                        # the candidates, row by row
    count = np.diff(np.searchsorted(flat, np.arange(r + 1) * n))
    width = int(count.max())
    first = np.cumsum(count) - count
    scores = S.ravel()[flat]
    cols = flat
    cols -= np.repeat(rows * n, count)                                 # flat index -> column
    slot = np.repeat(rows * width - first, count)
    slot += np.arange(flat.size)                                       # place in the (r, width) key table
    keys = np.full((r, width), _NO_KEY, np.int64)
    keys.ravel()[slot] = _order_keys_np(scores, cols)
    # the gold's key carries tie-break n (after its ties) instead of its column
    gold_cols = start + rows
    gold_key = _order_keys_np(gold, np.full(r, n))
    keys = np.where(keys == _order_keys_np(gold, gold_cols)[:, None], gold_key[:, None], keys)
    rank = np.count_nonzero(keys <= gold_key[:, None], axis=1)
    low = np.flatnonzero(gold < thr)
    if 2 * low.size > r:
        rank = np.count_nonzero(S >= gold[:, None], axis=1)
    elif low.size:
        rank[low] = np.count_nonzero(S[low] >= gold[low, None], axis=1)
    if k < width:
        keys = np.partition(keys, k - 1, axis=1)[:, :k]  # every row has >= k real keys
    keys.sort(axis=1)
    idx = keys & _TIE_MASK
    idx = np.where(idx == n, gold_cols[:, None], idx)
    return gold, rank.astype(np.int64), idx, _key_scores_np(keys)


def chunk_topk_torch(S: torch.Tensor, start: int, k: int) -> ChunkResult:
    """:func:`chunk_topk_numpy` in torch, on the tensor's device; returns NumPy arrays."""
    r, n = S.shape
    dev = S.device
    rows = torch.arange(r, device=dev)
    gold = S[rows, start + rows]
    g = group_columns(n, k)
    m = n // g
    gmax = S[:, :m * g].reshape(r, g, m).amax(dim=1) if g > 1 else S
    thr = torch.topk(gmax, k, dim=1, sorted=False).values.amin(dim=1)
    row, col = torch.nonzero(S >= thr[:, None], as_tuple=True)
    count = torch.bincount(row, minlength=r)
    width = int(count.max())
    keys = torch.full((r, width), _NO_KEY, dtype=torch.int64, device=dev)
    pos = torch.arange(row.numel(), device=dev) - (torch.cumsum(count, 0) - count)[row]
    keys[row, pos] = _order_keys_torch(S[row, col], torch.where(col == start + row, n, col))
    rank = (S >= gold[:, None]).sum(dim=1)  # one more pass is cheap on a GPU
    keys = torch.topk(keys, k, dim=1, largest=False, sorted=True).values
    idx = keys & _TIE_MASK
    idx = torch.where(idx == n, (start + rows)[:, None], idx)
    return (gold.cpu().numpy(), rank.cpu().numpy().astype(np.int64), idx.cpu().numpy(),
            _key_scores_torch(keys).cpu().numpy())


def _rank_chunk_cpu(S: np.ndarray, start: int, k: int, mask: np.ndarray,
                    store: Callable[[int, ChunkResult], None], pool: ThreadPoolExecutor | None = None) -> None:
    """:func:`chunk_topk_numpy` on blocks of ``CPU_BLOCK_BYTES`` of rows (they stay in the core's
    cache across the passes), on ``pool``'s threads if given (NumPy releases the GIL)."""
    r, n = S.shape
    block = max(1, CPU_BLOCK_BYTES // (4 * n))

    def rank_block(a: int) -> None:
        b = min(r, a + block)
        store(start + a, chunk_topk_numpy(S[a:b], start + a, k, mask[a:b]))

    for _ in (pool.map(rank_block, range(0, r, block)) if pool is not None else map(rank_block, range(0, r, block))):
        pass


def default_chunk_rows(n: int, device: torch.device | str = "cpu") -> int:
    """Rows per chunk: ``CPU_CHUNK_BYTES`` of scores on CPU, ``DEVICE_CHUNK_BYTES`` on a GPU."""
    budget = CPU_CHUNK_BYTES if torch.device(device).type == "cpu" else DEVICE_CHUNK_BYTES
    return max(1, min(n, budget // (4 * max(1, n))))


def local_decode(score_rows: ScoreRows, n: int, k: int, chunk_rows: int | None = None,
                 progress: bool = True, threads: int | None = None) -> LocalResult:
    """Rank all n proofs for each statement, keeping only the top-k lists and the gold rank.

    Peak memory is a few ``chunk_rows x n`` arrays per thread (the chunk's scores, a mask, the
    candidates' keys), independent of n^2. A :class:`FactorScorer` on a GPU scores and ranks each
    chunk there. On CPU, ``threads`` (default ``torch.get_num_threads()``, the job's threads) work
    on whole chunks at once, each with its own buffer, one-threaded product and NumPy ranking: no
    thread waits for another inside a chunk. Any other score function is called chunk by chunk in
    this thread, and its chunks are ranked on ``threads`` threads, a block of rows each.
    """
    if n < 1:
        raise ValueError("nothing to decode: the set has no pairs")
    k = min(int(k), n)
    if k < 1:
        raise ValueError(f"topk must be >= 1, got {k}")
    if n > _TIE_MASK - 1:
        raise ValueError(f"at most {_TIE_MASK - 1} proofs can be decoded, got {n}")
    factors = score_rows if isinstance(score_rows, FactorScorer) else None
    if factors is not None and factors.n != n:
        raise ValueError(f"the factor scorer has {factors.n} pairs, decoding was asked for {n}")
    on_device = factors is not None and factors.device.type != "cpu"
    chunk_rows = int(chunk_rows) if chunk_rows else default_chunk_rows(n, factors.device if on_device else "cpu")
    threads = max(1, int(torch.get_num_threads() if threads is None else threads))
    out = LocalResult(np.empty(n, np.int64), np.empty(n, np.float32), np.empty((n, k), np.int64),
                      np.empty((n, k), np.float32))

    def store(start: int, res: ChunkResult) -> None:
        stop = start + len(res[0])
        out.gold_score[start:stop], out.gold_rank[start:stop], out.topk_idx[start:stop], out.topk_score[start:stop] = res

    starts = range(0, n, chunk_rows)
    bar = tqdm(total=len(starts), desc="score+top-k", unit="chunk", disable=not progress or len(starts) < 2)
    with bar:
        if factors is not None and not on_device and threads > 1 and len(starts) > 1:
            _factor_chunks_in_threads(factors, k, chunk_rows, threads, store, bar)
            return out
        buffer = factors.new_buffer(min(n, chunk_rows)) if factors is not None else None
        mask = None if on_device else np.empty((min(n, chunk_rows), n), bool)
        with ThreadPoolExecutor(threads) if threads > 1 and not on_device else nullcontext() as pool:
            for start in starts:
                stop = min(n, start + chunk_rows)
                if factors is None:
                    S = _checked_chunk(score_rows, start, stop, n)
                else:
                    S = factors.scores_into(start, stop, buffer[:stop - start])
                    if factors.check_finite:
                        _check_finite(S, start)
                if on_device:
                    store(start, chunk_topk_torch(S, start, k))
                else:
                    _rank_chunk_cpu(S if isinstance(S, np.ndarray) else S.numpy(), start, k, mask, store, pool)
                bar.update()
    return out


def _factor_chunks_in_threads(f: FactorScorer, k: int, chunk_rows: int, threads: int,
                              store: Callable[[int, ChunkResult], None], bar: tqdm) -> None:
    """Chunks of a CPU :class:`FactorScorer` on ``threads`` threads, each chunk start to end on one
    (torch's product and NumPy's ranking release the GIL); torch runs one-threaded meanwhile."""
    rows = min(f.n, chunk_rows)
    free: queue.SimpleQueue = queue.SimpleQueue()
    for _ in range(threads):
        free.put((f.new_buffer(rows), np.empty((rows, f.n), bool)))

    def work(start: int) -> None:
        stop = min(f.n, start + chunk_rows)
        buffer, mask = free.get()
        try:
            S = f.scores_into(start, stop, buffer[:stop - start])
            if f.check_finite:
                _check_finite(S, start)
            _rank_chunk_cpu(S.numpy(), start, k, mask, store)
        finally:
            free.put((buffer, mask))

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with ThreadPoolExecutor(threads) as pool:
            futures = [pool.submit(work, start) for start in range(0, f.n, chunk_rows)]
            try:
                for done in as_completed(futures):
                    done.result()
                    bar.update()
            finally:
                for fut in futures:
                    fut.cancel()
    finally:
        torch.set_num_threads(before)


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
    cost.ravel()[::n + 1] += gold_penalty(float(cost.max()), n)  # ties count against the gold
    _, x, _ = lap.lapjv(cost)
    return np.asarray(x, np.int64)


def gold_penalty(score_range: float, n: int) -> float:
    """Extra cost of each gold pair (i, i) in global decoding: ``2^-24 * range / n``.

    Ties count against the gold (module docstring): the n penalties together stay below one
    float32 unit in the last place of the score range, so they decide only between assignments
    whose totals float32 scores cannot tell apart. A zero range (constant scores) uses range 1.
    """
    return 2.0 ** -24 * (score_range if score_range > 0 else 1.0) / n


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
    cc: np.ndarray            # float64 costs in [0, 1] (+ gold_penalty on gold pairs; fallback: FALLBACK_COST)
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
                  chunk_rows: int | None = None) -> GlobalResult:
    """Exact dense LAP when ``n <= exact_max_n``, else sparse k-best LAPMOD (module docstring)."""
    n = local.n
    t0 = time.perf_counter()
    if n <= exact_max_n:
        x = exact_global(dense_scores(score_rows, n, chunk_rows or default_chunk_rows(n)))
        res = GlobalResult(x, "exact", 0, time.perf_counter() - t0)
    else:
        x, used = sparse_global(local.topk_idx, local.topk_score, seed)
        res = GlobalResult(x, "sparse", used, time.perf_counter() - t0,
                           {"kbest_deficiency": matching_deficiency(local.topk_idx)})
    log.info("global decoding (%s, n=%d): acc %.4f, %d fallback edges, %.1fs",
             res.method, n, res.acc, res.fallback_edges, res.seconds)
    return res


def decode_all(score_rows: ScoreRows, n: int, topk: int, exact_max_n: int, seed: int,
               chunk_rows: int | None = None) -> tuple[LocalResult, GlobalResult]:
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
        "assignment_ties": "ties count against the gold proof (each gold pair costs 2^-24 * score range / n "
                           "more: among assignments float32 cannot tell apart, the fewest gold pairs)",
    }
