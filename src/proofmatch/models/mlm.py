"""Masked language modelling on packed chunks: what one pretraining step and one validation do.

The corpus of a pretraining run (:mod:`proofmatch.models.pretrain`) is a stream of token ids:
every statement and proof of a part, tokenized with ``[CLS] ... [SEP]``, concatenated and cut
into ``max_length`` chunks (:func:`packed_chunks`), so no compute goes to padding. A training
batch's masks are drawn from the seed of its step (:func:`masked_batch`), the validation masks
once (:func:`validation_batches`), and the loss is the mean over the batch's masked tokens, also
when several processes or micro-batches share it (:func:`mlm_step`).

Why a module of its own: this is the data and the arithmetic of one step, pure functions of
their arguments; :mod:`proofmatch.models.pretrain` is the run around them (model, optimizer,
schedule, validation interval, checkpoints, the output folder).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from proofmatch.models import runtime, sampling
from proofmatch.models.tokenizer import to_text


def corpus_texts(df: pd.DataFrame) -> list[str]:
    """Statements then proofs of each pair, in row order (each one document of the stream)."""
    out: list[str] = []
    for s, p in zip(df["statement_tokens"], df["proof_tokens"]):
        out += [to_text(s), to_text(p)]
    return out


def paragraph_texts(df: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(texts, ids) of an article text table (:mod:`proofmatch.data.article_text`): each paragraph
    one document of the stream, in row order, its id ``<article_id>/<paragraph>``."""
    ids = [f"{a}/{i}" for a, i in zip(df["article_id"], df["paragraph"])]
    return [to_text(t) for t in df["tokens"]], ids


def pack(sequences: Sequence[Sequence[int]], max_length: int) -> list[list[int]]:
    """Concatenate id sequences and cut the stream into chunks of ``max_length`` (the last one
    may be shorter; the collator pads it)."""
    stream = np.fromiter((i for seq in sequences for i in seq), dtype=np.int64)
    return [stream[i : i + max_length].tolist() for i in range(0, len(stream), max_length)]


def packed_chunks(tokenizer, texts: list[str], max_length: int) -> list[list[int]]:
    ids = tokenizer(texts, add_special_tokens=True, truncation=False)["input_ids"]
    return pack(ids, max_length)


def mlm_collator(tokenizer, mlm_probability: float):
    from transformers import DataCollatorForLanguageModeling

    return DataCollatorForLanguageModeling(tokenizer, mlm=True, mlm_probability=mlm_probability)


def validation_batches(collator, chunks: list[list[int]], batch_size: int, seed: int) -> list[dict]:
    """Masked validation batches drawn once from their own seeded stream (not the training one),
    so every evaluation scores the same masked positions."""
    with sampling.forked_rng(seed + 1):
        return [
            collator([{"input_ids": c} for c in chunks[i : i + batch_size]])
            for i in range(0, len(chunks), batch_size)
        ]


@torch.no_grad()
def validation_loss(model, batches: list[dict[str, torch.Tensor]], rt: runtime.Runtime) -> float:
    """Mean MLM loss per masked token over the fixed validation batches."""
    model.eval()
    total, count = 0.0, 0
    for batch in batches:
        batch = {k: v.to(rt.device) for k, v in batch.items()}
        n = int((batch["labels"] != -100).sum())
        if n == 0:  # a short last chunk may draw no masked token: its mean loss would be NaN
            continue
        with rt.autocast():
            loss = model(**batch).loss
        total += float(loss) * n
        count += n
    model.train()
    if count == 0:
        raise ValueError("the validation batches hold no masked token; the dev part is too small")
    return total / count


def masked_batch(
    collator, chunks: list[list[int]], idx: np.ndarray, seed: int, epoch: int, step: int
) -> dict[str, torch.Tensor]:
    """The masked training batch ``idx`` of a step: its masks depend only on ``(seed, epoch,
    step)``, so every process draws the same ones and a resumed run draws them again."""
    with sampling.forked_rng(sampling.derived_seed(seed, epoch, step)):
        return collator([{"input_ids": chunks[i]} for i in idx])


def mlm_step(
    ddp, batch: dict[str, torch.Tensor], rt: runtime.Runtime, micro_batch_size: int | None
) -> float:
    """Forward and backward of this process's rows of the global ``batch``; return the batch's
    mean MLM loss per masked token (the same on every process).

    Each process's loss is its masked tokens' summed cross-entropy over the batch's number of
    masked tokens, times the number of processes (DDP averages the gradients): the gradient is
    that of the one-process mean over the whole batch, also when the batch is split unevenly or
    into micro-batches."""
    import torch.nn.functional as F

    n = len(batch["input_ids"])
    rows = torch.as_tensor(rt.share(np.arange(n)))
    mine = {k: v[rows] for k, v in batch.items()}
    mine["labels"][rt.n_real(n) :] = -100  # rows that only pad this process's share
    n_masked = max(int((batch["labels"] != -100).sum()), 1)
    step = micro_batch_size or len(rows)
    starts = range(0, len(rows), step)
    total = 0.0
    for start in starts:
        part = {k: v[start : start + step].to(rt.device) for k, v in mine.items()}
        labels = part.pop("labels")
        last = start == starts[-1]
        sync = contextlib.nullcontext() if last or not rt.distributed else ddp.no_sync()
        with sync:
            with rt.autocast():
                logits = ddp(**part).logits
            ce = F.cross_entropy(
                logits.float().flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum"
            )
            (ce * (rt.world_size / n_masked)).backward()
        total += float(ce.detach())
    return rt.all_sum(total) / n_masked
