"""Lexical + learned fusion: ``score = z(learned) + λ · z(BM25)`` per query (this project's addition).

Neither the paper nor its code combines a learned matcher with a token-matching one; information
retrieval's standard answer to "the lexical ranker is as good as the learned one" is to add the
two scores after putting them on one scale. Here the scale is per query: each statement's scores
over its candidate pool (one row of the statement x proof matrix) are standardised to mean 0 and
standard deviation 1 (:func:`standardize`), so a BM25 row in the tens and a bilinear row in the
hundreds weigh what λ says, whatever the model's or the corpus's score range. A row whose scores
are all equal (an empty query for BM25) standardises to zeros: it then adds nothing to the rank.

λ is chosen on the dev part by local MRR (:func:`choose_weight`, over :data:`WEIGHT_GRID`) and
stored with the run; the test part is scored once with it. ``λ = 0`` is the learned scorer alone
(its ranks, not its numbers), a large λ approaches BM25's ranks.

Rank fusion (``normalize="rank"``) is the alternative: each score becomes its
reciprocal rank ``1 / (RRF_K + rank)`` in its row (:func:`reciprocal_rank`, the reciprocal-rank
fusion of Cormack, Clarke and Büttcher, SIGIR 2009, with their k = 60), so only the order of each
half counts, not how far apart its scores are. The default is z-scores.

The fused scores are a row-chunk score function like every other scorer
(:data:`proofmatch.decoding.local.ScoreRows`), so local and global decoding, MRR, accuracy and
the output files are those of the models and the baselines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from proofmatch import config
from proofmatch.registry.checks import unknown

if TYPE_CHECKING:  # decoding.local imports torch; the search page loads scoring without it
    from proofmatch.decoding.local import ScoreRows

# λ candidates tried on dev: 0 (learned ranks alone) to 8 (BM25 nearly alone), denser near 1.
WEIGHT_GRID = tuple(config.default("fusion.weights"))
# How each half's row is put on one scale before the weighted sum (config fusion.normalize).
NORMALIZE = ("zscore", "rank")
RRF_K = 60  # reciprocal-rank fusion's constant (Cormack et al. 2009): rank 1 weighs 61/60 of rank 2


def standardize(scores: np.ndarray) -> np.ndarray:
    """Each row to mean 0 and standard deviation 1 over its candidates (float64 statistics, float32
    out); a constant row becomes zeros."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 1:
        return standardize(s[None, :])[0]
    mean = s.mean(axis=1, keepdims=True)
    std = s.std(axis=1, keepdims=True)
    z = np.divide(s - mean, std, out=np.zeros_like(s), where=std > 0)
    return z.astype(np.float32)


def reciprocal_rank(scores: np.ndarray) -> np.ndarray:
    """Each score as ``1 / (RRF_K + rank)`` within its row (rank 1 = the highest score; tied
    scores share the best rank of their tie, so a tie stays a tie), float32."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 1:
        return reciprocal_rank(s[None, :])[0]
    from scipy.stats import (
        rankdata,
    )  # here: scipy.stats takes ~1 s to import, search never needs it

    ranks = rankdata(-s, method="min", axis=1)
    return (1.0 / (RRF_K + ranks)).astype(np.float32)


def normalizer(normalize: str) -> Callable[[np.ndarray], np.ndarray]:
    """The row normalization named ``normalize`` (one of :data:`NORMALIZE`)."""
    if normalize == "zscore":
        return standardize
    if normalize == "rank":
        return reciprocal_rank
    raise unknown("fusion normalization", normalize, NORMALIZE)  # e.g. a fusion.json's


def _check_weight(weight: float) -> None:
    if not np.isfinite(weight) or weight < 0:
        raise ValueError(f"fusion weight must be a finite number >= 0; got {weight!r}")


def fuse(learned: np.ndarray, lexical: np.ndarray, weight: float, *, normalize: str) -> np.ndarray:
    """``z(learned) + weight · z(lexical)``, row by row (both arrays of one shape); with
    ``normalize="rank"`` the reciprocal ranks instead of z."""
    if np.shape(learned) != np.shape(lexical):
        raise ValueError(
            f"fusion needs score arrays of one shape; got {np.shape(learned)} and {np.shape(lexical)}"
        )
    _check_weight(weight)
    norm = normalizer(normalize)
    return norm(learned) + np.float32(weight) * norm(lexical)


def fused_scorer(
    learned: ScoreRows, lexical: ScoreRows, weight: float, *, normalize: str
) -> ScoreRows:
    """The row-chunk score function of the fused scores of two row-chunk score functions."""
    normalizer(normalize)  # an unknown name fails here, not at the first chunk
    _check_weight(weight)

    def score_rows(start: int, stop: int) -> np.ndarray:
        return fuse(learned(start, stop), lexical(start, stop), weight, normalize=normalize)

    return score_rows


def gold_ranks(scores: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """1-based rank of each row's gold column, ties counted against the gold (as
    :mod:`proofmatch.decoding.local` ranks)."""
    rows = np.arange(scores.shape[0])
    g = scores[rows, gold][:, None]
    return 1 + (scores > g).sum(axis=1) + (scores == g).sum(axis=1) - 1


def weight_mrr(
    learned: ScoreRows,
    lexical: ScoreRows,
    n: int,
    weights: Sequence[float],
    chunk_rows: int = 256,
    *,
    normalize: str,
) -> dict[float, float]:
    """Local MRR of the fused scores for each weight on an n x n pool whose gold is the diagonal.

    Each row chunk of both scorers is computed once and normalised once; every weight then costs
    one addition and one comparison per score."""
    if n < 1:
        raise ValueError("fusion weight selection needs at least one pair")
    for w in weights:
        _check_weight(w)
    norm = normalizer(normalize)
    recip = {float(w): 0.0 for w in weights}
    for start in range(0, n, chunk_rows):
        stop = min(n, start + chunk_rows)
        zl, zb = norm(learned(start, stop)), norm(lexical(start, stop))
        gold = np.arange(start, stop)
        for w in recip:
            recip[w] += float((1.0 / gold_ranks(zl + np.float32(w) * zb, gold)).sum())
    return {w: r / n for w, r in recip.items()}


def choose_weight(mrr_by_weight: dict[float, float]) -> float:
    """The weight with the best dev MRR; ties go to the smaller weight (closer to the learned scorer)."""
    if not mrr_by_weight:
        raise ValueError("no fusion weights were measured")
    best = max(mrr_by_weight.values())
    return min(w for w, m in mrr_by_weight.items() if m == best)


def scorer_mrr(score_rows: ScoreRows, n: int, chunk_rows: int = 256) -> float:
    """Local MRR of one scorer on an n x n pool whose gold is the diagonal (ties against the gold):
    what each half reaches alone, recorded beside the fused MRRs."""
    if n < 1:
        raise ValueError("an MRR needs at least one pair")
    recip = 0.0
    for start in range(0, n, chunk_rows):
        stop = min(n, start + chunk_rows)
        recip += float(
            (1.0 / gold_ranks(np.asarray(score_rows(start, stop)), np.arange(start, stop))).sum()
        )
    return recip / n
