"""What one training step computes: the steps of an epoch (:func:`step_schedule`: local, hybrid
or triplet) and the loss of one batch (:func:`batch_loss`), on one process or shared by DDP ranks.
:mod:`proofmatch.models.train` runs them, epoch after epoch."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from proofmatch import config
from proofmatch.models import runtime
from proofmatch.models.batching import TokenTable
from proofmatch.models.losses import global_loss, local_loss, triplet_loss

# (a pretrained checkpoint's zeroshot and frozen modes take no step of the encoder:
# proofmatch.models.pretrained)
STEPS = {"local": ("local",), "hybrid": ("local", "global"), "triplet": ("triplet",)}


def step_schedule(mode: str, batches: Sequence[np.ndarray]) -> list[tuple[str, np.ndarray]]:
    """The steps of an epoch, ``(loss, batch)``: one per batch, or in hybrid mode a local step
    and then a global step on each batch (§8: "alternating one stochastic step for each loss")."""
    return [(kind, idx) for idx in batches for kind in STEPS[mode]]


def batch_loss(
    model: torch.nn.Module,
    rt: runtime.Runtime,
    kind: str,
    idx: np.ndarray,
    statements: TokenTable,
    proofs: TokenTable,
    negatives: np.ndarray | None = None,
    margin: float = config.default("matching.specter.margin"),
) -> tuple[torch.Tensor, float]:
    """The ``kind`` loss of the global batch ``idx`` (train rows of the ``statements`` and
    ``proofs`` tables; ``negatives``: one negative proof per row, triplet only) and the batch
    accuracy of the global step's assignment (NaN for the others). ``model`` is the Matcher, or
    its DDP wrapper: each rank then encodes its share of the rows, and the scores and the loss
    are those of the whole batch on every rank."""
    mine = rt.share(idx)
    padded = [
        statements.batch(mine),
        proofs.batch(mine),
    ]  # statements, their gold proofs; each its own length
    if kind == "triplet":
        if negatives is None:
            raise ValueError("a triplet step needs one negative proof per statement")
        padded.append(proofs.batch(rt.share(negatives)))
    gather = (lambda x: rt.gather(x, len(idx))) if rt.distributed else None
    with rt.autocast():  # the groups' vectors and the statement x proof scores
        enc, M = model(padded, gather)
    if kind == "local":  # §7.1: in-batch softmax over the batch's proofs
        return local_loss(M), float("nan")
    if kind == "global":  # §7.2: structured hinge against the cost-augmented assignment
        return global_loss(M)
    if kind == "triplet":  # SPECTER: anchor, positive, negative
        return triplet_loss(enc[0], enc[1], enc[2], margin), float("nan")
    raise ValueError(f"unknown loss {kind!r}")
