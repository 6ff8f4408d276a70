"""Top-k and gold rank of one chunk of scores: the kernel of local decoding (paper §6, §8).

:func:`proofmatch.decoding.local.local_decode` cuts the statement x proof score matrix into row
chunks and hands each chunk here. The proofs of a row are put in one total order: score
descending, then the gold *after* the proofs tied with it, then proof index ascending. The top-k
list is the first k proofs of that order, and the gold's rank counts every proof that ties with
it (:mod:`proofmatch.decoding.local` states the rule and why).

Top-k at the cost of the matrix product. The top-k of a chunk is taken from a candidate set that
provably holds every row's top-k: the row's columns are cut into ``m >= k`` groups and ``t`` is
the k-th largest of the m group maxima. Those k maxima are k distinct scores >= t, so the row's
k-th largest score is >= t and every member of the top-k, ties included, scores >= t. With 16
columns a group, about 650 of 18,408 proofs pass on random scores, and only they are ordered (a
partition and a sort of 64-bit keys that encode the total order above). Per chunk this is one
matrix product and three passes over its scores (group maxima, candidate mask, candidate
indices); the gold's rank is its place among the candidates' keys, or for a gold below ``t`` a
count over its row. No Python loop runs over rows. On CPU the passes are NumPy
(:func:`chunk_topk_numpy`) on blocks of rows that fit a core's cache (:func:`rank_chunk_cpu`);
on a GPU the same steps run in torch on the device (:func:`chunk_topk_torch`: same keys, same
result, tests/test_decode.py). ``bench/bench_decode.py`` times this against the bare product.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # torch is imported by the GPU path only (decoding.local says why)
    import torch

# Columns per group of the top-k candidate threshold (module docstring): 16 keeps ~650 of 18,408
# candidates while the group maxima are a cheap strided max and their partition is 1/16 of a row.
GROUP_COLUMNS = 16
# On CPU a chunk is ranked in blocks of CPU_BLOCK_BYTES of scores, which one core's L2 cache
# (2 MiB) holds through the passes after the first.
CPU_BLOCK_BYTES = 3 << 19
# Order keys (module docstring): descending score in the high 33 bits, tie-break in the low 31.
_TIE_BITS = 31
_TIE_MASK = (1 << _TIE_BITS) - 1
_NO_KEY = np.iinfo(np.int64).max
MAX_PROOFS = _TIE_MASK - 1
"""The most proofs a row may have: a tie-break (a column, or n for the gold) must fit 31 bits."""


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
    import torch

    bits = (scores + 0.0).view(torch.int32)
    up = bits ^ ((bits >> 31) & 0x7FFFFFFF)
    return ((_TIE_MASK - up.to(torch.int64)) << _TIE_BITS) | ties


def _key_scores_torch(keys: torch.Tensor) -> torch.Tensor:
    import torch

    up = (_TIE_MASK - (keys >> _TIE_BITS)).to(torch.int32)
    return (up ^ ((up >> 31) & 0x7FFFFFFF)).view(torch.float32)


ChunkResult = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def chunk_topk_numpy(
    S: np.ndarray, start: int, k: int, mask: np.ndarray | None = None
) -> ChunkResult:
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
    gmax = (
        S[:, : m * g].reshape(r, g, m).max(axis=1) if g > 1 else S
    )  # group q: columns q, q + m, ...
    thr = np.partition(gmax, m - k, axis=1)[:, m - k]  # k-th largest group maximum
    mask = np.greater_equal(S, thr[:, None], out=mask)
    flat = np.flatnonzero(mask)  # the candidates, row by row
    count = np.diff(np.searchsorted(flat, np.arange(r + 1) * n))
    width = int(count.max())
    first = np.cumsum(count) - count
    scores = S.ravel()[flat]
    cols = flat
    cols -= np.repeat(rows * n, count)  # flat index -> column
    slot = np.repeat(rows * width - first, count)
    slot += np.arange(flat.size)  # place in the (r, width) key table
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
    import torch

    r, n = S.shape
    dev = S.device
    rows = torch.arange(r, device=dev)
    gold = S[rows, start + rows]
    g = group_columns(n, k)
    m = n // g
    gmax = S[:, : m * g].reshape(r, g, m).amax(dim=1) if g > 1 else S
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
    return (
        gold.cpu().numpy(),
        rank.cpu().numpy().astype(np.int64),
        idx.cpu().numpy(),
        _key_scores_torch(keys).cpu().numpy(),
    )


def rank_chunk_cpu(
    S: np.ndarray,
    start: int,
    k: int,
    mask: np.ndarray,
    store: Callable[[int, ChunkResult], None],
    pool: ThreadPoolExecutor | None = None,
) -> None:
    """:func:`chunk_topk_numpy` on blocks of ``CPU_BLOCK_BYTES`` of rows (they stay in the core's
    cache across the passes), on ``pool``'s threads if given (NumPy releases the GIL)."""
    r, n = S.shape
    block = max(1, CPU_BLOCK_BYTES // (4 * n))

    def rank_block(a: int) -> None:
        b = min(r, a + block)
        store(start + a, chunk_topk_numpy(S[a:b], start + a, k, mask[a:b]))

    for _ in (
        pool.map(rank_block, range(0, r, block))
        if pool is not None
        else map(rank_block, range(0, r, block))
    ):
        pass
