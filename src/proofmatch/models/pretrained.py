"""A pretrained checkpoint (the MathBERT column, ``matching.mathbert``) below fine-tuning: what was
loaded, scored as it is (``zeroshot``) and with a bilinear head over its frozen vectors
(``frozen``).

* :func:`proofmatch.models.identity.identify` names the checkpoint (saved with the model, shown
  in the captions).
* ``zeroshot``: the checkpoint's pooled (by default mean, L2-normalised) vectors scored by their
  cosine (W = I, b = 0), as the theorem-proof retrieval benchmarks report a sentence encoder
  without fine-tuning.
* ``frozen``: the encoder's vectors of the train and dev parts are computed once and cached
  (``embeddings.npz`` in the run's folder, keyed by the checkpoint's digest and the encoding
  settings), and only the paper's bilinear scorer ``sᵀWp`` (§6) trains on them: in-batch softmax
  over ``cosine_scale · sᵀWp``, W from I, AdamW, ``head_epochs`` passes; dev MRR after each pass
  (epoch 0: W = I) selects the saved head. Seconds on a CPU once the vectors are cached.

Both save an ordinary :class:`proofmatch.models.matcher.Matcher` (the checkpoint's weights, the
head), so evaluation, fusion with BM25 and the search index read them as any trained run.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from proofmatch.models.identity import identify  # noqa: F401 (the module's public name too)

log = logging.getLogger(__name__)

HEAD_MODES = ("zeroshot", "frozen")  # the modes this module trains (the others: models.train)
CACHE_FILE = "embeddings.npz"
# ---------------------------------------------------------------- the head runs (torch below here)


def cache_key(matcher, pair_ids) -> str:
    """What cached vectors depend on: the checkpoint's digest, the encoding settings and the pairs."""
    cfg = matcher.config
    fields = {
        "checkpoint": (cfg.checkpoint or {}).get("sha256"),
        "view": cfg.view,
        "max_length": cfg.max_length,
        "pooling": cfg.pooling,
        "normalize": cfg.normalize,
        "plain_math": cfg.plain_math,
        "pairs": hashlib.sha256("\n".join(map(str, pair_ids)).encode()).hexdigest(),
    }
    return json.dumps(fields, sort_keys=True)


def cached_vectors(matcher, parts: dict[str, Any], path: Path, batch_size: int = 64) -> dict:
    """Statement and proof vectors of each part (``{name: DataFrame}``) as float32 arrays
    ``{f"{name}_statements": ..., f"{name}_proofs": ...}``, read from ``path`` when its key
    matches, else computed and written there (atomic, with its digest)."""
    import numpy as np

    from proofmatch.artifacts import atomic_path, verify

    ids = [pid for df in parts.values() for pid in df["pair_id"]]
    key = cache_key(matcher, ids)
    if path.exists():
        verify(path)
        with np.load(path, allow_pickle=False) as saved:
            if str(saved["key"]) == key:
                log.info("pretrained: vectors read from %s", path)
                return {k: saved[k] for k in saved.files if k != "key"}
        log.info("pretrained: %s holds other vectors; encoding again", path)
    out = {}
    for name, df in parts.items():
        for side in ("statement", "proof"):
            out[f"{name}_{side}s"] = (
                matcher.embed(list(df[f"{side}_tokens"]), batch_size, progress=True)
                .numpy()
                .astype(np.float32)
            )
    with atomic_path(path, ".npz") as tmp, open(tmp, "wb") as f:
        np.savez(f, key=np.array(key), **out)
    return out


def dev_metrics(S, P, W, scale: float, chunk_rows: int = 1024) -> dict[str, float]:
    """Local MRR and accuracy of ``scale · S W Pᵀ`` on aligned dev pairs, ties counted against
    the gold as evaluation ranks (:func:`proofmatch.scoring.fusion.gold_ranks`), by row chunks."""
    import numpy as np

    from proofmatch.scoring.fusion import gold_ranks

    A = (np.asarray(S, np.float64) @ np.asarray(W, np.float64) * scale).astype(np.float32)
    P = np.asarray(P, np.float32)
    ranks = np.concatenate(
        [
            gold_ranks(A[i : i + chunk_rows] @ P.T, np.arange(i, min(i + chunk_rows, len(A))))
            for i in range(0, len(A), chunk_rows)
        ]
    )
    return {"mrr": float(np.mean(1.0 / ranks)), "acc": float(np.mean(ranks == 1))}


def train_head(
    S, P, dev_S, dev_P, scale: float, epochs: int, learning_rate: float, batch_size: int, seed: int
):
    """The bilinear head ``W`` over frozen vectors: in-batch softmax of ``scale · S W Pᵀ`` (the
    batches of :func:`proofmatch.models.sampling.epoch_batches`), AdamW from W = I; returns the W
    with the best dev MRR (epoch 0 = I, ties keep the earlier) and one history row per epoch."""
    import torch

    threads = torch.get_num_threads()
    # The head's products are tiny (batch × d × d): intra-op threads cost more in synchronisation
    # than they save. Measured on the Stacks pairs (d 384, batch 16, 2 loaded cores): 42 s an
    # epoch with torch's threads, 0.6 s with one.
    torch.set_num_threads(1)
    try:
        return _train_head(S, P, dev_S, dev_P, scale, epochs, learning_rate, batch_size, seed)
    finally:
        torch.set_num_threads(threads)


def _train_head(S, P, dev_S, dev_P, scale, epochs, learning_rate, batch_size, seed):
    import numpy as np
    import torch
    import torch.nn.functional as F

    from proofmatch.models.sampling import epoch_batches

    S_t, P_t = torch.as_tensor(S, dtype=torch.float32), torch.as_tensor(P, dtype=torch.float32)
    d = S_t.shape[1]
    W = torch.nn.Parameter(torch.eye(d))
    opt = torch.optim.AdamW([W], lr=learning_rate, weight_decay=0.0)
    first = dev_metrics(dev_S, dev_P, np.eye(d), scale)
    best = {"epoch": 0, "mrr": first["mrr"], "acc": first["acc"]}
    best_W = np.eye(d, dtype=np.float32)
    history = [{"epoch": 0, "loss": float("nan"), "dev_mrr": first["mrr"], "dev_acc": first["acc"]}]
    for epoch in range(epochs):
        t0 = time.perf_counter()
        losses = []
        for idx in epoch_batches(len(S_t), batch_size, seed, epoch):
            i = torch.as_tensor(idx)
            scores = scale * (S_t[i] @ W) @ P_t[i].T
            loss = F.cross_entropy(scores, torch.arange(len(i)))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
        W_now = W.detach().numpy().copy()
        m = dev_metrics(dev_S, dev_P, W_now, scale)
        row = {
            "epoch": epoch + 1,
            "loss": float(np.mean(losses)) if losses else float("nan"),
            "dev_mrr": m["mrr"],
            "dev_acc": m["acc"],
            "train_seconds": time.perf_counter() - t0,
        }
        if m["mrr"] > best["mrr"] + 1e-9:
            best = {"epoch": epoch + 1, "mrr": m["mrr"], "acc": m["acc"]}
            best_W = W_now
        row["best"] = best["epoch"] == epoch + 1
        history.append(row)
    history[0]["best"] = best["epoch"] == 0
    return best_W, best, history


def fit_head(vectors, mode: str, p, d: int, scale: float, seed: int):
    """A head run's ``W`` (``d × d``), best epoch (``epoch``, ``mrr``, ``acc``) and history on the
    cached ``vectors``: the identity for ``zeroshot``, :func:`train_head` for ``frozen``."""
    import numpy as np

    if mode == "zeroshot":
        W = np.eye(d, dtype=np.float32)
        m = dev_metrics(vectors["dev_statements"], vectors["dev_proofs"], W, scale)
        best = {"epoch": 0, "mrr": m["mrr"], "acc": m["acc"]}
        history = [{"epoch": 0, "loss": float("nan"), "dev_mrr": m["mrr"], "dev_acc": m["acc"]}]
        history[0]["best"] = True
    else:
        W, best, history = train_head(
            vectors["train_statements"],
            vectors["train_proofs"],
            vectors["dev_statements"],
            vectors["dev_proofs"],
            scale,
            p.encoder.head_epochs,
            p.encoder.head_learning_rate,
            p.encoder.head_batch_size,
            seed,
        )
    return W, best, history


def _log_result(result: dict[str, Any]) -> None:
    """One line of a head run's result: its dev MRR, best epoch and times."""
    log.info(
        "%s-%s: dev MRR %.4f (epoch %d), encoding %.1f s, head %.1f s",
        result["encoder"],
        result["mode"],
        result["dev_mrr"],
        result["best_epoch"],
        result["encode_seconds"],
        result["head_seconds"],
    )


def head_run(
    data_parquet: str | os.PathLike,
    out_dir: str | os.PathLike,
    encoder: str,
    mode: str,
    view: str,
    p,
    seed: int,
    pretrained_dir: str | os.PathLike | None,
    model_dir: str = "model",
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A ``zeroshot`` or ``frozen`` run of a pretrained checkpoint: its model saved in
    ``out_dir/model_dir`` (swapped in whole), and its result (``metrics.json``'s fields) and
    history (``metrics.csv``'s rows), which :func:`proofmatch.models.train.train_run` writes with
    its curve as it does a trained run's."""
    import torch

    from proofmatch.data.splits import read_parts
    from proofmatch.models import checkpoint
    from proofmatch.models.matcher import build_matcher
    from proofmatch.models.sampling import seed_everything

    if mode not in HEAD_MODES:
        raise ValueError(f"head_run trains {HEAD_MODES}, not {mode!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seed_everything(seed, deterministic=True)
    train, dev = read_parts(data_parquet, ["train", "dev"])
    matcher = build_matcher(encoder, mode, view, p, train, None, pretrained_dir).cpu().eval()
    d = matcher.encoder.dim
    scale = matcher.config.score_scale
    t0 = time.perf_counter()
    parts = {"dev": dev} if mode == "zeroshot" else {"train": train, "dev": dev}
    vectors = cached_vectors(matcher, parts, out / CACHE_FILE)
    encode_seconds = time.perf_counter() - t0
    W, best, history = fit_head(vectors, mode, p, d, scale, seed)
    head_seconds = time.perf_counter() - t0 - encode_seconds
    with torch.no_grad():
        matcher.W.copy_(torch.as_tensor(W))
        matcher.b.zero_()
    matcher.save_pretrained(out / model_dir)
    fp = checkpoint.fingerprint(
        p, seed, train["pair_id"].tolist(), encoder=encoder, mode=mode, view=view, n_dev=len(dev)
    )
    result = {
        "encoder": encoder,
        "mode": mode,
        "view": view,
        "seed": seed,
        "epochs": 0 if mode == "zeroshot" else p.encoder.head_epochs,
        "best_epoch": best["epoch"],
        "dev_mrr": best["mrr"],
        "dev_acc": best["acc"],
        "dev_global_acc": None,
        "select_on": "dev_mrr",
        "final_loss": history[-1]["loss"],
        "n_train": len(train),
        "n_dev": len(dev),
        "n_parameters": int(sum(t.numel() for t in matcher.parameters())),
        "n_trained_parameters": 0 if mode == "zeroshot" else d * d,
        "checkpoint": matcher.config.checkpoint,
        "encode_seconds": encode_seconds,
        "head_seconds": head_seconds,
        "fingerprint": fp,
    }
    _log_result(result)
    nan = float("nan")  # the columns the training curve reads
    return result, [{"local_loss": r["loss"], "dev_global_acc": nan, **r} for r in history]
