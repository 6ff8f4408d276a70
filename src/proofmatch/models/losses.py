"""The Matcher's three training losses on a batch's score matrix (gold = the diagonal).

Apart from :mod:`proofmatch.models.matcher` (which describes them) because they need only the
scores, not the model: :mod:`proofmatch.models.steps` calls them on any scorer's matrix.
"""

from __future__ import annotations

import lap
import numpy as np
import torch
import torch.nn.functional as F


def local_loss(scores: torch.Tensor) -> torch.Tensor:
    """Mean in-batch softmax cross-entropy of each statement (row) over the batch's proofs."""
    return F.cross_entropy(scores, torch.arange(scores.shape[0], device=scores.device))


def max_assignment(scores: np.ndarray) -> np.ndarray:
    """Exact max-weight perfect matching of a square matrix: ``x[i]`` = column of row ``i``."""
    cost = np.ascontiguousarray(-np.asarray(scores, dtype=np.float64))
    _, x, _ = lap.lapjv(cost)
    return x.astype(np.int64)


def global_loss(scores: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Structured hinge loss of the batch and the accuracy of the augmented assignment.

    ``Δ(Â, I)`` (one per wrong assignment) is folded into the decode as +1 on every off-diagonal
    cell, so ``Δ + score(Â) - score(I) = Σ_i aug[i, Â(i)] - Σ_i M[i, i]``. It is ≥ 0 because the
    identity is a feasible assignment of ``aug``, and exactly 0 (with zero gradient) when the
    identity wins by a margin of 1 per wrong edge. Divided by the batch size, like the local loss.
    """
    n = scores.shape[0]
    aug = scores + (1.0 - torch.eye(n, device=scores.device, dtype=scores.dtype))
    x = max_assignment(aug.detach().float().cpu().numpy())
    cols = torch.as_tensor(x, device=scores.device)
    rows = torch.arange(n, device=scores.device)
    loss = torch.clamp(aug[rows, cols].sum() - scores.diagonal().sum(), min=0.0) / n
    return loss, float(np.mean(x == np.arange(n)))


def triplet_loss(
    s: torch.Tensor, p_pos: torch.Tensor, p_neg: torch.Tensor, margin: float
) -> torch.Tensor:
    """SPECTER's triplet margin loss with L2 (not squared) distances."""
    return F.triplet_margin_loss(s, p_pos, p_neg, margin=margin, p=2)
