"""Seeded randomness of training, the same on every rank: the seeds, the batch order of an epoch
(random, or built around BM25 neighbours: :func:`neighbour_batches`), the negatives of a triplet
step, and blocks with their own random stream.

Every draw is a function of ``(seed, epoch, ...)`` only, never of what ran before in the process,
so a run that is killed and resumed from its checkpoint continues with the batches, negatives and
masks it would have drawn, and every DDP rank walks the same batches.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd
import torch

from proofmatch.data.views import View
from proofmatch.scoring.tokens import token_lists

log = logging.getLogger(__name__)


def seed_everything(seed: int, deterministic: bool = True) -> None:
    """Seed python, numpy and torch (all GPUs too); with ``deterministic`` (CPU runs) also ask
    torch for deterministic kernels where it has them (a warning where it has none). GPU runs
    keep the fast kernels: they are seeded and resumable, not bit-for-bit reproducible."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)


def epoch_rng(seed: int, epoch: int, stream: int = 0) -> np.random.Generator:
    """A generator that depends only on ``(seed, epoch, stream)``: data order and negative
    sampling of an epoch are the same whether or not the run was interrupted before it."""
    return np.random.default_rng([seed, epoch, stream])


def shuffled_batches(n: int, batch_size: int, seed: int, epoch: int) -> list[np.ndarray]:
    """One shuffled pass over ``n`` items in batches, a function of ``(seed, epoch)`` only."""
    order = epoch_rng(seed, epoch).permutation(n)
    return [order[i : i + batch_size] for i in range(0, n, batch_size)]


def epoch_batches(
    n: int, batch_size: int, seed: int, epoch: int, neighbours: np.ndarray | None = None
) -> list[np.ndarray]:
    """A shuffled pass over ``n`` items, a function of ``(seed, epoch)`` only: random batches, or
    with ``neighbours`` (:func:`bm25_neighbours` of the ``n`` train pairs) batches built around
    them (:func:`neighbour_batches`). A last batch of a single pair is dropped: it has no in-batch
    negative."""
    if neighbours is None:
        batches = shuffled_batches(n, batch_size, seed, epoch)
    else:
        if len(neighbours) != n:
            raise ValueError(f"neighbours of {len(neighbours)} pairs for a pass over {n}")
        batches = neighbour_batches(neighbours, batch_size, seed, epoch)
    return [b for b in batches if len(b) >= 2]


def neighbour_batches(
    neighbours: np.ndarray, batch_size: int, seed: int, epoch: int
) -> list[np.ndarray]:
    """One pass over the pairs in batches of lexically related pairs ("hard batches").

    Why: the in-batch softmax of local training (paper §7.1) contrasts a statement with the other
    proofs of its batch, and in a random batch those are mostly about something else: easy
    negatives, which a pretrained encoder already tells apart. A batch of pairs that BM25 ranks
    near each other holds the proofs a statement is most easily confused with (the lever of
    TAS-Balanced's and ANCE's batches; this project's addition, not the paper's).

    ``neighbours[i]``: pair i's neighbours, the pairs whose proofs BM25 ranks highest for
    statement i, best first (:func:`bm25_neighbours`). Anchors are taken in a random order, a
    function of ``(seed, epoch)`` only; an anchor not yet in a batch joins the batch being filled,
    followed by those of its neighbours not yet in one, in BM25 order, as many as the batch still
    holds; a full batch is closed and the next one begun. Every pair is in exactly one batch;
    all batches but the last hold ``batch_size`` pairs. The loop is over anchors and their k
    neighbours (n k steps of bookkeeping per epoch, no scoring)."""
    n = len(neighbours)
    order = epoch_rng(seed, epoch).permutation(n)
    placed = np.zeros(n, dtype=bool)
    batches: list[np.ndarray] = []
    current: list[int] = []
    for anchor in order:
        if placed[anchor]:
            continue
        room = batch_size - len(current)
        row = neighbours[anchor]
        group = [int(anchor), *(int(j) for j in row[~placed[row]][: room - 1])]
        placed[group] = True
        current += group
        if len(current) == batch_size:
            batches.append(np.asarray(current, dtype=np.int64))
            current = []
    if current:
        batches.append(np.asarray(current, dtype=np.int64))
    return batches


def train_neighbours(train: pd.DataFrame, view: View, k: int) -> np.ndarray | None:
    """Each train pair's ``k`` BM25 neighbours over its tokens of the run's ``view``
    (:func:`bm25_neighbours`), computed once per run; None for ``k`` 0 (random batches)."""
    if not k:
        return None
    t0 = time.perf_counter()
    sides = (token_lists(train[c], view) for c in ("statement_tokens", "proof_tokens"))
    out = bm25_neighbours(*sides, k)
    log.info(
        "train: %d BM25 neighbours of %d pairs in %.1f s",
        out.shape[1],
        len(train),
        time.perf_counter() - t0,
    )
    return out


def bm25_neighbours(
    statements: Sequence[list[str]], proofs: Sequence[list[str]], k: int
) -> np.ndarray:
    """``(n, min(k, n - 1))`` pair indices: for each statement the other pairs whose proofs BM25
    ranks highest for it, best first (ties by index), its own pair left out. BM25 is fitted on
    ``proofs`` (:func:`proofmatch.scoring.lexical.bm25_scorer`, one sparse product per chunk of
    statements) and ranked by local decoding's top-k (:func:`proofmatch.decoding.local.local_decode`)."""
    from proofmatch.decoding.local import local_decode
    from proofmatch.scoring.lexical import bm25_scorer

    n = len(statements)
    k = min(int(k), n - 1)
    if k < 1:
        raise ValueError(f"BM25 neighbours need k >= 1 and at least 2 pairs (k {k}, {n} pairs)")
    top = local_decode(bm25_scorer(statements, proofs), n, k + 1, progress=False).topk_idx
    others = top != np.arange(n)[:, None]  # the own pair, where it is among the k + 1
    keep = np.argsort(~others, axis=1, kind="stable")[:, :k]  # the others first, in order
    return np.take_along_axis(top, keep, axis=1)


def sample_negatives(
    batch: np.ndarray, article_codes: np.ndarray, hard_fraction: float, rng: np.random.Generator
) -> np.ndarray:
    """One negative proof per anchor: with probability ``hard_fraction`` another proof of the same
    article (SPECTER's hard negative) when the article has one, else a random other proof."""
    n = len(article_codes)
    out = np.empty(len(batch), dtype=np.int64)
    hard = rng.random(len(batch)) < hard_fraction
    for k, i in enumerate(batch):
        same = np.flatnonzero(article_codes == article_codes[i]) if hard[k] else np.empty(0)
        same = same[same != i]
        if len(same):
            out[k] = rng.choice(same)
        else:
            j = rng.integers(n - 1)
            out[k] = j + (j >= i)
    return out


def derived_seed(*keys: int) -> int:
    """A seed that depends only on ``keys`` (e.g. seed, epoch, step)."""
    return int(np.random.SeedSequence(list(keys)).generate_state(1)[0])


@contextlib.contextmanager
def forked_rng(seed: int) -> Iterator[None]:
    """Run a block with its own seeded torch/numpy randomness, leaving the global streams as they were."""
    np_state = np.random.get_state()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        np.random.seed(seed % 2**32)
        try:
            yield
        finally:
            np.random.set_state(np_state)
