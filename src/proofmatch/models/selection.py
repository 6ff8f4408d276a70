"""Model selection on the dev part during training: its metrics and which one picks the saved model.

Dev decoding is the evaluation stage's (:mod:`proofmatch.decoding`): local ranks with ties against
the gold, and for ``hybrid_selection: global`` the global assignment's accuracy. Under ASGD the
model is evaluated, and kept, with its averaged weights unless ``eval_weights: raw``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import torch

from proofmatch.decoding.assign import DecodeSettings, global_decode
from proofmatch.decoding.local import factor_scorer, local_decode
from proofmatch.models.matcher import Matcher
from proofmatch.models.params import EvalWeights, SelectMetric, TrainParams

SELECT_METRICS: dict[SelectMetric, str] = {"mrr": "dev_mrr", "accuracy": "dev_acc"}  # -> column
# Dev decoding during training (global accuracy, for hybrid_selection: global) uses the config's
# decode settings where the run's params carry them (config.run_matching adds them only under
# hybrid_selection: global), else the schema's (DecodeSettings' defaults).
SCHEMA_DECODE = DecodeSettings()


@torch.no_grad()
def rank_metrics(
    matcher: Matcher,
    statements: Sequence[Sequence[str]],
    proofs: Sequence[Sequence[str]],
    batch_size: int = 64,
    global_decoding: bool = False,
    decode: DecodeSettings = SCHEMA_DECODE,
) -> dict[str, float]:
    """MRR and accuracy of local decoding (:func:`proofmatch.decoding.local.local_decode`, a tie with the
    gold counts against it) of aligned statements/proofs (gold = same index); with
    ``global_decoding`` also ``global_acc`` (:func:`decoded_metrics`)."""
    scorer = factor_scorer(*matcher.factors(statements, proofs, batch_size))
    return decoded_metrics(scorer, len(statements), global_decoding, decode)


def decoded_metrics(
    scorer, n: int, global_decoding: bool = False, decode: DecodeSettings = SCHEMA_DECODE
) -> dict[str, float]:
    """Local MRR and accuracy of the score function ``scorer`` over n aligned pairs, and with
    ``global_decoding`` the accuracy of global decoding as the evaluation stage does it: exact
    ``lapjv`` on the score matrix (assembled by row-chunk matrix products) up to
    ``decode.exact_max_n`` pairs, else ``lapmod`` over the ``decode.topk``-best graph
    (:func:`proofmatch.decoding.assign.global_decode`; ``decode.seed`` places its fallback
    edges)."""
    sparse = global_decoding and n > decode.exact_max_n
    local = local_decode(scorer, n, k=decode.topk if sparse else 1, progress=False)
    out = {"mrr": local.mrr, "acc": local.acc}
    if global_decoding:
        out["global_acc"] = global_decode(scorer, local, decode.exact_max_n, decode.seed).acc
    return out


def selection_column(p: TrainParams, mode: str) -> str:
    """The ``metrics.csv`` column whose best value selects the saved model: ``dev_global_acc`` for
    a hybrid run with ``hybrid_selection: global`` (the reference's ``-G`` runs), else ``dev_mrr``
    or ``dev_acc`` (``select_metric``; :class:`TrainParams` holds known values only)."""
    if mode == "hybrid" and p.hybrid_selection == "global":
        return "dev_global_acc"
    return SELECT_METRICS[p.select_metric]


def evaluation_weights(
    optimizer: torch.optim.Optimizer, weights: EvalWeights
) -> contextlib.AbstractContextManager:
    """The weights dev evaluation reads and ``model/`` keeps: ASGD's averages (``average``; the
    parameters themselves under AdamW, and under ASGD for its first t0 steps, where the average
    is the last iterate) or the parameters themselves (``raw``, the reference code)."""
    return averaged_weights(optimizer) if weights == "average" else contextlib.nullcontext()


@contextlib.contextmanager
def averaged_weights(optimizer: torch.optim.Optimizer) -> Iterator[None]:
    """Temporarily load ASGD's averaged parameters (``ax``) into the model."""
    saved = []
    for group in optimizer.param_groups:
        for p in group["params"]:
            ax = optimizer.state.get(p, {}).get("ax")
            if ax is not None:
                saved.append((p, p.detach().clone()))
                p.data.copy_(ax)
    try:
        yield
    finally:
        for p, value in saved:
            p.data.copy_(value)
