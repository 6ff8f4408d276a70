"""Local decoding of a statement x proof score matrix: scores, ranks, top-k lists, hubness (paper §6, Appendix B).

Local decoding as the paper defines it: "we first score all possible pairs (s, p), and construct a
matrix M = (m_ij) [...] Then we can straightforwardly sort each row by decreasing order and assign
the proof ranking to the corresponding statement" (§6). Statement ``i``'s gold proof is proof ``i``
(the diagonal). Scores come from a *row-chunk score function*
``score_rows(start, stop) -> float32 array (stop - start, n)``, so the n x n matrix is never held
for large n: each chunk is one matrix product (:func:`factor_scorer` for the models' low-rank
factors, a sparse product for the baselines), and from each chunk we keep only the top-k proofs of
each statement and the gold score and rank, computed exactly over the whole row
(:mod:`proofmatch.decoding.topk`, at the cost of the product). Global decoding, one proof per
statement, reads the result: :mod:`proofmatch.decoding.assign`.

Local ranks and ties. ``rank_i = 1 + #{j: s_ij > s_ii} + #{j != i: s_ij == s_ii}``, i.e. every
proof that ties with the gold counts against it, as in the reference implementation
(``#{j: s_j >= s_i}``); a constant scorer therefore gets rank n, not 1. The proofs of a row are
put in one total order: score descending, then the gold *after* the proofs tied with it, then
proof index ascending. The top-k list is the first k proofs of that order, so when several proofs
tie at the k-th score the lowest indices are kept and the gold is the first to be left out: the
gold is in its list exactly when ``rank_i <= k``, and ``top1 == i`` exactly when ``rank_i == 1``.

Hubness. Under local decoding "a small number of proofs may score high with most statements and be
systematically assigned as highest-ranking proof" (§6); :func:`hubness` counts how often each
proof is a local top-1 (Table 7, Appendix B).
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from tqdm import tqdm

from proofmatch.decoding.topk import MAX_PROOFS, ChunkResult, chunk_topk_torch, rank_chunk_cpu
from proofmatch.experiments import HUBNESS_BINS

if TYPE_CHECKING:
    import torch

# torch is imported where a tensor is made (the factor scorer, a GPU chunk), not here: the lexical
# baselines score with SciPy and rank with NumPy, and a baseline job then starts without torch's
# 2 s of import (21 jobs of the demo).

ScoreRows = Callable[[int, int], np.ndarray]
"""``score_rows(start, stop)`` -> scores of statements ``start:stop`` against all n proofs."""

# Scores bytes per chunk when chunk_rows is not given: a few chunk-sized arrays stay in memory.
CPU_CHUNK_BYTES = 16 << 20
DEVICE_CHUNK_BYTES = 128 << 20
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

    def __init__(
        self,
        A: np.ndarray,
        B: np.ndarray,
        row_bias: np.ndarray | None = None,
        col_bias: np.ndarray | None = None,
        device: str | torch.device | None = None,
    ):
        A = np.asarray(A, dtype=np.float32)
        B = np.asarray(B, dtype=np.float32)
        if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
            raise ValueError(f"factors must be (n, d) and (n, d); got {A.shape} and {B.shape}")
        if A.shape[0] != B.shape[0]:
            raise ValueError(
                f"need as many statements as proofs; got {A.shape[0]} and {B.shape[0]}"
            )
        n = A.shape[0]
        rb = (
            np.zeros(n, np.float32)
            if row_bias is None
            else np.asarray(row_bias, np.float32).reshape(n)
        )
        cb = (
            np.zeros(n, np.float32)
            if col_bias is None
            else np.asarray(col_bias, np.float32).reshape(n)
        )
        import torch

        self.n = n
        self.device = torch.device("cpu" if device is None else device)
        # |s_ij| <= |a_i| |b_j| + |row_bias_i| + |col_bias_j| (Cauchy-Schwarz, partial sums too): when
        # that bound is far below float32's maximum, no score can be inf or NaN and the per-chunk
        # finiteness pass is skipped (a NaN or inf in the factors makes the bound NaN or inf).
        with np.errstate(over="ignore", invalid="ignore"):
            bound = (
                np.linalg.norm(A.astype(np.float64), axis=1).max(initial=0.0)
                * np.linalg.norm(B.astype(np.float64), axis=1).max(initial=0.0)
                + np.abs(rb.astype(np.float64)).max(initial=0.0)
                + np.abs(cb.astype(np.float64)).max(initial=0.0)
            )
        self.check_finite = not bound < _F32_SAFE
        self.A = torch.from_numpy(np.ascontiguousarray(A)).to(self.device)
        self.BT = torch.from_numpy(np.ascontiguousarray(B.T)).to(
            self.device
        )  # (d, n): NumPy's bits, see above
        self.row_bias = torch.from_numpy(rb).to(self.device) if rb.any() else None
        self.col_bias = torch.from_numpy(cb).to(self.device) if cb.any() else None

    def new_buffer(self, rows: int) -> torch.Tensor:
        import torch

        return torch.empty((rows, self.n), dtype=torch.float32, device=self.device)

    def scores_into(self, start: int, stop: int, out: torch.Tensor) -> torch.Tensor:
        """Rows ``start:stop`` written into ``out`` (a ``(stop - start, n)`` tensor on the device)."""
        import torch

        torch.mm(self.A[start:stop], self.BT, out=out)
        if self.row_bias is not None:
            out += self.row_bias[start:stop, None]
        if self.col_bias is not None:
            out += self.col_bias[None, :]
        return out

    def __call__(self, start: int, stop: int) -> np.ndarray:
        return self.scores_into(start, stop, self.new_buffer(stop - start)).cpu().numpy()


def factor_scorer(
    A: np.ndarray,
    B: np.ndarray,
    row_bias: np.ndarray | None = None,
    col_bias: np.ndarray | None = None,
    device: str | torch.device | None = None,
) -> ScoreRows:
    """Score function of ``S = A @ B.T + row_bias[:, None] + col_bias[None, :]`` (float32).

    This is the contract of ``Matcher.factors``: the bilinear form ``s^T W p + b`` is folded into
    the factors, so a chunk of rows is one matrix product instead of n bilinear calls per row.
    ``device`` (default CPU) is where :func:`local_decode` scores and ranks (a :class:`FactorScorer`).
    """
    return FactorScorer(A, B, row_bias, col_bias, device)


def dense_scores(
    score_rows: ScoreRows, n: int, chunk_rows: int = 512, dtype: type = np.float64
) -> np.ndarray:
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
        ok = S.isfinite().all(dim=1).cpu().numpy()
    if not ok.all():
        bad = start + int(np.flatnonzero(~ok)[0])
        raise ValueError(
            f"non-finite score in row {bad} (statement index); check the model's outputs"
        )


# ----------------------------------------------------------------------------- local decoding


@dataclass
class LocalResult:
    """Per-statement outcome of local decoding (row i = statement i, gold proof i)."""

    gold_rank: np.ndarray  # (n,) int64, 1-based, ties count against the gold
    gold_score: np.ndarray  # (n,) float32
    topk_idx: np.ndarray  # (n, k) int64, proof indices, best first
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


def default_chunk_rows(n: int, device: torch.device | str = "cpu") -> int:
    """Rows per chunk: ``CPU_CHUNK_BYTES`` of scores on CPU, ``DEVICE_CHUNK_BYTES`` on a GPU."""
    kind = device.type if hasattr(device, "type") else str(device).split(":")[0]
    budget = CPU_CHUNK_BYTES if kind == "cpu" else DEVICE_CHUNK_BYTES
    return max(1, min(n, budget // (4 * max(1, n))))


def local_decode(
    score_rows: ScoreRows,
    n: int,
    k: int,
    chunk_rows: int | None = None,
    progress: bool = True,
    threads: int | None = None,
) -> LocalResult:
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
    if n > MAX_PROOFS:
        raise ValueError(f"at most {MAX_PROOFS} proofs can be decoded, got {n}")
    factors = score_rows if isinstance(score_rows, FactorScorer) else None
    if factors is not None and factors.n != n:
        raise ValueError(f"the factor scorer has {factors.n} pairs, decoding was asked for {n}")
    on_device = factors is not None and factors.device.type != "cpu"
    chunk_rows = (
        int(chunk_rows)
        if chunk_rows
        else default_chunk_rows(n, factors.device if on_device else "cpu")
    )
    if threads is None:
        import torch

        threads = torch.get_num_threads()
    threads = max(1, int(threads))
    out = LocalResult(
        np.empty(n, np.int64),
        np.empty(n, np.float32),
        np.empty((n, k), np.int64),
        np.empty((n, k), np.float32),
    )

    def store(start: int, res: ChunkResult) -> None:
        stop = start + len(res[0])
        (
            out.gold_score[start:stop],
            out.gold_rank[start:stop],
            out.topk_idx[start:stop],
            out.topk_score[start:stop],
        ) = res

    starts = range(0, n, chunk_rows)
    bar = tqdm(
        total=len(starts), desc="score+top-k", unit="chunk", disable=not progress or len(starts) < 2
    )
    with bar:
        if factors is not None and not on_device and threads > 1 and len(starts) > 1:
            _factor_chunks_in_threads(factors, k, chunk_rows, threads, store, bar)
        else:
            _chunks_in_this_thread(score_rows, n, k, chunk_rows, threads, on_device, store, bar)
    return out


def _chunks_in_this_thread(
    score_rows: ScoreRows,
    n: int,
    k: int,
    chunk_rows: int,
    threads: int,
    on_device: bool,
    store: Callable[[int, ChunkResult], None],
    bar: tqdm,
) -> None:
    """Score the chunks one after the other in this thread (a :class:`FactorScorer` into one
    buffer, any other score function as it returns them) and rank each on the scorer's device, or
    on CPU ``threads`` threads, a block of rows each; ``store`` takes each chunk's result."""
    factors = score_rows if isinstance(score_rows, FactorScorer) else None
    buffer = factors.new_buffer(min(n, chunk_rows)) if factors is not None else None
    mask = None if on_device else np.empty((min(n, chunk_rows), n), bool)
    with ThreadPoolExecutor(threads) if threads > 1 and not on_device else nullcontext() as pool:
        for start in range(0, n, chunk_rows):
            stop = min(n, start + chunk_rows)
            if factors is None:
                S = _checked_chunk(score_rows, start, stop, n)
            else:
                S = factors.scores_into(start, stop, buffer[: stop - start])
                if factors.check_finite:
                    _check_finite(S, start)
            if on_device:
                store(start, chunk_topk_torch(S, start, k))
            else:
                rank_chunk_cpu(
                    S if isinstance(S, np.ndarray) else S.numpy(), start, k, mask, store, pool
                )
            bar.update()


def _factor_chunks_in_threads(
    f: FactorScorer,
    k: int,
    chunk_rows: int,
    threads: int,
    store: Callable[[int, ChunkResult], None],
    bar: tqdm,
) -> None:
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
            S = f.scores_into(start, stop, buffer[: stop - start])
            if f.check_finite:
                _check_finite(S, start)
            rank_chunk_cpu(S.numpy(), start, k, mask, store)
        finally:
            free.put((buffer, mask))

    import torch

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
