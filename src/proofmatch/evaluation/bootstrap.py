"""Bootstrap intervals over a pool's statements: how far a table's numbers could move by chance.

Every score of Tables 3-6 is a mean over the statements of one pool (MRR: of the reciprocal gold
ranks; accuracy: of 0/1 hits). Resampling the statements with replacement and recomputing the mean
gives its sampling distribution; the 2.5 % and 97.5 % quantiles of ``resamples`` such means are the
95 % percentile interval. A difference of two systems on the same statements (a learned row against
BM25, one training level against another) is resampled *paired*: the same draws for both, so what
they share cancels.

Vectorised: one draw is a vector of counts (how often each statement was drawn, a multinomial), so
``R`` draws are an ``R x n`` count matrix ``W`` and the ``R`` means of a per-statement vector ``v``
are one matrix product ``W @ v / n``. ``W`` depends only on ``n`` and the seed, so every cell of a
pool shares it, which makes every contrast paired by construction.

Global accuracy is resampled under the fixed assignment: the assignment is decoded once on the whole
pool and its per-statement hits are resampled like any other 0/1 vector (re-solving the linear
assignment per draw would cost ``R`` assignments). Statements are aligned across files by ``pair_id``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

# The per-statement vectors of an evaluation: the reciprocal gold rank (MRR), a local top-1 hit (Acc),
# a hit of the global assignment (global Acc), and whether the statement's local top-1 proof is also
# the top-1 of another statement (hubness, Table 7).
METRICS = ("mrr", "acc", "global_acc", "shared_top1")
# Further per-row columns, by proof position (proof i is statement i's gold): the share of the pool
# whose local top-1 is this statement's top-1 (its maximum says whether a model collapsed onto one
# proof), and whether proof i is the local top-1 of no statement, or of two or more (§6's numbers).
POOL_COLUMNS = ("top1_share", "proof_none", "proof_multi")
STATEMENTS = "statements"  # the evaluation JSON's key of :func:`statements_block`


@dataclass(frozen=True)
class Interval:
    """A point estimate (the mean over the whole pool) and its percentile interval, as fractions."""

    value: float
    low: float
    high: float

    def excludes_zero(self) -> int:
        """+1 when the whole interval is above 0, -1 when below, 0 when it covers 0."""
        return 1 if self.low > 0 else -1 if self.high < 0 else 0


@functools.lru_cache(maxsize=32)
def draw_counts(n: int, resamples: int, seed: int) -> np.ndarray:
    """``resamples`` bootstrap draws of ``n`` statements as an ``resamples x n`` count matrix
    (float64, each row sums to ``n``); seeded by ``(seed, n)`` so a pool's draws never change."""
    if n < 1 or resamples < 1:
        raise ValueError(
            f"a bootstrap needs n >= 1 and resamples >= 1 (got n={n}, resamples={resamples})"
        )
    rng = np.random.default_rng([seed, n])
    # n statements drawn with replacement per resample, counted by one bincount over all rows
    # (a multinomial draw of n categories in numpy costs 20x more at n = 515).
    picks = rng.integers(0, n, size=(resamples, n))
    picks += (n * np.arange(resamples))[:, None]  # in place: at n = 1,183 an array is 9.5 MB
    counts = np.bincount(picks.ravel(), minlength=resamples * n).reshape(resamples, n)
    counts = counts.astype(np.float64)
    counts.setflags(write=False)
    return counts


def intervals(values: np.ndarray, resamples: int, seed: int, level: float = 0.95) -> list[Interval]:
    """The interval of the mean of each row of ``values`` (``m x n``, or one vector of ``n``)."""
    v = np.atleast_2d(np.asarray(values, dtype=np.float64))
    means = draw_counts(v.shape[1], resamples, seed) @ v.T / v.shape[1]  # R x m
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail], axis=0)
    return [
        Interval(float(p), float(lo), float(hi)) for p, lo, hi in zip(v.mean(axis=1), low, high)
    ]


def interval(values: np.ndarray, resamples: int, seed: int, level: float = 0.95) -> Interval:
    """:func:`intervals` of one vector."""
    return intervals(values, resamples, seed, level)[0]


def many_intervals(
    vectors: Sequence[np.ndarray], resamples: int, seed: int, level: float = 0.95
) -> list[Interval]:
    """:func:`interval` of each vector, in order, with one matrix product and one quantile per pool
    size instead of one per vector: a table's cells share their pool, and per cell the fixed cost
    of the product and the quantile was most of what the intervals added to a table job."""
    out: list[Interval | None] = [None] * len(vectors)
    by_size: dict[int, list[int]] = {}
    for i, v in enumerate(vectors):
        by_size.setdefault(len(v), []).append(i)
    for idx in by_size.values():
        found = intervals(np.stack([np.asarray(vectors[i]) for i in idx]), resamples, seed, level)
        for i, iv in zip(idx, found):
            out[i] = iv
    return out  # type: ignore[return-value]


def statements_block(
    pair_ids: Sequence[str], gold_rank: np.ndarray, top1: np.ndarray, global_pred: np.ndarray
) -> dict[str, list]:
    """What an evaluation JSON carries for its intervals (key :data:`STATEMENTS`): the pair ids, each
    statement's gold rank, and the positions of its local top-1 and assigned proof, as plain ints.
    A table then reads one small JSON per cell, not the evaluation's Parquet with its top-k lists."""
    n = len(pair_ids)
    block = {
        "pair_id": [str(p) for p in pair_ids],
        "gold_rank": np.asarray(gold_rank, dtype=np.int64).tolist(),
        "top1": np.asarray(top1, dtype=np.int64).tolist(),
        "global_pred": np.asarray(global_pred, dtype=np.int64).tolist(),
    }
    if any(len(v) != n for v in block.values()):
        raise ValueError(f"per-statement vectors of unequal length for {n} statements")
    return block


def per_statement(block: Mapping[str, Sequence], origin: object = "an evaluation") -> pd.DataFrame:
    """An evaluation's per-statement vectors (:data:`METRICS`), indexed and sorted by ``pair_id``,
    from the ``statements`` block of its JSON (:func:`statements_block`); ``origin`` names it in
    errors."""
    try:
        pair_id = np.asarray(block["pair_id"], dtype=str)  # ids are compared and sorted as strings
        gold_rank, top1, global_pred = (
            np.asarray(block[k], dtype=np.int64) for k in ("gold_rank", "top1", "global_pred")
        )
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{origin}: a malformed {STATEMENTS!r} block ({err})") from None
    if pair_id.ndim != 1:
        raise ValueError(f"{origin}: its pair ids are not a flat list")
    n = len(pair_id)
    if not (len(gold_rank) == len(top1) == len(global_pred) == n):
        raise ValueError(f"{origin}: per-statement vectors of unequal length")
    if n and (
        gold_rank.min() < 1
        or min(top1.min(), global_pred.min()) < 0
        or max(top1.max(), global_pred.max()) >= n
    ):
        raise ValueError(f"{origin}: a gold rank below 1 or a proof position outside the pool")
    # an object index, not str: pandas would convert a str array to its Arrow strings, twice the
    # cost of the whole frame in a table job's fresh process
    pair_id = pair_id.astype(object)
    order = np.argsort(pair_id, kind="stable")
    ids = pair_id[order]
    if n > 1 and (ids[1:] == ids[:-1]).any():
        raise ValueError(f"{origin}: a pair_id occurs twice; not a per-statement evaluation")
    position = np.arange(n)
    count = np.bincount(top1, minlength=n)
    values = np.column_stack(
        [
            1.0 / gold_rank,
            top1 == position,
            global_pred == position,
            count[top1] > 1,
            count[top1] / max(n, 1),
            count == 0,
            count > 1,
        ]
    ).astype(np.float64)
    return pd.DataFrame(
        values[order],
        columns=[*METRICS, *POOL_COLUMNS],
        index=pd.Index(ids, name="pair_id", dtype=object),
    )


def aligned(frames: Sequence[pd.DataFrame], what: str = "evaluations") -> None:
    """Check that per-statement frames cover the same statements (a paired contrast needs them)."""
    first = frames[0].index
    for f in frames[1:]:
        if not f.index.equals(first):
            raise ValueError(
                f"{what} are not on the same statements ({len(first)} against {len(f.index)} "
                "pair ids, or other ids): a paired bootstrap needs one pool"
            )


def contrast(
    terms: Sequence[tuple[float, pd.DataFrame]],
    metric: str,
    resamples: int,
    seed: int,
    level: float = 0.95,
) -> Interval:
    """The interval of ``sum(coef * frame[metric])`` averaged over the statements, all terms resampled
    with the same draws (a paired difference: ``[(1, a), (-1, b)]``)."""
    return interval(contrast_values(terms, metric), resamples, seed, level)


def contrast_values(terms: Sequence[tuple[float, pd.DataFrame]], metric: str) -> np.ndarray:
    """Each statement's ``sum(coef * frame[metric])``, the frames checked to be on one pool: what
    :func:`contrast` resamples."""
    frames = [f for _, f in terms]
    aligned(frames)
    return np.asarray(sum(coef * f[metric].to_numpy() for coef, f in terms), dtype=np.float64)


def cell_intervals(
    frame: pd.DataFrame, metrics: Sequence[str], resamples: int, seed: int, level: float = 0.95
) -> Mapping[str, Interval]:
    """The interval of each of ``metrics`` of one evaluation (one matrix product for all)."""
    found = intervals(frame[list(metrics)].to_numpy().T, resamples, seed, level)
    return dict(zip(metrics, found))
