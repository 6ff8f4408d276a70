"""Seeded randomness of training, the same on every rank: the seeds, the batch order of an epoch,
the negatives of a triplet step, and blocks with their own random stream.

Every draw is a function of ``(seed, epoch, ...)`` only, never of what ran before in the process,
so a run that is killed and resumed from its checkpoint continues with the batches, negatives and
masks it would have drawn, and every DDP rank walks the same batches.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator

import numpy as np
import torch


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


def epoch_batches(n: int, batch_size: int, seed: int, epoch: int) -> list[np.ndarray]:
    """A shuffled pass over ``n`` items, a function of ``(seed, epoch)`` only. A last batch of a
    single pair is dropped: it has no in-batch negative."""
    return [b for b in shuffled_batches(n, batch_size, seed, epoch) if len(b) >= 2]


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
